"""Issue 32: `--vllm X.Y.Z` shows the download's bytes done of the published size, its rate and
the time left on a terminal, and nothing when stderr is not one; the wheel is still the
published one, pinned by its sha256, whatever is drawn.

The index is a local HTTP server that sends a 2 MB wheel slowly enough for the line to be
drawn part done; the command runs in a process of its own with stderr on a pseudo-terminal.
"""

from __future__ import annotations

import fcntl
import hashlib
import http.server
import io
import json
import os
import pty
import random
import re
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console
from test_hostile import (  # noqa: F401 (fixtures)
    GOOD_MODEL,
    TAMPERED_MODEL,
    WHEEL_NAME,
    no_hang,
    offline_pip,
    wheel,
)

from eagle3lint.sources import wheels as download
from eagle3lint.sources.download_line import DownloadLine, largest_file

PIECE = 64 * 1024
PAUSE = 0.04
"""The slow index sends the wheel `PIECE` bytes at a time, `PAUSE` seconds apart: 2 MB in
about 1.3 s, some ten frames of the line."""

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
PART_DONE = re.compile(r"(\d+\.\d)/(\d+\.\d) MB")
RATE = re.compile(r"\d+(\.\d+)? [kMG]?B/s")


def plain(drawn: str) -> str:
    """What a terminal shows of `drawn`, frames one after another (cursor moves dropped)."""
    return ANSI.sub("", drawn).replace("\r", "\n")


# -- the line itself ------------------------------------------------------------------------
def draw(folder: Path, total: int | None, *, terminal: bool) -> str:
    """What the line writes while a file below `folder` grows to 1 and then 1.5 MB of `total`."""
    partial = folder / "pip-unpack-x" / WHEEL_NAME
    partial.parent.mkdir(parents=True, exist_ok=True)
    partial.write_bytes(b"")
    out = io.StringIO()
    console = Console(file=out, force_terminal=terminal, width=100)
    with DownloadLine("Downloading vllm==0.16.0", total, [folder], console):
        for size in (1_000_000, 1_500_000):
            with open(partial, "ab") as growing:
                growing.write(b"x" * (size - partial.stat().st_size))
            time.sleep(0.3)  # a few looks at the file: the rate is measured between them
    return out.getvalue()


def test_the_line_shows_bytes_of_the_total_the_rate_and_the_time_left(tmp_path: Path) -> None:
    shown = plain(draw(tmp_path, 3_000_000, terminal=True))
    assert "Downloading vllm==0.16.0" in shown
    assert "1.0/3.0 MB" in shown and "1.5/3.0 MB" in shown
    assert RATE.search(shown), shown
    assert re.search(r"B/s\s+0:00:\d\d", shown), shown  # the time left


def test_without_a_published_size_the_total_is_unknown_not_invented(tmp_path: Path) -> None:
    shown = plain(draw(tmp_path, None, terminal=True))
    assert "1.5/? MB" in shown
    assert RATE.search(shown), shown


def test_the_line_is_removed_when_the_download_ends(tmp_path: Path) -> None:
    drawn = draw(tmp_path, 3_000_000, terminal=True)
    # The last frame is erased: the cursor goes back up over it and the line is cleared.
    assert drawn.endswith("\x1b[2K"), repr(drawn[-40:])


def test_a_stream_that_is_not_a_terminal_gets_nothing(tmp_path: Path) -> None:
    assert draw(tmp_path, 3_000_000, terminal=False) == ""


def test_more_bytes_than_published_do_not_overrun_the_line(tmp_path: Path) -> None:
    """The hash check refuses such a file after; meanwhile the line says no more than the total."""
    out = io.StringIO()
    (tmp_path / "big").write_bytes(b"x" * 5_000_000)
    console = Console(file=out, force_terminal=True, width=100)
    with DownloadLine("x", 1_000_000, [tmp_path], console):
        pass
    assert "1.0/1.0 MB" in plain(out.getvalue())


# -- the download, end to end ---------------------------------------------------------------
@pytest.fixture
def slow_index(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A PEP 691 JSON index on 127.0.0.1 publishing a 2 MB vllm 9.9.0 wheel with its sha256 and
    its size (PEP 700), the wheel sent slowly (`PIECE`, `PAUSE`). Yields its URL and the wheel
    (a test may swap the file served)."""
    blob = random.Random(32).randbytes(2_000_000)  # incompressible: the wheel stays 2 MB
    served = wheel(tmp_path / "served" / WHEEL_NAME, GOOD_MODEL, {"vllm-9.9.0.data/blob": blob})
    data = served.read_bytes()
    page = json.dumps(
        {
            "meta": {"api-version": "1.1"},
            "name": "vllm",
            "files": [
                {
                    "filename": WHEEL_NAME,
                    "url": f"../../files/{WHEEL_NAME}",
                    "hashes": {"sha256": hashlib.sha256(data).hexdigest()},
                    "size": len(data),
                }
            ],
        }
    ).encode()

    class Slow(http.server.BaseHTTPRequestHandler):
        def log_message(self, *_: object) -> None:
            pass

        def do_GET(self) -> None:
            if self.path == "/simple/vllm/":
                body, kind, pause = page, "application/vnd.pypi.simple.v1+json", 0.0
            elif self.path == f"/files/{WHEEL_NAME}":
                body, kind, pause = served.read_bytes(), "application/octet-stream", PAUSE
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            for start in range(0, len(body), PIECE):
                self.wfile.write(body[start : start + PIECE])
                self.wfile.flush()
                time.sleep(pause)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Slow)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple", served
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def command_env(index_url: str) -> dict[str, str]:
    """The environment of `eagle3lint check --vllm 9.9.0` against `index_url`: a terminal rich
    draws on as on any other, and no pip HTTP cache (the wheel is sent each time)."""
    env = {**os.environ, download.INDEX_ENV: index_url, "TERM": "xterm", "PIP_NO_CACHE_DIR": "1"}
    for name in ("COLUMNS", "LINES", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        env.pop(name, None)
    return env


CHECK = [sys.executable, "-m", "eagle3lint", "check", "--vllm", "9.9.0", "--format", "json"]


def run_with_stderr_on_a_terminal(env: dict[str, str], cwd: Path) -> tuple[int, str, str]:
    """`CHECK`'s exit code, stdout (a file) and what its stderr, a 100-column pseudo-terminal,
    received."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    with tempfile.TemporaryFile() as out:
        process = subprocess.Popen(
            CHECK, stdin=subprocess.DEVNULL, stdout=out, stderr=follower, env=env, cwd=cwd
        )
        os.close(follower)
        received = bytearray()
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: every process writing to the terminal has exited
                break
            if not chunk:
                break
            received += chunk
        os.close(leader)
        code = process.wait(60)
        out.seek(0)
        return code, out.read().decode(), received.decode("utf-8", "replace")


def test_a_download_on_a_terminal_shows_bytes_total_and_rate(
    slow_index: tuple[str, Path],
    offline_pip: Path,  # noqa: F811 (the fixture imported above)
    tmp_path: Path,
) -> None:
    url, served = slow_index
    with no_hang(120):
        code, stdout, drawn = run_with_stderr_on_a_terminal(command_env(url), tmp_path)
    shown = plain(drawn)
    assert "Traceback" not in shown, shown
    assert code == 2, stdout  # the tiny release registers no architecture (EAG902)
    assert "Downloading vllm==9.9.0" in shown
    total = f"{served.stat().st_size / 1e6:.1f}"
    seen = PART_DONE.findall(shown)
    assert seen and {t for _, t in seen} == {total}, shown
    # Drawn while pip was still writing the file, not only once it was whole.
    assert any(float(done) < float(total) for done, _ in seen), shown
    assert RATE.search(shown), shown
    assert drawn.rstrip().endswith("\x1b[2K")  # removed before the report
    assert "\x1b" not in stdout and "Downloading" not in stdout
    assert json.loads(stdout)["vllm"]["contract_source"] == "vllm==9.9.0"  # the report
    assert (offline_pip / "releases" / "9.9.0" / download.COMPLETE).is_file()


def test_a_download_not_on_a_terminal_draws_nothing(
    slow_index: tuple[str, Path],
    offline_pip: Path,  # noqa: F811 (the fixture imported above)
    tmp_path: Path,
) -> None:
    url, _ = slow_index
    result = subprocess.run(
        CHECK,
        env=command_env(url),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "Traceback" not in result.stderr
    assert result.stderr == ""
    assert "\x1b" not in result.stdout
    assert (offline_pip / "releases" / "9.9.0" / download.COMPLETE).is_file()


def test_the_digest_is_checked_with_the_progress_line_drawn(
    slow_index: tuple[str, Path],
    offline_pip: Path,  # noqa: F811 (the fixture imported above)
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The line only looks at the file: a wheel other than the published one is refused as
    without it, with the same words, and nothing of it is kept."""
    url, served = slow_index
    wheel(served, TAMPERED_MODEL)  # the index now serves another file under the same name
    monkeypatch.setenv(download.INDEX_ENV, url)
    with pytest.raises(download.DownloadError, match="is not the wheel the index publishes"):
        download.fetch_release("9.9.0", offline_pip, progress=True)
    assert not (offline_pip / "releases" / "9.9.0").exists()
    assert list((offline_pip / "releases").iterdir()) == []  # no staging folder left


def test_pips_temporary_files_stay_in_the_staging_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pip writes its partial download in its temporary folder: one inside the staging
    folder, so the line can watch it and a killed run's leftovers go with that folder."""
    envs: list[dict[str, str]] = []

    def fake_run(command: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        env = kwargs["env"]
        assert isinstance(env, dict)
        envs.append(env)
        assert Path(env["TMPDIR"]).is_dir()
        return subprocess.CompletedProcess(command, 1, "", "ERROR: disk full")

    wheel_name = "vllm-0.16.0-cp38-abi3-manylinux_2_31_x86_64.whl"
    published = {wheel_name: download.Wheel(f"https://files.example/{wheel_name}", "0" * 64)}
    monkeypatch.setattr(download, "published_wheels", lambda version, index, package: published)
    monkeypatch.setattr(download.subprocess, "run", fake_run)
    with pytest.raises(download.DownloadError, match="disk full"):
        download.fetch_release("0.16.0", cache_root=tmp_path, progress=True)
    (env,) = envs
    staging = Path(env["TMPDIR"]).relative_to(tmp_path / "releases")
    assert staging.parts[0].startswith(".0.16.0-")
    assert {k: v for k, v in env.items() if k != "TMPDIR"} == {
        k: v for k, v in os.environ.items() if k != "TMPDIR"
    }


def test_the_largest_file_is_measured_without_following_links(tmp_path: Path) -> None:
    watched = tmp_path / "watched"
    (watched / "pip-unpack-x").mkdir(parents=True)
    (watched / "pip-unpack-x" / WHEEL_NAME).write_bytes(b"x" * 1000)
    (watched / "small").write_bytes(b"x" * 10)
    (tmp_path / "big").write_bytes(b"x" * 5000)
    (watched / "link").symlink_to(tmp_path / "big")
    assert largest_file([watched, tmp_path / "gone"]) == 1000
