"""Hostile input, round 3 (issue 25): the cache and the parser workers.

A cache folder that is a file, cannot be entered or listed, or is read-only is a named
condition, never an internal error; so is a size cap that is not one. A download killed midway
leaves a staging folder that the next run removes, while a live one is left alone.
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_hostile import WHEEL_NAME, QuietHandler, no_hang, offline_pip, wheel  # noqa: F401
from test_robustness import NOBODY, as_user
from typer.testing import CliRunner

from eagle3lint.cachedir import prune
from eagle3lint.cli import app
from eagle3lint.sources import wheels as download

ERA = Path(__file__).resolve().parent.parent / "fixtures" / "eras" / "e2_stub"


def run(*args: str) -> tuple[int, str, str]:
    """The command as CI runs it (output not a terminal: the run cache is used)."""
    with no_hang(60):
        result = CliRunner().invoke(app, list(args))
    assert "Traceback" not in result.output
    assert "internal error" not in result.output
    return result.exit_code, result.stdout, result.stderr


def check(tree: Path = ERA) -> tuple[int, str, str]:
    return run("check", str(tree), "--format", "json")


# -- a cache folder that cannot be used ----------------------------------------------------------
@pytest.mark.parametrize("where", ["the file", "below the file"])
def test_a_cache_path_that_is_a_file_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    blocker = tmp_path / "cache"
    blocker.write_text("")
    cache = blocker if where == "the file" else blocker / "eagle3lint"
    monkeypatch.setenv("EAGLE3LINT_CACHE_DIR", str(cache))
    exit_code, output, stderr = check()
    assert exit_code == 1 and '"targets"' in output
    assert f"cache not used: {blocker} is not a folder" in stderr
    for command in ("info", "clean"):
        exit_code, _, stderr = run("cache", command)
        assert exit_code == 2
        assert "is not a folder" in stderr
    assert blocker.read_text() == ""


def as_nobody(*args: str) -> tuple[int, str, str]:
    """`run(*args)` as another user (root may enter any folder), after a run as this one, on
    a cache of its own, has imported everything the command imports lazily."""
    import tempfile

    from eagle3lint import cachedir, trust

    with tempfile.TemporaryDirectory() as scratch:
        CliRunner().invoke(app, list(args), env={"EAGLE3LINT_CACHE_DIR": scratch})

    def as_another() -> tuple[int, str, str]:
        trust.check_folder.cache_clear()  # what this process saw as root
        cachedir._warn_once.cache_clear()
        return run(*args)

    return tuple(as_user(NOBODY, as_another))  # type: ignore[return-value]


def nobodys(path: Path, mode: int) -> Path:
    os.chown(path, NOBODY, NOBODY)
    path.chmod(mode)
    return path


@pytest.fixture
def tree(shared_tmp: Path) -> Path:
    """The era fixture where another user can read it."""
    import shutil

    copy = shared_tmp / "tree"
    shutil.copytree(ERA, copy)
    for folder, _, _ in os.walk(copy):
        os.chmod(folder, 0o755)
    return copy


def test_a_cache_folder_that_cannot_be_entered_is_not_used(
    tree: Path, shared_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    closed = shared_tmp / "closed"
    closed.mkdir(mode=0o700)  # root's: nobody cannot enter it
    monkeypatch.setenv("EAGLE3LINT_CACHE_DIR", str(closed / "cache"))
    exit_code, output, stderr = as_nobody("check", str(tree), "--format", "json")
    assert exit_code == 1 and '"targets"' in output
    assert f"cache not used: {closed / 'cache'} cannot be used as a cache folder" in stderr
    assert "Permission denied" in stderr


def filled_cache(folder: Path, mode: int) -> Path:
    """A cache of nobody's, each kind holding an entry, pruned long ago, folders in `mode`."""
    for kind in ("releases/9.9.0/vllm", "summaries/ab", "runs"):
        (folder / kind).mkdir(parents=True)
    (folder / "releases" / "9.9.0" / ".complete").write_text("{}")
    (folder / "summaries" / "ab" / "ab1.json").write_text("{}")
    (folder / "runs" / "r.json").write_text("{}")
    (folder / ".last-prune").write_text("")
    os.utime(folder / ".last-prune", (1, 1))
    for path in sorted(folder.rglob("*"), reverse=True):
        nobodys(path, mode if path.is_dir() else 0o644)
    return nobodys(folder, mode)


def test_a_cache_folder_that_cannot_be_listed_costs_only_its_pruning(
    tree: Path, shared_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = filled_cache(shared_tmp / "cache", 0o300)  # write and enter, not list
    monkeypatch.setenv("EAGLE3LINT_CACHE_DIR", str(cache))
    exit_code, output, _ = as_nobody("check", str(tree), "--format", "json")
    assert exit_code == 1 and '"targets"' in output
    for command in ("info", "clean"):
        exit_code, _, stderr = as_nobody("cache", command)
        assert exit_code == 2
        assert f"could not list {cache / 'runs'}: Permission denied" in stderr


def test_cache_clean_on_a_read_only_cache_says_what_it_could_not_remove(
    shared_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = filled_cache(shared_tmp / "cache", 0o555)
    monkeypatch.setenv("EAGLE3LINT_CACHE_DIR", str(cache))
    exit_code, output, stderr = as_nobody("cache", "clean")
    assert exit_code == 2
    assert output.startswith("removed 0 B from ")
    assert f"could not remove {cache / 'releases' / '9.9.0' / '.complete'}: Permission" in stderr
    assert (cache / "runs" / "r.json").exists() and (cache / ".last-prune").exists()


# -- the size cap ----------------------------------------------------------------------------
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-1", "abc", "1e400", "0x10"])
def test_a_cap_that_is_not_a_size_is_a_usage_error(
    value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EAGLE3LINT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("EAGLE3LINT_CACHE_MAX_MB", value)
    message = f"EAGLE3LINT_CACHE_MAX_MB={value!r} is not a cache size"
    for args in (("check", str(ERA)), ("fix", "--diff", str(ERA)), ("cache", "info")):
        exit_code, _, stderr = run(*args)
        assert exit_code == 2, args
        assert message in stderr, args
    # Without the cache, the cap does not matter.
    assert run("check", str(ERA), "--no-cache")[0] == 1


@pytest.mark.parametrize(("value", "shown"), [("0", "0 B"), ("12.5", "12.5 MB"), ("", "2.0 GB")])
def test_a_cap_in_megabytes_is_taken(
    value: str, shown: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EAGLE3LINT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("EAGLE3LINT_CACHE_MAX_MB", value)
    assert run("check", str(ERA))[0] == 1
    exit_code, output, _ = run("cache", "info")
    assert exit_code == 0 and f"(cap {shown}," in output


# -- staging folders of downloads ------------------------------------------------------------
@pytest.fixture
def held_index(tmp_path: Path) -> Iterator[tuple[str, threading.Event, threading.Event]]:
    """A PEP 503 index on 127.0.0.1 publishing a vllm 9.9.0 wheel that it sends only once
    `release` is set; `asked` is set when the wheel is asked for. Yields (URL, asked, release).
    """
    root = tmp_path / "index"
    good = wheel(root / "files" / WHEEL_NAME, "GOOD = 1\n")
    digest = hashlib.sha256(good.read_bytes()).hexdigest()
    page = root / "simple" / "vllm" / "index.html"
    page.parent.mkdir(parents=True)
    page.write_text(f'<a href="../../files/{WHEEL_NAME}#sha256={digest}">{WHEEL_NAME}</a>\n')
    asked, release = threading.Event(), threading.Event()

    class Held(QuietHandler):
        def do_GET(self) -> None:
            if self.path.endswith(".whl"):
                asked.set()
                release.wait(60)
            super().do_GET()

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Held, directory=str(root))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple", asked, release
    finally:
        release.set()
        server.shutdown()
        server.server_close()
        thread.join()


def start_download(cache: Path, index: str) -> subprocess.Popen[bytes]:
    """`fetch_release("9.9.0")` in a process of its own (and its own process group, as a run
    started from a shell is)."""
    code = "import sys; from eagle3lint.sources.wheels import fetch_release as f; "
    code += "f('9.9.0', __import__('pathlib').Path(sys.argv[1]))"
    return subprocess.Popen(
        [sys.executable, "-c", code, str(cache)],
        env={**os.environ, download.INDEX_ENV: index},
        start_new_session=True,
    )


def staging(cache: Path) -> list[Path]:
    return sorted((cache / "releases").glob(".9.9.0-*"))


def wait_for_the_wheel(asked: threading.Event, cache: Path) -> Path:
    assert asked.wait(60), "the download never asked for the wheel"
    [folder] = staging(cache)
    return folder


def test_the_staging_folder_of_a_killed_download_is_removed_by_the_next(
    held_index: tuple[str, threading.Event, threading.Event],
    offline_pip: Path,  # noqa: F811 (the fixture imported above)
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url, asked, release = held_index
    with no_hang(120):
        writer = start_download(offline_pip, url)
        dead = wait_for_the_wheel(asked, offline_pip)
        os.killpg(writer.pid, signal.SIGKILL)  # the run and its pip, as kill -9 of a job
        writer.wait()
        assert dead.is_dir()
        release.set()
        monkeypatch.setenv(download.INDEX_ENV, url)
        vllm = download.fetch_release("9.9.0", offline_pip)
    assert (vllm / "model_executor" / "models" / "llama.py").read_text() == "GOOD = 1\n"
    assert staging(offline_pip) == []


def test_pruning_removes_a_dead_runs_staging_folder_and_keeps_a_live_one(
    tmp_path: Path,
) -> None:
    releases = tmp_path / "releases"
    releases.mkdir()
    code = (
        "import os, signal, sys; from pathlib import Path; "
        "from eagle3lint.cachedir import staging_folder; "
        "cm = staging_folder(Path(sys.argv[1]), '9.9.0'); cm.__enter__(); "
        "os.kill(os.getpid(), signal.SIGKILL)"
    )
    with no_hang(60):
        subprocess.run([sys.executable, "-c", code, str(releases)], check=False)
    [dead] = staging(tmp_path)
    from eagle3lint.cachedir import remove_dead_staging, staging_folder

    with staging_folder(releases, "9.9.1") as live:
        prune(tmp_path, cap=0)
        assert live.is_dir() and not dead.exists()
        assert remove_dead_staging(releases) == []
    assert not live.exists()


def test_a_live_download_survives_pruning_and_cache_clean(
    held_index: tuple[str, threading.Event, threading.Event],
    offline_pip: Path,  # noqa: F811 (the fixture imported above)
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url, asked, release = held_index
    with no_hang(120):
        writer = start_download(offline_pip, url)
        try:
            live = wait_for_the_wheel(asked, offline_pip)
            prune(offline_pip, cap=0)
            monkeypatch.setenv("EAGLE3LINT_CACHE_DIR", str(offline_pip))
            assert run("cache", "clean")[0] == 0
            assert live.is_dir()
        finally:
            release.set()
            assert writer.wait() == 0
    assert (offline_pip / "releases" / "9.9.0" / download.COMPLETE).is_file()
    assert staging(offline_pip) == []


# -- parser workers die with the run ------------------------------------------------------------
def processes(field: int, value: int) -> list[int]:
    """The live processes whose /proc stat `field` (after the name) is `value`: 1 is the
    parent, 2 the process group."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[field]) == value and fields[0] != "Z":
                found.append(int(entry))
    return found


STOPS = {
    "SIGTERM": (signal.SIGTERM, False, "eagle3lint: terminated (SIGTERM)"),
    "Ctrl-C": (signal.SIGINT, True, "eagle3lint: interrupted"),  # a terminal signals the group
    "SIGKILL": (signal.SIGKILL, False, None),
}


@pytest.mark.parametrize("stop", sorted(STOPS))
def test_parser_workers_do_not_outlive_the_run(
    stop: str, vllm_release: Any, tmp_path: Path
) -> None:
    how, to_group, said = STOPS[stop]
    release = vllm_release("0.16.0")
    command = [sys.executable, "-m", "eagle3lint", "check", str(release), "--no-cache"]
    errors = tmp_path / "stderr"
    group = 0
    try:
        with no_hang(120), errors.open("wb") as stderr:
            # A cold check of a release (half a minute): its parses run in two workers. It
            # leads a process group of its own, which every process it starts joins.
            main = subprocess.Popen(
                [*command, "--jobs", "2", "--format", "json"],
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                start_new_session=True,
            )
            group = main.pid
            while len(processes(1, main.pid)) < 2 and main.poll() is None:
                time.sleep(0.01)
            workers = processes(1, main.pid)
            (os.killpg if to_group else os.kill)(main.pid, how)
            exit_code = main.wait()
            deadline = time.monotonic() + 30
            while processes(2, group) and time.monotonic() < deadline:
                time.sleep(0.1)
        assert len(workers) >= 2
        assert processes(2, group) == []
        if said is not None:
            assert exit_code == 2, (exit_code, errors.read_text())
            assert errors.read_text().strip() == said  # and no worker's traceback
    finally:
        if group and processes(2, group):
            os.killpg(group, signal.SIGKILL)  # what the code under test left
