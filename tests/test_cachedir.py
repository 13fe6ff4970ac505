"""Cache housekeeping: least-recently-used pruning past the cap, `cache info` and `cache clean`."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from eagle3lint.cachedir import PRUNE_EVERY, maybe_prune, prune, staging_folder
from eagle3lint.cli import app
from eagle3lint.index.cache import SummaryCache
from eagle3lint.index.model import FileSummary

ERA = Path(__file__).resolve().parent.parent / "fixtures" / "eras" / "e2_stub"


def entry(path: Path, size: int, used: float) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)
    os.utime(path, (used, used))
    return path


def test_prune_removes_least_recently_used_entries_past_the_cap(tmp_path: Path) -> None:
    old_release = tmp_path / "releases" / "0.10.0"
    entry(old_release / "vllm" / "a.py", 4000, 1000)
    entry(old_release / ".complete", 1, 1000)
    recent = entry(tmp_path / "summaries" / "ab" / "ab1.json", 3000, 3000)
    older = entry(tmp_path / "summaries" / "cd" / "cd1.json", 3000, 2000)
    run = entry(tmp_path / "runs" / "r.json", 1000, 4000)
    with staging_folder(tmp_path / "releases", "0.11.0") as downloading:  # a live download's
        in_progress = entry(downloading / "vllm" / "b.py", 9000, 1)
        assert prune(tmp_path, cap=100_000) == []  # under the cap: nothing goes
        removed = prune(tmp_path, cap=6000)
        assert [e.path for e in removed] == [old_release, older]
        assert recent.exists() and run.exists() and in_progress.exists()


def test_a_loaded_summary_counts_as_used(tmp_path: Path) -> None:
    cache = SummaryCache(tmp_path)
    cache.store("ab" * 8, FileSummary(path="m.py", module="m"))
    path = next((tmp_path / "summaries").rglob("*.json"))
    os.utime(path, (1000, 1000))
    assert cache.load("ab" * 8) is not None
    assert path.stat().st_mtime > 1000


def test_maybe_prune_runs_at_most_once_an_hour(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EAGLE3LINT_CACHE_MAX_MB", "0.001")
    first = entry(tmp_path / "runs" / "a.json", 5000, 1000)
    maybe_prune(tmp_path)
    assert not first.exists()
    second = entry(tmp_path / "runs" / "b.json", 5000, 1000)
    maybe_prune(tmp_path)
    assert second.exists()  # checked a moment ago


def test_cache_info_and_clean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EAGLE3LINT_CACHE_DIR", str(tmp_path / "cache"))
    runner = CliRunner()
    assert runner.invoke(app, ["check", str(ERA)]).exit_code == 1
    info = runner.invoke(app, ["cache", "info"])
    assert info.exit_code == 0
    assert str(tmp_path / "cache") in info.stdout
    [summaries] = [line.split() for line in info.stdout.splitlines() if "summaries" in line]
    assert int(summaries[1]) > 0
    # What a requirement resolved to goes too: the next check resolves it afresh.
    resolved = entry(tmp_path / "cache" / "releases" / "transformers-resolved.json", 10, 1000)
    clean = runner.invoke(app, ["cache", "clean"])
    assert clean.exit_code == 0 and clean.stdout.startswith("removed ")
    assert not (tmp_path / "cache" / "summaries").exists()
    assert not resolved.exists()


def test_prune_removes_temporary_files_killed_runs_left(tmp_path: Path) -> None:
    """A run killed while writing a cache entry leaves `.NAME.RANDOM.eagle3lint`: pruning removes
    those older than an hour, never one a live run may still be writing."""
    folder = tmp_path / "summaries" / "ab"
    folder.mkdir(parents=True)
    old = folder / ".abcd.json.1234abcd.eagle3lint"
    fresh = folder / ".abce.json.5678abcd.eagle3lint"
    entry = folder / "abcd.json"
    for path in (old, fresh, entry):
        path.write_text("{}")
    hours_ago = time.time() - 2 * PRUNE_EVERY
    os.utime(old, (hours_ago, hours_ago))
    os.utime(entry, (hours_ago, hours_ago))
    prune(tmp_path, cap=10**9)
    assert not old.exists()
    assert fresh.exists() and entry.exists()
