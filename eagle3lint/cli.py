"""The `eagle3lint` command line: the commands of `eagle3lint.commands`, wired into one app.

Heavy modules (libcst, the index, the rules) are imported inside the commands so that
`eagle3lint --help` answers at once.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

HELP = "Find (and fix) what keeps a vLLM model from running EAGLE-3, before the weights load."

COMMANDS = {
    # In the order `eagle3lint --help` lists them: name -> (module, attribute).
    "check": ("eagle3lint.commands.check", "check"),
    "matrix": ("eagle3lint.commands.matrix", "matrix"),
    "fix": ("eagle3lint.commands.fix", "fix"),
    "pair": ("eagle3lint.commands.pair", "pair"),
    "rules": ("eagle3lint.commands.rules", "rules"),
    "explain": ("eagle3lint.commands.explain", "explain"),
    "server": ("eagle3lint.commands.server", "server"),
    "cache": ("eagle3lint.commands.cache", "cache_app"),
}


def _show_version(value: bool) -> None:
    if value:
        from eagle3lint import __version__

        typer.echo(f"eagle3lint {__version__}")
        raise typer.Exit(0)


def build_app(only: str | None = None) -> typer.Typer:
    """The command line app with every command, or only the command `only` (a run of one
    command imports that command's module alone: a pre-commit hook starts up faster)."""
    from importlib import import_module

    app = typer.Typer(
        name="eagle3lint",
        help=HELP,
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        # Plain help, as ruff prints it: rich's panels cut option names at 80 columns.
        rich_markup_mode=None,
        context_settings={"help_option_names": ["-h", "--help"]},
    )

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
        """Find (and fix) what keeps a vLLM model from running EAGLE-3, before the weights
        load."""

    for name, (module, attribute) in COMMANDS.items():
        if only is not None and name != only:
            continue
        command = getattr(import_module(module), attribute)
        if isinstance(command, typer.Typer):
            app.add_typer(command, name=name)
        else:
            app.command()(command)
    return app


def __getattr__(name: str) -> object:
    # `app`, every command registered, made when first asked for (the tests invoke it).
    if name == "app":
        globals()["app"] = built = build_app()
        return built
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


CLICK_INTERRUPTED = 130
"""What click exits with on a Ctrl-C it catches itself: one that lands after start-up but before
a command's guard (`commands.guard`) is in place."""


def main() -> None:
    """The console entry point: every interruption is exit 2 with `interrupted`, as inside a
    command (nothing has been written by then)."""
    named = sys.argv[1] if len(sys.argv) > 1 else None
    try:
        build_app(named if named in COMMANDS else None)()
    except KeyboardInterrupt:
        _interrupted()
    except SystemExit as exc:
        if exc.code == CLICK_INTERRUPTED:
            _interrupted()
        raise


def _interrupted() -> None:
    print("eagle3lint: interrupted", file=sys.stderr)
    raise SystemExit(2) from None
