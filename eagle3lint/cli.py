"""The `eagle3lint` command line: check, fix, rules, explain.

Heavy modules (libcst, the index, the rules) are imported inside the commands so that
`eagle3lint --help` answers at once.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from eagle3lint.engine import CheckOptions

app = typer.Typer(
    name="eagle3lint",
    help="Find (and fix) what keeps a vLLM model from running EAGLE-3, before the weights load.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


class OutputFormat(StrEnum):
    text = "text"
    json = "json"
    sarif = "sarif"
    github = "github"


PathsArg = Annotated[
    list[Path] | None,
    typer.Argument(
        help="vLLM checkout or package folder, model files, or folders of out-of-tree model "
        "files. None: the installed vLLM.",
        show_default=False,
    ),
]
ArchOpt = Annotated[
    list[str] | None, typer.Option("--arch", help="Only this registered architecture (repeatable).")
]
VllmOpt = Annotated[
    str | None,
    typer.Option("--vllm", "--vllm-version", help="Check release X.Y.Z's sources from PyPI."),
]
HfConfigOpt = Annotated[
    Path | None, typer.Option("--hf-config", help="The model's config.json (or its folder).")
]
ModelTypeOpt = Annotated[
    str | None, typer.Option("--model-type", help="The target's text model_type.")
]
SelectOpt = Annotated[
    list[str] | None, typer.Option("--select", help="Only these codes or prefixes (EAG1, EAG301).")
]
IgnoreOpt = Annotated[list[str] | None, typer.Option("--ignore", help="Skip these codes or prefixes.")]
JobsOpt = Annotated[int | None, typer.Option("--jobs", "-j", help="Parser processes (default: cores).")]
NoCacheOpt = Annotated[bool, typer.Option("--no-cache", help="Neither read nor write the cache.")]
DebugOpt = Annotated[bool, typer.Option("--debug", help="Show tracebacks of internal errors.")]


def _options(
    paths: list[Path] | None,
    vllm: str | None,
    arch: list[str] | None,
    hf_config: Path | None,
    model_type: str | None,
    select: list[str] | None,
    ignore: list[str] | None,
    jobs: int | None,
    no_cache: bool,
    progress: bool,
) -> CheckOptions:
    from eagle3lint.engine import CheckOptions

    return CheckOptions(
        paths=list(paths or []),
        vllm_version=vllm,
        archs=list(arch or []),
        hf_config=hf_config,
        model_type=model_type,
        select=list(select or []),
        ignore=list(ignore or []),
        jobs=jobs,
        use_cache=not no_cache,
        progress=progress,
    )


def _fail(message: str, debug: bool) -> None:
    if debug:
        traceback.print_exc()
    typer.echo(f"eagle3lint: {message}", err=True)
    raise typer.Exit(2)


def _guard(debug: bool):  # noqa: ANN202 - a context manager
    """Turn expected failures into exit 2 with a message, and anything else into one line."""
    from contextlib import contextmanager

    from eagle3lint.sources.discovery import UsageError
    from eagle3lint.sources.download import DownloadError

    @contextmanager
    def guard():  # noqa: ANN202
        try:
            yield
        except (typer.Exit, typer.Abort, SystemExit):
            raise
        except (UsageError, DownloadError) as exc:
            _fail(str(exc), debug)
        except KeyboardInterrupt:
            _fail("interrupted", debug)
        except Exception as exc:  # noqa: BLE001 - the promise: never a traceback
            _fail(
                f"internal error {type(exc).__name__}: {exc} (run with --debug for the traceback)",
                debug,
            )

    return guard()


@app.command()
def check(
    paths: PathsArg = None,
    vllm: VllmOpt = None,
    arch: ArchOpt = None,
    hf_config: HfConfigOpt = None,
    model_type: ModelTypeOpt = None,
    select: SelectOpt = None,
    ignore: IgnoreOpt = None,
    output_format: Annotated[
        OutputFormat, typer.Option("--format", help="Report format.")
    ] = OutputFormat.text,
    exit_zero: Annotated[bool, typer.Option("--exit-zero", help="Exit 0 even with errors.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Only error findings.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Info findings too.")] = False,
    jobs: JobsOpt = None,
    no_cache: NoCacheOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Report every EAGLE-3 blocker of every architecture (exit 0 none, 1 errors, 2 bad input)."""
    with _guard(debug):
        from eagle3lint.engine import run_check

        options = _options(
            paths, vllm, arch, hf_config, model_type, select, ignore, jobs, no_cache,
            progress=sys.stderr.isatty(),
        )
        report = run_check(options).report
        _emit(report, output_format, quiet=quiet, verbose=verbose)
        code = report.exit_code(exit_zero)
    raise typer.Exit(code)


def _emit(report, output_format: OutputFormat, *, quiet: bool, verbose: bool) -> None:  # noqa: ANN001
    if output_format is OutputFormat.json:
        typer.echo(json.dumps(report.to_json(), indent=2))
        return
    from rich.console import Console

    from eagle3lint.report.text import render_text

    console = Console(no_color=bool(os.environ.get("NO_COLOR")), highlight=False)
    render_text(report, console, verbose=verbose, quiet=quiet)


@app.command()
def fix(
    paths: PathsArg = None,
    vllm: VllmOpt = None,
    arch: ArchOpt = None,
    hf_config: HfConfigOpt = None,
    model_type: ModelTypeOpt = None,
    select: SelectOpt = None,
    ignore: IgnoreOpt = None,
    diff: Annotated[
        bool, typer.Option("--diff", help="Print a unified diff; write nothing.")
    ] = False,
    jobs: JobsOpt = None,
    no_cache: NoCacheOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Apply every fixable finding, then check again (exit 0 ready, 1 blockers remain)."""
    with _guard(debug):
        from eagle3lint.fixer import run_fix

        options = _options(
            paths, vllm, arch, hf_config, model_type, select, ignore, jobs, no_cache,
            progress=sys.stderr.isatty(),
        )
        code = run_fix(options, diff=diff)
    raise typer.Exit(code)


@app.command()
def rules() -> None:
    """List the rules: code, name, what it checks, fixable, plugin."""
    from rich.console import Console
    from rich.table import Table

    from eagle3lint.rule import load_rules

    table = Table("code", "rule", "name", "checks", "fixable", "plugin")
    for cls in load_rules():
        for code in cls.codes:
            table.add_row(
                code.code, cls.slug, code.name, code.summary, "yes" if code.fixable else "", cls.plugin
            )
    Console(no_color=bool(os.environ.get("NO_COLOR"))).print(table)


def main() -> None:
    app()
