"""Issue 32: a long analysis shows `analysing 120/366 files` with a bar on a terminal, the total
being the files the index has said it will load (it grows as resolving classes reaches further
files, and is never below the count), the count alone while nothing is known, and nothing at
all when stderr is not a terminal."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from eagle3lint.cli import app
from eagle3lint.engine import CheckOptions, run_check
from eagle3lint.report import progress
from eagle3lint.report.progress import SHOW_AFTER, FileProgress
from eagle3lint.report.terminal import Terminal

ERA = Path(__file__).resolve().parent.parent / "fixtures" / "eras" / "e2_stub"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
COUNTS = re.compile(r"analysing (\d+)/(\d+) files")
TERMINAL = Terminal(color=True, width=100)


@pytest.fixture
def stderr(capsys: pytest.CaptureFixture[str]) -> Callable[[], str]:
    """What the progress line has written to stderr so far."""
    return lambda: capsys.readouterr().err


def plain(drawn: str) -> str:
    return ANSI.sub("", drawn).replace("\r", "\n")


def test_the_line_shows_files_done_of_the_total_with_a_bar(stderr: Callable[[], str]) -> None:
    with FileProgress(True, TERMINAL) as files:
        files.expect(40)
        for _ in range(30):
            files()
    drawn = stderr()
    shown = plain(drawn)
    assert "analysing 30/40 files" in shown
    assert "━" in shown  # the bar
    assert drawn.endswith("\x1b[2K")  # removed before the report is printed


def test_a_terminal_without_colour_still_gets_the_line(stderr: Callable[[], str]) -> None:
    """NO_COLOR and --color never take the colour away, not the line."""
    with FileProgress(True, Terminal(color=False, width=100)) as files:
        files.expect(40)
        for _ in range(30):
            files()
    drawn = stderr()
    assert "analysing 30/40 files" in plain(drawn)
    assert not re.search(r"\x1b\[[0-9;]*m", drawn)  # cursor moves only, no colour


def test_without_a_total_the_line_counts_alone(stderr: Callable[[], str]) -> None:
    with FileProgress(True, TERMINAL) as files:
        for _ in range(30):
            files.advance()
    shown = plain(stderr())
    assert "analysing 30 files" in shown
    assert "/" not in shown and "━" not in shown  # no total, no bar: nothing invented


def test_a_count_past_the_total_announced_drops_the_total(stderr: Callable[[], str]) -> None:
    with FileProgress(True, TERMINAL) as files:
        files.expect(26)
        for _ in range(30):
            files()
    shown = plain(stderr())
    assert "analysing 30 files" in shown and "30/26" not in shown


@pytest.mark.parametrize("enabled, files", [(False, 100), (True, SHOW_AFTER - 1)])
def test_nothing_is_drawn_when_off_or_for_a_few_files(
    stderr: Callable[[], str], enabled: bool, files: int
) -> None:
    with FileProgress(enabled, TERMINAL) as counting:
        counting.expect(files)
        for _ in range(files):
            counting()
    assert stderr() == ""
    assert counting.count == files


class Recorder:
    """A load hook that notes the count and the total the index announced at every file."""

    def __init__(self) -> None:
        self.total = 0
        self.seen: list[tuple[int, int]] = []

    def __call__(self) -> None:
        self.seen.append((len(self.seen) + 1, self.total))

    def expect(self, files: int) -> None:
        self.total += files


@pytest.mark.parametrize("use_cache", [False, True])
def test_the_index_announces_every_file_before_it_loads_it(use_cache: bool) -> None:
    recorder = Recorder()
    options = CheckOptions(paths=[ERA], use_cache=use_cache, jobs=1)
    options.on_file = recorder
    run = run_check(options)
    assert all(done <= total for done, total in recorder.seen), recorder.seen
    assert len(recorder.seen) == recorder.total == run.report.files_analysed > 1


def test_a_check_draws_done_of_total_ending_at_the_files_analysed(
    stderr: Callable[[], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(progress, "SHOW_AFTER", 1)  # the fixture tree has fewer files
    options = CheckOptions(paths=[ERA], jobs=1)
    with FileProgress(True, TERMINAL) as files:
        options.on_file = files
        report = run_check(options).report
    counts = [(int(d), int(t)) for d, t in COUNTS.findall(plain(stderr()))]
    assert counts and all(done <= total for done, total in counts), counts
    assert counts[-1] == (report.files_analysed, report.files_analysed)


def test_a_check_not_on_a_terminal_draws_no_progress() -> None:
    result = CliRunner().invoke(app, ["check", str(ERA), "--no-cache", "--format", "json"])
    assert result.exit_code in (0, 1), result.output
    assert "analysing" not in result.stderr and "\x1b" not in result.output
