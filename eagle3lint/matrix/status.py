"""The terminal's view of a running matrix: one line per release, drawn on stderr."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console, RenderableType
from rich.progress import Progress, SpinnerColumn, Task, TaskID, TextColumn
from rich.text import Text

from eagle3lint.report.escape import printable


class _Mark(SpinnerColumn):
    """A spinner for releases being checked, a dot for those still waiting, ✓ when done."""

    def render(self, task: Task) -> RenderableType:
        return super().render(task) if task.started else Text("·", style="dim")


class ReleaseProgress:
    """A line per release (waiting, downloading, analysing N files, done with its counts);
    removed when the block ends. Does nothing when disabled (not a terminal)."""

    def __init__(self, specs: list[str], enabled: bool) -> None:
        self.enabled = enabled
        self._started: dict[int, float] = {}
        self._progress: Progress | None = None
        self._tasks: list[TaskID] = []
        if enabled:
            console = Console(stderr=True, no_color=bool(os.environ.get("NO_COLOR")))
            self._progress = Progress(
                _Mark(finished_text="[green]✓[/]"),
                # A release is named as given (a path): no markup read in it.
                TextColumn("{task.description:>10}", style="bold", markup=False),
                TextColumn("{task.fields[state]}"),
                console=console,
                transient=True,
            )
            self._tasks = [
                self._progress.add_task(
                    printable(spec), start=False, total=1, state="[dim]waiting[/]"
                )
                for spec in specs
            ]

    def event(self, event: tuple[int, str, int]) -> None:
        """A worker's news: (release number, state, files analysed so far)."""
        number, state, files = event
        if self._progress is None:
            return
        if number not in self._started:
            self._started[number] = time.monotonic()
            self._progress.start_task(self._tasks[number])
        text = f"analysing {files} files" if files else state
        self._progress.update(self._tasks[number], state=text)

    def done(self, number: int, report: dict[str, Any]) -> None:
        if self._progress is None:
            return
        seconds = time.monotonic() - self._started.get(number, time.monotonic())
        summary = report.get("summary", {})
        state = f"{summary.get('ready', 0)} ready of {summary.get('targets', 0)}"
        if report.get("errors") and not report.get("targets"):
            state = "[bold magenta]could not be checked[/]"
        self._progress.update(
            self._tasks[number], completed=1, state=f"{state} [dim]{seconds:.1f}s[/]"
        )

    @contextmanager
    def shown(self) -> Iterator[ReleaseProgress]:
        """The lines on screen while the block runs, gone after it."""
        if self._progress is None:
            yield self
            return
        with self._progress:
            yield self
