"""Where a command's report goes: stdout, or the file `--output`/`-o` names, written whole."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

OutputFileOpt = Annotated[
    Path | None, typer.Option("--output", "-o", help="Write to this file, not stdout.")
]


def write_output(text: str, output: Path | None) -> None:
    """To stdout, or to `output` written whole (a temporary file renamed into place), so a
    reader of the file never sees half a report; a device or a pipe is written to."""
    from eagle3lint.errors import UsageError
    from eagle3lint.storage import write_named_file

    if output is None:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    try:
        write_named_file(output, text.encode("utf-8"))
    except OSError as exc:
        raise UsageError(f"--output {output}: {exc.strerror or exc}") from exc
