"""`eagle3lint matrix`: columns from the command line, a report per release, one output."""

from __future__ import annotations

import datetime
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

from rich.console import Console

from eagle3lint.engine import CheckOptions
from eagle3lint.errors import EXIT_INPUT, EXIT_OK, UsageError
from eagle3lint.matrix.columns import Column, expand_specs
from eagle3lint.matrix.formats import MatrixFormat
from eagle3lint.matrix.model import Matrix, build_matrix
from eagle3lint.matrix.runner import CheckJson, check_releases
from eagle3lint.report.escape import printable
from eagle3lint.sources.discovery import discover
from eagle3lint.storage import write_atomically


def columns_of(paths: list[Path], specs: list[str]) -> list[Column]:
    """Release trees, then the versions `--vllm` names; each tree must hold a whole vLLM."""
    columns = []
    for path in paths:
        workspace = discover([path])
        if workspace.missing:
            raise UsageError(f"{path}: no such file or directory")
        if workspace.tree is None or workspace.extra_roots or workspace.only_files:
            raise UsageError(
                f"{path} is not a vLLM tree: matrix columns are whole releases (a checkout "
                "holding vllm/, or a vllm package folder)"
            )
        columns.append(Column(path=path))
    columns += [Column(version=v) for v in expand_specs(specs)]
    if not columns:
        raise UsageError(
            "no releases: give vLLM trees as PATHs, or --vllm 0.16.0, --vllm 0.12.0..0.33.0, "
            "--vllm latest (repeatable)"
        )
    return columns


def command_line(
    paths: list[Path] | None,
    specs: list[str] | None,
    options: CheckOptions,
    output_format: MatrixFormat,
    output: Path | None,
) -> str:
    """The command that makes this matrix, as its outputs quote it."""
    words = ["eagle3lint", "matrix", *map(str, paths or [])]
    words += [f"--vllm={spec}" for spec in specs or []]
    words += [f"--arch={arch}" for arch in options.archs]
    if options.hf_config is not None:
        words.append(f"--hf-config={options.hf_config}")
    if options.model_type is not None:
        words.append(f"--model-type={options.model_type}")
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


def write_output(text: str, output: Path | None) -> None:
    """To stdout, or to `output` written whole (a temporary file renamed into place)."""
    if output is None:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(output, text.encode("utf-8"))
    except OSError as exc:
        raise UsageError(f"--output {output}: {exc.strerror or exc}") from exc
