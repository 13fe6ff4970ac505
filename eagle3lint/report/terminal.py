"""What the output stream is: colour or not, and the width to wrap at.

`--color auto` (the default) colours a terminal only; `NO_COLOR` turns colour off and
`FORCE_COLOR` on (https://no-color.org, https://force-color.org), and `--color always|never`
overrides both. Piped output is never wrapped. Everything here changes the bytes of the
output, so the whole-run cache keys on it.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from enum import StrEnum
from typing import TextIO


class ColorChoice(StrEnum):
    auto = "auto"
    always = "always"
    never = "never"


@dataclass(frozen=True)
class Terminal:
    """How output is rendered for one stream."""

    color: bool
    width: int | None
    """Columns to wrap at; None for a pipe (long lines stay whole)."""

    @classmethod
    def of(cls, stream: TextIO, choice: ColorChoice = ColorChoice.auto) -> Terminal:
        tty = stream.isatty()
        if choice is ColorChoice.always:
            color = True
        elif choice is ColorChoice.never or os.environ.get("NO_COLOR"):
            color = False
        else:
            color = bool(os.environ.get("FORCE_COLOR")) or tty
        return cls(color, shutil.get_terminal_size().columns if tty else None)

    def console(self, file: TextIO, *, stderr: bool = False):  # -> rich.console.Console
        """A rich console that writes as decided here."""
        from rich.console import Console

        return Console(
            file=file,
            stderr=stderr,
            force_terminal=self.color,
            no_color=not self.color,
            color_system="standard" if self.color else None,
            width=self.width or 10_000,
            highlight=False,
            soft_wrap=self.width is None,
        )
