"""`eagle3lint pair`: `check` of the target architecture plus the draft-pairing rule, with a
summary table of what the release will do with the pair."""

from __future__ import annotations

import io
import json
import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from eagle3lint.commands.check import View, render
from eagle3lint.commands.guard import guard
from eagle3lint.commands.options import (
    ExitZeroOpt,
    FormatOpt,
    OutputFormat,
    QuietOpt,
    RunArgs,
    VerboseOpt,
    takes,
)
from eagle3lint.report.terminal import Terminal

if TYPE_CHECKING:
    from eagle3lint.drafts.analysis import Analysis
    from eagle3lint.drafts.draft import DraftPairing
    from eagle3lint.engine import CheckOptions
    from eagle3lint.report.model import Report

TAPS_RULE = "forward-taps"


@takes("paths", "vllm", "select", "ignore", "jobs", "no_cache", "debug")
def pair(
    args: RunArgs,
    target: Annotated[
        Path, typer.Option("--target", help="The target's config.json (or its folder).")
    ] = ...,  # type: ignore[assignment]
    draft: Annotated[
        Path, typer.Option("--draft", help="The drafter's config.json (or its folder).")
    ] = ...,  # type: ignore[assignment]
    draft_weights: Annotated[
        list[Path] | None,
        typer.Option(
            "--draft-weights",
            help="Drafter .safetensors files (headers only; default: those in the --draft folder).",
        ),
    ] = None,
    pp: Annotated[int, typer.Option("--pp", min=1, help="Pipeline-parallel size.")] = 1,
    output_format: FormatOpt = OutputFormat.text,
    exit_zero: ExitZeroOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Check an EAGLE-3 drafter against its target for one release (exit codes as check)."""
    with guard(args.debug):
        from eagle3lint.drafts.draft import DraftPairing

        pairing = DraftPairing.load(draft, list(draft_weights or []), target, pp)
        options = replace(args, hf_config=target).check_options(progress=False)
        view = View(output_format, quiet, verbose, exit_zero, False, Terminal.of(sys.stdout))
        output, code = run_pair(
            options, pairing, output_format.value, lambda report: render(report, view), exit_zero
        )
        sys.stdout.write(output)
        sys.stdout.flush()
    raise typer.Exit(code)


def run_pair(
    options: CheckOptions,
    pairing: DraftPairing,
    output_format: str,
    show: Callable[[Report], str],
    exit_zero: bool,
) -> tuple[str, int]:
    """Check the target with the draft attached; the output and the exit code."""
    from eagle3lint.engine import run_check
    from eagle3lint.errors import UsageError

    options.archs = [pairing.target_architecture()]
    options.hf_config = pairing.target_path
    options.pairing = pairing
    ids = pairing.draft_layer_ids()
    if ids is not None and TAPS_RULE not in options.rule_options:
        # The taps rule reports a None residual at layer 0 only when layer 0 is requested.
        options.rule_options = {**options.rule_options, TAPS_RULE: {"aux-layers": ids}}
    run = run_check(options)
    report = run.report
    analysis: Analysis | None = pairing.analysis
    if analysis is None:
        if report.errors:
            return show(report), report.exit_code(exit_zero)
        raise UsageError(
            "pair needs a vLLM tree (PATH, --vllm X.Y.Z or an installed vLLM): the drafter "
            "contract is read from the release's sources"
        )
    verdict = _verdict(report)
    if output_format == "json":
        data = report.to_json()
        data["pairing"] = analysis.to_json(pairing, verdict)
        return json.dumps(data, indent=2) + "\n", report.exit_code(exit_zero)
    body = show(report)
    if output_format != "text":
        return body, report.exit_code(exit_zero)
    return summary_table(analysis, pairing, verdict) + body, report.exit_code(exit_zero)


def _verdict(report: Report) -> str:
    from eagle3lint.findings import Severity

    if report.errors:
        return "incomplete (input errors)"
    errors = [f for f in report.findings if f.severity is Severity.ERROR]
    if not errors:
        return "ok"
    pairing = sum(f.rule == "draft-pairing" for f in errors)
    target = len(errors) - pairing
    parts = [f"{n} {what}" for n, what in ((target, "target"), (pairing, "pairing")) if n]
    return f"blocked ({', '.join(parts)} error{'s' if len(errors) > 1 else ''})"


def summary_table(analysis: Analysis, pairing: DraftPairing, verdict: str) -> str:
    """The short table `pair`'s text output leads with."""
    from rich.console import Console
    from rich.table import Table

    from eagle3lint.report.escape import rich_text

    tty = sys.stdout.isatty()
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        force_terminal=tty,
        width=shutil.get_terminal_size().columns if tty else 120,
        no_color=bool(os.environ.get("NO_COLOR")),
        highlight=False,
    )
    table = Table(show_header=False, box=None, padding=(0, 2, 0, 0))
    table.add_column(style="bold")
    table.add_column()
    drafter = analysis.translated.architecture or "refused by the translation"
    if analysis.declared_arch and analysis.declared_arch != drafter:
        drafter = f"{analysis.declared_arch} → {drafter}"

    def row(name: str, value: str) -> None:
        table.add_row(name, rich_text(value))  # names and numbers from the configs: escaped

    row("target", f"{analysis.target_arch} ({analysis.target_layers} layers)")
    row("release", f"vLLM {analysis.release}")
    row("drafter", f"{drafter} ({analysis.draft_format} config)")
    tapped = analysis.tapped_ids
    first = analysis.requests[0] if analysis.requests else None
    if tapped is None:
        layers = "unknown (no ids, default not readable)"
    elif first is not None and first.ids is not None:
        layers = f"{analysis.physical(tapped)}  (from {first.source})"
    else:
        layers = f"{analysis.physical(tapped)}  (target default)"
    row("taps", layers)
    for request in analysis.requests[1:]:
        if request.ids != (first.ids if first else None):
            other = request.ids if request.ids is not None else analysis.default_ids
            how = f"from {request.source}" if request.ids is not None else "target default"
            row("", f"{request.runner.runner}: {other} ({how})")
    expected = analysis.aux_expected if analysis.uses_aux else None
    provided = analysis.aux_provided if analysis.aux_provided is not None else "?"
    aux = (
        "not used (use_aux_hidden_state false)"
        if not analysis.uses_aux
        else f"expected {expected if expected is not None else '?'} "
        f"({analysis.aux_source or 'unknown'}), provided {provided}"
    )
    row("aux states", aux)
    row("vocab", analysis.vocab_mapping(pairing))
    if pairing.pipeline_size > 1:
        row("pipeline", f"{pairing.pipeline_size} ranks")
    row("verdict", verdict)
    console.print(table)
    console.print()
    if tty:
        return buffer.getvalue()
    # rich pads every cell to its column's width; piped output keeps no trailing blanks.
    return "".join(f"{line.rstrip()}\n" for line in buffer.getvalue().splitlines())
