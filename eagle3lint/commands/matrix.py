"""`eagle3lint matrix`: columns from the command line, a report per release, one output."""

from __future__ import annotations

import datetime
import io
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from eagle3lint.commands.guard import guard
from eagle3lint.commands.options import RunArgs, takes
from eagle3lint.commands.output import OutputFileOpt, write_output
from eagle3lint.errors import EXIT_INPUT, EXIT_OK, UsageError
from eagle3lint.matrix.formats import MatrixFormat
from eagle3lint.report.terminal import Terminal

if TYPE_CHECKING:
    from rich.console import Console

    from eagle3lint.engine import CheckOptions
    from eagle3lint.matrix.columns import Column
    from eagle3lint.matrix.model import Matrix
    from eagle3lint.matrix.runner import CheckJson


@takes("arch", "hf_config", "model_type", "platform", "jobs", "no_cache", "debug")
def matrix(
    args: RunArgs,
    paths: Annotated[
        list[Path] | None,
        typer.Argument(help="vLLM (or SGLang) trees, one release each.", show_default=False),
    ] = None,
    vllm: Annotated[
        list[str] | None,
        typer.Option(
            "--vllm", help="Release X.Y.Z, range A..B (every final release) or latest; repeatable."
        ),
    ] = None,
    sglang: Annotated[
        list[str] | None,
        typer.Option("--sglang", help="SGLang releases, as --vllm takes them; repeatable."),
    ] = None,
    output_format: Annotated[
        MatrixFormat,
        typer.Option("--output-format", "--format", help="Output format (as check spells it)."),
    ] = MatrixFormat.text,
    output: OutputFileOpt = None,
) -> None:
    """EAGLE-3 readiness of every architecture across vLLM (or SGLang) releases (columns) as a
    table."""
    with guard(args.debug):
        # Looked up when the command runs: the tests stand in for it.
        from eagle3lint.commands.check import check_json

        options = args.check_options(progress=False)
        # A matrix shows full verdicts: every architecture as asked, claimed or not; no repairs.
        options.require = ["*"]
        options.plan_fixes = False
        columns = columns_of(list(paths or []), list(vllm or []), list(sglang or []))
        command = command_line(paths, vllm, options, output_format, output, sglang)
        table = build(columns, options, check_json, sys.stderr.isatty(), command)
        # A file or a pipe gets the table as wide as it needs (up to 200 columns), uncoloured.
        console = lambda: _text_console(tty=False if output else None, piped_width=200)  # noqa: E731
        write_output(render(table, output_format, console), output)
        code = report_failures(table)
    raise typer.Exit(code)


def columns_of(
    paths: list[Path], specs: list[str], sglang_specs: list[str] | None = None
) -> list[Column]:
    """Release trees, then the versions `--vllm` (or `--sglang`) names; each tree must hold a
    whole release, and every column must be of one engine."""
    from eagle3lint.engines import wing_named
    from eagle3lint.matrix.columns import Column, expand_specs
    from eagle3lint.sources.discovery import discover

    columns = []
    engines = set()
    for path in paths:
        workspace = discover([path])
        if workspace.missing:
            raise UsageError(f"{path}: no such file or directory")
        if workspace.tree is None or workspace.extra_roots or workspace.only_files:
            raise UsageError(
                f"{path} is not a vLLM or SGLang tree: matrix columns are whole releases (a "
                "checkout holding vllm/ or sglang/, or such a package folder)"
            )
        columns.append(Column(path=path, engine=workspace.wing.name))
        engines.add(workspace.wing.name)
    for engine, given in (("vllm", specs), ("sglang", sglang_specs or [])):
        if given:
            engines.add(engine)
            versions = expand_specs(given, wing=wing_named(engine))
            columns += [Column(version=v, engine=engine) for v in versions]
    if len(engines) > 1:
        raise UsageError(
            f"a matrix is of one engine's releases; these are of {' and '.join(sorted(engines))}:"
            " make one matrix per engine"
        )
    if not columns:
        raise UsageError(
            "no releases: give vLLM trees as PATHs, or --vllm 0.16.0, --vllm 0.12.0..0.33.0, "
            "--vllm latest (repeatable); --sglang 0.5.8..latest for SGLang's"
        )
    return columns


def command_line(
    paths: list[Path] | None,
    specs: list[str] | None,
    options: CheckOptions,
    output_format: MatrixFormat,
    output: Path | None,
    sglang_specs: list[str] | None = None,
) -> str:
    """The command that makes this matrix, as its outputs quote it."""
    words = ["eagle3lint", "matrix", *map(str, paths or [])]
    words += [f"--vllm={spec}" for spec in specs or []]
    words += [f"--sglang={spec}" for spec in sglang_specs or []]
    words += [f"--arch={arch}" for arch in options.archs]
    if options.hf_config is not None:
        words.append(f"--hf-config={options.hf_config}")
    if options.model_type is not None:
        words.append(f"--model-type={options.model_type}")
    if options.platform is not None:
        words.append(f"--platform={options.platform}")
    words.append(f"--format={output_format}")
    if output is not None:
        words += ["-o", str(output)]
    return shlex.join(words)


def build(
    columns: list[Column],
    options: CheckOptions,
    check: CheckJson,
    show_progress: bool,
    command: str,
) -> Matrix:
    """Check every column and assemble the matrix; unknown `--arch` names are a usage error."""
    from eagle3lint.matrix.model import build_matrix
    from eagle3lint.matrix.runner import check_releases

    reports = check_releases(columns, options, check, show_progress)
    results = [
        (c, r if r is not None else {"targets": []}) for c, r in zip(columns, reports, strict=True)
    ]
    matrix = build_matrix(results)
    unknown = sorted(set(options.archs) - {row.arch for row in matrix.rows})
    # A release that could not be checked may be the one registering them.
    if unknown and all(r.checked for r in matrix.releases):
        raise UsageError(f"not registered in any of these releases: {', '.join(unknown)}")
    matrix.command = command
    matrix.generated = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d")
    return matrix


def render(matrix: Matrix, output_format: MatrixFormat, console: Callable[[], Console]) -> str:
    """The matrix in `output_format`; `console` makes the text view's (buffered) console."""
    if output_format is MatrixFormat.json:
        import json

        return json.dumps(matrix.to_json(), indent=1) + "\n"
    if output_format is MatrixFormat.markdown:
        from eagle3lint.matrix.render_flat import render_markdown

        return render_markdown(matrix)
    if output_format is MatrixFormat.csv:
        from eagle3lint.matrix.render_flat import render_csv

        return render_csv(matrix)
    if output_format is MatrixFormat.html:
        from eagle3lint.matrix.render_html import render_html

        return render_html(matrix)
    from eagle3lint.matrix.render_text import render_text

    out = console()
    render_text(matrix, out)
    return out.file.getvalue()  # type: ignore[attr-defined]


def report_failures(matrix: Matrix) -> int:
    """Say on stderr which releases have errors (whatever the format); the exit code: 2 if
    any, else 0."""
    from eagle3lint.report.escape import printable

    for release in matrix.failed:
        more = len(release.errors) - 1
        what = "could not be checked" if not release.checked else "has input errors"
        sys.stderr.write(
            printable(
                f"eagle3lint: {release.label} {what}: {release.errors[0]}"
                + (f" (and {more} more)" if more else "")
            )
            + "\n"
        )
    return EXIT_INPUT if matrix.failed else EXIT_OK


def _text_console(tty: bool | None = None, piped_width: int | None = None) -> Console:
    """A console writing to a buffer for stdout (a terminal when `tty`, default: when stdout
    is one). Piped output stays plain (no colours) and unwrapped, or `piped_width` wide."""
    tty = sys.stdout.isatty() if tty is None else tty
    terminal = Terminal.of(sys.stdout) if tty else Terminal(color=False, width=piped_width)
    return terminal.console(io.StringIO())
