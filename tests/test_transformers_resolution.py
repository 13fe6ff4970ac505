"""Which transformers a check reads (issue 52, item 1): the one installed beside the tree, else
the release the tree's own requirement resolves to, else none; never this interpreter's.

Network-free: the package index is replaced, and the resolved release is put in a cache of the
test's own, as a fetch would have left it (`sources.wheels.fetch_release`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from test_transformers_backend import AUTO, check, modeling, write_site
from typer.testing import CliRunner

from eagle3lint.cli import app
from eagle3lint.errors import DownloadError, UsageError
from eagle3lint.index.libraries import kept
from eagle3lint.sources import dependency_release, wheels
from eagle3lint.sources.requirements import required
from eagle3lint.sources.wheel_metadata import RECORD_KEY
from eagle3lint.sources.wheels import COMPLETE

METADATA = """\
Metadata-Version: 2.4
Name: vllm
Version: 9.9.0
Requires-Dist: regex
Requires-Dist: transformers[torch]>=9.0; extra == "bench"
Requires-Dist: transformers<5.21.0,>=5.16.1
Requires-Dist: tokenizers>=0.21.1

vLLM's README, which may say Requires-Dist: transformers==1.0 in its text.
"""


def read(path: Path) -> str | None:
    return path.read_text() if path.is_file() else None


def test_a_release_requires_what_its_wheel_metadata_says(tmp_path: Path) -> None:
    (tmp_path / "vllm-9.9.0.dist-info").mkdir()
    (tmp_path / "vllm-9.9.0.dist-info" / "METADATA").write_text(METADATA)
    found = required(tmp_path, "vllm", "transformers", read)
    assert found is not None
    # Not the one of an extra, nor words of the README.
    assert (str(found.requirement), found.where) == (
        "transformers<5.21.0,>=5.16.1",
        "vllm==9.9.0",
    )


@pytest.mark.parametrize("name", ["requirements/common.txt", "requirements-common.txt"])
def test_a_checkout_requires_what_its_requirement_file_says(tmp_path: Path, name: str) -> None:
    (tmp_path / name).parent.mkdir(exist_ok=True)
    (tmp_path / name).write_text(
        "-r cuda.txt\n# transformers==1.0 is too old\nregex\n"
        "transformers >= 4.56.0, < 5  # Required for Qwen3\n"
    )
    found = required(tmp_path, "vllm", "transformers", read)
    assert found is not None
    assert (str(found.requirement), found.where) == (
        "transformers<5,>=4.56.0",
        f"the checkout's {name}",
    )


def test_a_plain_folder_requires_nothing(tmp_path: Path) -> None:
    assert required(tmp_path, "vllm", "transformers", read) is None


def index_with(
    monkeypatch: pytest.MonkeyPatch, versions: list[str], asked: list[str] | None = None
) -> None:
    def releases(cache_root: Path | None, package: str, hint: str | None = None) -> list[str]:
        if asked is not None:
            asked.append(package)
        return versions

    monkeypatch.setattr(dependency_release, "indexed_releases", releases)


def test_the_newest_matching_release_is_resolved_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[str] = []
    index_with(monkeypatch, ["5.16.0", "5.16.1", "5.20.2", "5.21.0", "6.0.0"], asked)
    requirement = Requirement("transformers<5.21.0,>=5.16.1")
    assert dependency_release.resolve(requirement, "vllm==9.9.0", tmp_path) == "5.20.2"
    # Recorded: a newer release published since does not change what the release reads.
    index_with(monkeypatch, ["5.20.2", "5.20.3"], asked)
    assert dependency_release.resolve(requirement, "vllm==9.9.0", tmp_path) == "5.20.2"
    assert asked == ["transformers"]
    record = dependency_release.record_path("transformers", tmp_path)
    assert json.loads(record.read_text()) == {"<5.21.0,>=5.16.1": "5.20.2"}


def test_no_matching_release_is_a_download_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index_with(monkeypatch, ["4.57.6"])
    with pytest.raises(DownloadError, match=r"no release of transformers .* matches vllm==9\.9\.0"):
        dependency_release.resolve(Requirement("transformers>=5"), "vllm==9.9.0", tmp_path)


def test_only_the_modules_the_index_reads_are_kept_of_models() -> None:
    assert kept("transformers/__init__.py")
    assert kept("transformers/utils/output_capturing.py")  # the backend imports it
    assert kept("transformers/models/auto/modeling_auto.py")
    assert kept("transformers/models/llama/configuration_llama.py")
    assert kept("transformers/models/llama/__init__.py")
    assert not kept("transformers/models/llama/tokenization_llama.py")
    assert not kept("transformers/models/llama/modular_llama.py")
    assert not kept("transformers/models/llama/convert_llama_weights_to_hf.py")


def released_tree(root: Path, cache: Path, *, resolved: bool = True) -> Path:
    """The backend tree of test_transformers_backend as a release's cache folder holds it (the
    wheel's METADATA beside it, requiring transformers==5.20.0), and, in `cache`, that
    transformers release as a fetch leaves it (with what the requirement resolved to)."""
    vllm = write_site(root, with_transformers=False)
    (root / "vllm-9.9.0.dist-info").mkdir()
    (root / "vllm-9.9.0.dist-info" / "METADATA").write_text(
        "Name: vllm\nVersion: 9.9.0\nRequires-Dist: transformers==5.20.0\n"
    )
    if not resolved:
        return vllm
    release = cache / "releases" / "transformers-5.20.0"
    for rel, text in {
        "transformers/__init__.py": "",
        "transformers/models/auto/modeling_auto.py": AUTO,
        "transformers/models/wordy/modeling_wordy.py": modeling("Wordy", "embed_tokens"),
        "transformers/models/wte/modeling_wte.py": modeling("Wte", "wte"),
        ".complete": json.dumps({"version": "5.20.0", "wheel": "0" * 64, RECORD_KEY: None}),
    }.items():
        (release / rel).parent.mkdir(parents=True, exist_ok=True)
        (release / rel).write_text(text)
    record = dependency_release.record_path("transformers", cache)
    record.write_text(json.dumps({"==5.20.0": "5.20.0"}))
    return vllm


def test_a_release_tree_reads_the_transformers_its_requirement_resolves_to(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("EAGLE3LINT_CACHE_DIR", str(cache))
    tree = released_tree(tmp_path / "site", cache)
    targets = check(str(tree), "--require", "*")
    assert targets["WordyForCausalLM"]["eagle3_ready"] is True
    assert targets["WteForCausalLM"]["eagle3_ready"] is False
    result = CliRunner().invoke(app, ["check", str(tree), "--format", "json", "--no-cache"])
    assert json.loads(result.stdout)["vllm"]["transformers"] == {
        "version": "5.20.0",
        "source": "resolved from vllm==9.9.0's requirement 'transformers==5.20.0'",
    }


def test_transformers_installed_beside_the_tree_is_named_so(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["check", str(write_site(tmp_path)), "--format", "json", "--no-cache"]
    )
    assert json.loads(result.stdout)["vllm"]["transformers"] == {
        "version": None,  # no metadata folder beside it
        "source": "installed beside vllm",
    }


def test_an_unreachable_index_is_a_named_error_with_exit_code_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("EAGLE3LINT_CACHE_DIR", str(cache))
    tree = released_tree(tmp_path / "site", cache, resolved=False)

    def offline(cache_root: Path | None, package: str, hint: str | None = None) -> list[str]:
        raise UsageError(f"could not list {package} releases from the package index; {hint}")

    monkeypatch.setattr(dependency_release, "indexed_releases", offline)
    result = CliRunner().invoke(app, ["check", str(tree), "--format", "json", "--no-cache"])
    assert result.exit_code == 2
    assert "could not list transformers releases from the package index" in result.output
    assert "vllm==9.9.0 requires transformers==5.20.0" in result.output
    assert "Traceback" not in result.output


def test_a_release_cached_without_its_metadata_fetches_it_once_and_says_so_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A release an older eagle3lint cached has no METADATA beside it: its wheel is fetched
    again for it, and offline that is a named error, not a verdict without transformers."""
    release = tmp_path / "releases" / "9.9.0"
    (release / "vllm").mkdir(parents=True)
    (release / COMPLETE).write_text(json.dumps({"version": "9.9.0", "wheel": "0" * 64}))

    def offline(version: str, into: Path, progress: bool, package: str) -> None:
        raise DownloadError(f"could not download {package}=={version}: offline")

    monkeypatch.setattr(wheels, "_download", offline)
    with pytest.raises(DownloadError, match="was cached without its wheel's METADATA") as caught:
        wheels.fetch_release("9.9.0", tmp_path)
    assert "could not download vllm==9.9.0: offline" in str(caught.value)
