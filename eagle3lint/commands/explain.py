"""`eagle3lint explain CODE`: a code's page, as Markdown (rendered on a terminal)."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from eagle3lint.commands.guard import guard
from eagle3lint.report.terminal import Terminal


def explain(
    code: Annotated[str, typer.Argument(help="A code, such as EAG101.", show_default=False)],
) -> None:
    """What a code means: what vLLM does, the error it raises, releases, an example, the fix."""
    with guard(debug=False):
        from eagle3lint.codes import find_code
        from eagle3lint.explain import explanation_markdown

        page = explanation_markdown(find_code(code))
        if sys.stdout.isatty():
            from rich.markdown import Markdown

            Terminal.of(sys.stdout).console(sys.stdout).print(Markdown(page))
        else:
            typer.echo(page, nl=False)
