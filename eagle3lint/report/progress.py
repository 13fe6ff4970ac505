"""A transient progress line on the terminal while many files are analysed."""

from __future__ import annotations

import sys
from types import TracebackType

from rich.progress import Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn

from eagle3lint.report.terminal import Terminal

SHOW_AFTER = 25
"""Files analysed before the line appears: a run on a few files finishes without a flicker."""


class FileProgress:
    """Counts analysed files and, when enabled, shows the count on stderr past `SHOW_AFTER`.

    Use as a context manager and pass `advance` as the index's load hook; the line is removed
    when the block ends, before the report is printed.
    """

    def __init__(self, enabled: bool, terminal: Terminal) -> None:
        self.enabled = enabled
        self.terminal = terminal
        self.count = 0
        self._progress: Progress | None = None
        self._task: TaskID | None = None

    def advance(self) -> None:
        self.count += 1
        if not self.enabled or self.count < SHOW_AFTER:
            return
        if self._progress is None:
            console = self.terminal.console(sys.stderr)
            self._progress = Progress(
                SpinnerColumn(),
                TextColumn("analysing {task.completed} files"),
                TimeElapsedColumn(),
                console=console,
                transient=True,
            )
            self._task = self._progress.add_task("analyse", total=None)
            self._progress.start()
        if self._task is not None:
            self._progress.update(self._task, completed=self.count)

    def __enter__(self) -> FileProgress:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
