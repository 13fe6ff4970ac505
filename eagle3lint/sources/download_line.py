"""The progress line of a wheel download: bytes on disk of the published size, rate, time
left, read from the file pip is writing (see `sources.wheels`)."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console


class DownloadLine:
    """The bytes of the wheel on disk of its `total`, the rate and the time left, on stderr while
    the block runs, read from the size of the largest file below `folders` (pip's partial
    download) `EVERY` seconds by a thread of its own; removed when the block ends. A console
    that is not a terminal gets nothing (rich would still leave a blank line on it)."""

    EVERY = 0.1

    def __init__(
        self, label: str, total: int | None, folders: Iterable[Path], console: Console | None = None
    ) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
            TransferSpeedColumn,
        )

        self.console = console or Console(stderr=True)
        self.total = total
        self.folders = list(folders)
        self.progress = Progress(
            TextColumn("{task.description}", markup=False),
            BarColumn(bar_width=30),
            DownloadColumn(),
            TransferSpeedColumn(),
            TimeRemainingColumn(),
            console=self.console,
            transient=True,
        )
        self.task = self.progress.add_task(label, total=total)
        self.shown = False
        self._stop = threading.Event()
        # A daemon: an interrupted run must not wait on it.
        self._thread = threading.Thread(target=self._watch, name="download-line", daemon=True)

    def _watch(self) -> None:
        while not self._stop.wait(self.EVERY):
            self.update(largest_file(self.folders))

    def update(self, done: int) -> None:
        """`done` bytes are on disk so far."""
        # More than published is refused by the hash check after; the line stops at the total.
        shown = min(done, self.total) if self.total is not None else done
        self.progress.update(self.task, completed=shown)

    def __enter__(self) -> DownloadLine:
        self.shown = self.console.is_interactive
        if self.shown:
            self.progress.start()
            self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *_: object) -> None:
        if self.shown:
            self._stop.set()
            self._thread.join()
            if exc_type is None:
                self.update(largest_file(self.folders))
            self.progress.stop()


def largest_file(folders: Iterable[Path]) -> int:
    """The size of the largest regular file below `folders`, links not followed; 0 for none.
    pip creates and removes its folders meanwhile: what vanishes is skipped."""
    largest = 0
    stack = [str(f) for f in folders]
    while stack:
        try:
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            stack.append(entry.path)
                        elif entry.is_file(follow_symlinks=False):
                            largest = max(largest, entry.stat(follow_symlinks=False).st_size)
                    except OSError:
                        continue
        except OSError:
            continue
    return largest
