"""`--vllm X.Y.Z` failures say what happened: a version the index lacks, or offline."""

from __future__ import annotations

import io
import json
from typing import ClassVar

import pytest
from typer.testing import CliRunner

from eagle3lint.cli import app
from eagle3lint.sources import wheels as download
from eagle3lint.sources.download_errors import download_failure, not_on_index

NO_SUCH_VERSION = """\
ERROR: Could not find a version that satisfies the requirement vllm==9.9.9 (from versions: \
0.0.1, 0.9.2, 0.10.0, 0.16.0, 0.17.0rc1, 0.33.0)
ERROR: No matching distribution found for vllm==9.9.9
"""
OFFLINE = """\
WARNING: Retrying (Retry(total=0, connect=None, read=None, redirect=None, status=None)) after \
connection broken by 'NewConnectionError('<pip._vendor.urllib3.connection.HTTPSConnection>: \
Failed to establish a new connection: [Errno -3] Temporary failure in name resolution')'
ERROR: Could not find a version that satisfies the requirement vllm==0.16.0 (from versions: none)
ERROR: No matching distribution found for vllm==0.16.0
"""


def test_a_version_the_index_lacks_names_the_newest() -> None:
    message = download_failure("9.9.9", NO_SUCH_VERSION)
    assert (
        message
        == "vLLM 9.9.9 is not on PyPI (the index answered; the newest release there is 0.33.0)"
    )


@pytest.mark.parametrize(
    ("given", "hint"),
    [("0.16", ": did you mean 0.16.0, 0.16.1?"), ("0", ": did you mean 0.16.0, 0.16.1, 0.33.0?")],
)
def test_an_abbreviated_version_names_the_releases_it_abbreviates(given: str, hint: str) -> None:
    # `--vllm 0.16` said only that 0.16 is not on PyPI.
    message = not_on_index(given, ["0.15.1", "0.16.0", "0.16.1", "0.33.0", "0.16.0rc1"])
    assert message.endswith(f"the newest release there is 0.33.0){hint}")
    assert not not_on_index("9.9.9", ["0.16.0"]).endswith("?")


def test_offline_says_offline_not_missing() -> None:
    message = download_failure("0.16.0", OFFLINE)
    assert "offline" in message and "not on PyPI" not in message


def test_other_failures_keep_pips_last_line() -> None:
    assert download_failure("0.16.0", "ERROR: disk full\n").endswith("ERROR: disk full")


@pytest.mark.release  # asks the real package index
def test_the_real_index_answers_for_a_missing_version() -> None:
    result = CliRunner().invoke(app, ["check", "--vllm", "9.9.9"])
    assert result.exit_code == 2
    assert "vLLM 9.9.9 is not on PyPI (the index answered; the newest release there is" in (
        result.output
    )


class _Page(io.BytesIO):
    """What `urllib.request.urlopen` returns for a PEP 691 JSON index page."""

    headers: ClassVar[dict[str, str]] = {"Content-Type": "application/vnd.pypi.simple.v1+json"}

    def geturl(self) -> str:
        return "https://index.example/simple/vllm/"


def test_the_wheel_size_the_index_publishes_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 31: the download spinner says how large the wheel is (PEP 700's `size`)."""
    name = "vllm-9.9.0-cp38-abi3-manylinux_2_28_x86_64.whl"
    files = [{"filename": name, "url": f"../../files/{name}", "hashes": {"sha256": "a" * 64}}]
    sized = [{**files[0], "size": 239_039_932}]
    for listed, size in ((files, None), (sized, 239_039_932)):
        page = json.dumps({"files": listed}).encode()
        monkeypatch.setattr(
            download.urllib.request, "urlopen", lambda *_, page=page, **__: _Page(page)
        )
        wheel = download.published_wheels("9.9.0", "https://index.example/simple")[name]
        assert wheel == download.Wheel(f"https://index.example/files/{name}", "a" * 64, size)
