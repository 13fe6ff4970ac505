"""What `pair` prints before the report, for either engine: the verdict of the pair and the
short two-column table."""

from __future__ import annotations

import io
import os
import shutil
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from eagle3lint.report.model import Report


def verdict_of(report: Report, unchecked: str | None, unread: str | None = None) -> str:
    """`unchecked`: the method of a pair `pair` does not check (None when it does); `unread`:
    what the pairing checks could not read (the taps), which leaves the pair unverified."""
    from eagle3lint.findings import Severity

    if report.errors:
        return "incomplete (input errors)"
    errors = [f for f in report.findings if f.severity is Severity.ERROR]
    if errors:
        pairing = sum(f.rule == "draft-pairing" for f in errors)
        target = len(errors) - pairing
        parts = [f"{n} {what}" for n, what in ((target, "target"), (pairing, "pairing")) if n]
        return f"blocked ({', '.join(parts)} error{'s' if len(errors) > 1 else ''})"
    # Never "ok" about what was not read: the target's own unverified entries, or the taps.
    open_ = [
        f"{f.code}: {f.unverified.what}"
        for t in report.targets
        if t.is_unverified
        for f in t.unverified
        if f.unverified is not None
    ]
    open_ += [unread] if unread is not None else []
    if open_:
        return f"unverified ({'; '.join(open_)})"
    if unchecked is not None:
        return f"target ready; the {unchecked} pairing is not checked"
    return "ok"


class Summary:
    """The short two-column table `pair`'s text output leads with, rendered for stdout."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.table import Table

        self.tty = sys.stdout.isatty()
        self.buffer = io.StringIO()
        self.console = Console(
            file=self.buffer,
            force_terminal=self.tty,
            # Piped output is not wrapped, as check's is not: a line is one row of the table.
            width=shutil.get_terminal_size().columns if self.tty else 10_000,
            no_color=bool(os.environ.get("NO_COLOR")),
            highlight=False,
        )
        self.table = Table(show_header=False, box=None, padding=(0, 2, 0, 0))
        self.table.add_column(style="bold")
        self.table.add_column()

    def row(self, name: str, value: str) -> None:
        from eagle3lint.report.escape import rich_text

        self.table.add_row(name, rich_text(value))  # names and numbers from configs: escaped

    def printed(self) -> str:
        self.console.print(self.table)
        self.console.print()
        if self.tty:
            return self.buffer.getvalue()
        # rich pads every cell to its column's width; piped output keeps no trailing blanks.
        return "".join(f"{line.rstrip()}\n" for line in self.buffer.getvalue().splitlines())
