"""A transient progress line on the terminal while many files are analysed."""

from __future__ import annotations

import sys
from types import TracebackType

from rich.console import Console, RenderableType
from rich.progress import Progress, ProgressColumn, SpinnerColumn, Task, TaskID, TimeElapsedColumn
from rich.progress_bar import ProgressBar
from rich.text import Text

from eagle3lint.report.terminal import Terminal

SHOW_AFTER = 25
"""Files analysed before the line appears: a run on a few files finishes without a flicker."""


class _FilesCount(ProgressColumn):
    """`analysing 120/366 files`, or `analysing 120 files` while no total is known."""

    def render(self, task: Task) -> Text:
        done, known = int(task.completed), task.fields.get("known")
        of = f"/{known}" if known is not None else ""
        return Text(f"analysing {done}{of} files")


class _FilesBar(ProgressColumn):
    """A bar only against a known total: a pulsing one would claim more than is known."""

    def render(self, task: Task) -> RenderableType:
        known = task.fields.get("known")
        if known is None:
            return Text("")
        return ProgressBar(
            total=known, completed=task.completed, width=30, animation_time=task.get_time()
        )


class FileProgress:
    """Counts analysed files and, when enabled, shows the count on stderr past `SHOW_AFTER`.

    Use as a context manager and pass the object itself as the index's load hook: the index
    calls it once per file loaded, and `expect` with the files each of its loads is about to
    read (`ProjectIndex.on_load`). The total grows as resolving classes reaches further files,
    so it is what the run knows it will read so far, never a guess. The line is removed when
    the block ends, before the report is printed.
    """

    def __init__(self, enabled: bool, terminal: Terminal) -> None:
        self.enabled = enabled
        self.terminal = terminal
        self.count = 0
        self.total: int | None = None
        """Files the index has said it will load; None while it has said nothing."""
        self._progress: Progress | None = None
        self._task: TaskID | None = None

    def __call__(self) -> None:
        self.advance()

    def expect(self, files: int) -> None:
        """`files` more files are about to be loaded (and counted by `advance`)."""
        self.total = (self.total or 0) + files

    def advance(self) -> None:
        self.count += 1
        if not self.enabled or self.count < SHOW_AFTER:
            return
        # The total is a field of the task's own, not rich's `total`: rich cannot unset one.
        # A hook that counts loads it never announced would overrun it: no total then.
        known = self.total if self.total is not None and self.total >= self.count else None
        if self._progress is None:
            # A terminal without colour (NO_COLOR, --color never) still gets the line: the
            # report's console (`Terminal.console`) would take it for a pipe and draw nothing.
            console = Console(
                file=sys.stderr,
                force_terminal=True,
                no_color=not self.terminal.color,
                color_system="standard" if self.terminal.color else None,
                width=self.terminal.width,
                highlight=False,
            )
            self._progress = Progress(
                SpinnerColumn(),
                _FilesCount(),
                _FilesBar(),
                TimeElapsedColumn(),
                console=console,
                transient=True,
            )
            self._task = self._progress.add_task(
                "analyse", total=None, completed=self.count, known=known
            )
            self._progress.start()
        elif self._task is not None:
            self._progress.update(self._task, completed=self.count, known=known)

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
