"""The `eagle3lint` command line: the commands of `eagle3lint.commands`, wired into one app.

Heavy modules (libcst, the index, the rules) are imported inside the commands so that
`eagle3lint --help` answers at once.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from eagle3lint.commands.cache import cache_app
from eagle3lint.commands.check import check
from eagle3lint.commands.explain import explain
from eagle3lint.commands.fix import fix
from eagle3lint.commands.matrix import matrix
from eagle3lint.commands.pair import pair
from eagle3lint.commands.rules import rules

app = typer.Typer(
    name="eagle3lint",
    help="Find (and fix) what keeps a vLLM model from running EAGLE-3, before the weights load.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Plain help, as ruff prints it: rich's panels cut option names at 80 columns.
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _show_version(value: bool) -> None:
    if value:
        from eagle3lint import __version__

        typer.echo(f"eagle3lint {__version__}")
        raise typer.Exit(0)


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            "-V",
            help="Print the version and exit.",
            callback=_show_version,
            is_eager=True,
        ),
    ] = False,
) -> None:
    """Find (and fix) what keeps a vLLM model from running EAGLE-3, before the weights load."""


# In the order `eagle3lint --help` lists them.
app.command()(check)
app.command()(matrix)
app.command()(fix)
app.command()(pair)
app.command()(rules)
app.command()(explain)
app.add_typer(cache_app, name="cache")


CLICK_INTERRUPTED = 130
"""What click exits with on a Ctrl-C it catches itself: one that lands after start-up but before
a command's guard (`commands.guard`) is in place."""


def main() -> None:
    """The console entry point: every interruption is exit 2 with `interrupted`, as inside a
    command (nothing has been written by then)."""
    try:
        app()
    except KeyboardInterrupt:
        _interrupted()
    except SystemExit as exc:
        if exc.code == CLICK_INTERRUPTED:
            _interrupted()
        raise


def _interrupted() -> None:
    print("eagle3lint: interrupted", file=sys.stderr)
    raise SystemExit(2) from None
