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
    from rich.console import Console
    from rich.table import Table

    from eagle3lint.drafts.analysis import Analysis, RunnerRequest
    from eagle3lint.drafts.draft import DraftPairing
    from eagle3lint.engine import CheckOptions
    from eagle3lint.report.model import Report


@takes("paths", "vllm", "sglang", "select", "ignore", "jobs", "no_cache", "debug")
def pair(
    args: RunArgs,
    target: Annotated[
        Path, typer.Option("--target", help="The target's config.json (or its folder).")
    ] = ...,  # type: ignore[assignment]
    speculative_config: Annotated[
        str | None,
        typer.Option(
            "--speculative-config",
            help="The JSON vllm serve takes (or a file holding it); its model is a folder or a "
            "model id in the local Hugging Face cache.",
        ),
    ] = None,
    draft: Annotated[
        Path | None,
        typer.Option(
            "--draft",
            help="The drafter's config.json (or its folder); without --speculative-config the "
            "method is taken as eagle3.",
        ),
    ] = None,
    draft_weights: Annotated[
        list[Path] | None,
        typer.Option(
            "--draft-weights",
            help="Drafter .safetensors files (headers, and d2t's values; default: those in the "
            "--draft folder).",
        ),
    ] = None,
    pp: Annotated[int, typer.Option("--pp", min=1, help="Pipeline-parallel size.")] = 1,
    engine: Annotated[
        str | None,
        typer.Option(
            "--engine",
            help="vllm or sglang: the installed engine's tree, when no PATH or release is given.",
        ),
    ] = None,
    output_format: FormatOpt = OutputFormat.text,
    exit_zero: ExitZeroOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Check an EAGLE-3 drafter against its target for one release (exit codes as check)."""
    with guard(args.debug):
        from eagle3lint.drafts.draft import DraftPairing, SpeculativeConfig

        options = replace(args, hf_config=target).check_options(progress=False)
        if engine is not None:
            options.paths = options.paths or _installed(engine, options)
        if _is_sglang(options):
            output, code = run_sglang_pair(
                options, draft, target, speculative_config, output_format, quiet, verbose,
                exit_zero,
            )  # fmt: skip
            sys.stdout.write(output)
            sys.stdout.flush()
            raise typer.Exit(code)
        settings = SpeculativeConfig.parse(speculative_config) if speculative_config else None
        pairing = DraftPairing.load(draft, list(draft_weights or []), target, pp, settings)
        view = View(output_format, quiet, verbose, exit_zero, False, Terminal.of(sys.stdout))
        output, code = run_pair(
            options, pairing, output_format.value, lambda report: render(report, view), exit_zero
        )
        sys.stdout.write(output)
        sys.stdout.flush()
    raise typer.Exit(code)


def _installed(engine: str, options: CheckOptions) -> list[Path]:
    """`--engine NAME` with no PATH: the installed engine's tree (none with a release given)."""
    from eagle3lint.engines import wing_named
    from eagle3lint.errors import UsageError

    try:
        wing = wing_named(engine)
    except KeyError:
        raise UsageError(f"--engine {engine}: not an engine (vllm or sglang)") from None
    if options.release is not None:
        if options.release_engine != wing.name:
            raise UsageError(f"--engine {engine} and --{options.release_engine} disagree")
        return []
    tree = wing.installed_tree()
    if tree is None:
        raise UsageError(
            f"--engine {engine}: no installed {wing.label} was found; pass the tree of a "
            f"{wing.label} release as PATH, or --{wing.name} X.Y.Z"
        )
    return [tree]


def _is_sglang(options: CheckOptions) -> bool:
    """Whether the pair is judged against an SGLang tree (`--sglang X.Y.Z` or a PATH in one)."""
    if options.release is not None:
        return options.release_engine == "sglang"
    if not options.paths:
        return False
    from eagle3lint.checkrun.options import discover_for

    return discover_for(options).wing.name == "sglang"


def run_sglang_pair(
    options: CheckOptions,
    draft: Path | None,
    target: Path,
    speculative_config: str | None,
    output_format: OutputFormat,
    quiet: bool,
    verbose: bool,
    exit_zero: bool,
) -> tuple[str, int]:
    """`pair` on an SGLang tree: the target's check with the sglang-pairing rule, led by a
    table of the layers SGLang taps for the head."""
    from eagle3lint.engine import run_check
    from eagle3lint.engines.sglang.pairing import SglangPairing
    from eagle3lint.errors import UsageError

    if speculative_config is not None or draft is None:
        raise UsageError(
            "pair on an SGLang tree takes --draft (the head SGLang loads with "
            "--speculative-draft-model-path); --speculative-config is vLLM's"
        )
    pairing = SglangPairing.load(draft, target)
    if not pairing.target_architecture():
        raise UsageError(f"{pairing.target_path} names no architecture (its `architectures`)")
    options.archs = [pairing.target_architecture()]
    options.hf_config = pairing.target_path
    options.pairing = pairing
    report = run_check(options).report
    view = View(output_format, quiet, verbose, exit_zero, False, Terminal.of(sys.stdout))
    analysis = pairing.analysis
    if output_format is OutputFormat.json:
        data = report.to_json()
        data["pairing"] = _sglang_json(pairing)
        return json.dumps(data, indent=2) + "\n", report.exit_code(exit_zero)
    body = render(report, view)
    if output_format is not OutputFormat.text or analysis is None:
        return body, report.exit_code(exit_zero)
    return _sglang_table(pairing, _verdict(report, None)) + body, report.exit_code(exit_zero)


def _sglang_json(pairing: object) -> dict[str, object] | None:
    from eagle3lint.engines.sglang.pairing import SglangPairing

    assert isinstance(pairing, SglangPairing)
    analysis = pairing.analysis
    if analysis is None:
        return None
    return {
        "engine": "sglang",
        "target": pairing.target_architecture(),
        "target_layers": analysis.layers,
        "ids": analysis.ids,
        "top_level_ids": analysis.top_level_ids,
        "convention": analysis.convention,
        "convention_class": analysis.convention_owner,
        "layers_to_capture": analysis.captured,
        "tapped_outputs": analysis.outputs,
        "vllm_tapped_outputs": analysis.vllm_outputs(),
    }


def _sglang_table(pairing: object, verdict: str) -> str:
    from rich.console import Console
    from rich.table import Table

    from eagle3lint.engines.sglang.pairing import SglangPairing
    from eagle3lint.report.escape import rich_text

    assert isinstance(pairing, SglangPairing) and pairing.analysis is not None
    analysis = pairing.analysis
    tty = sys.stdout.isatty()
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        force_terminal=tty,
        width=shutil.get_terminal_size().columns if tty else 10_000,
        no_color=bool(os.environ.get("NO_COLOR")),
        highlight=False,
    )
    table = Table(show_header=False, box=None, padding=(0, 2, 0, 0))
    table.add_column(style="bold")
    table.add_column()

    def row(name: str, value: str) -> None:
        table.add_row(name, rich_text(value))

    def layers(outputs: list[int]) -> str:
        return ", ".join("embedding" if o < 0 else f"out of layer {o}" for o in outputs)

    row("target", f"{pairing.target_architecture()} ({analysis.layers} layers)")
    row("engine", "SGLang")
    if analysis.ids is not None:
        source = f'{analysis.ids} from eagle_config["eagle_aux_hidden_state_layer_ids"]'
    else:
        source = "none under eagle_config: the target's default [2, L // 2, L - 3]"
    row("ids", source)
    row("convention", f"{analysis.convention} ({analysis.convention_owner})")
    row("taps", f"{analysis.captured} → {layers(analysis.outputs)}")
    vllm = analysis.vllm_outputs()
    if vllm is not None:
        same = " (the same)" if vllm == analysis.outputs else ""
        row("in vLLM", f"{layers(vllm)}{same}")
    row("verdict", verdict)
    return _printed(console, buffer, table, tty)


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
    verdict = _verdict(report, None if analysis.checked else analysis.resolution.method)
    if output_format == "json":
        data = report.to_json()
        data["pairing"] = analysis.to_json(pairing, verdict)
        return json.dumps(data, indent=2) + "\n", report.exit_code(exit_zero)
    body = show(report)
    if output_format != "text":
        return body, report.exit_code(exit_zero)
    return summary_table(analysis, pairing, verdict) + body, report.exit_code(exit_zero)


def _verdict(report: Report, unchecked: str | None) -> str:
    """`unchecked`: the method of a pair `pair` does not check (None when it does)."""
    from eagle3lint.findings import Severity

    if report.errors:
        return "incomplete (input errors)"
    errors = [f for f in report.findings if f.severity is Severity.ERROR]
    if not errors and unchecked is not None:
        return f"target ready; the {unchecked} pairing is not checked"
    if not errors:
        return "ok"
    pairing = sum(f.rule == "draft-pairing" for f in errors)
    target = len(errors) - pairing
    parts = [f"{n} {what}" for n, what in ((target, "target"), (pairing, "pairing")) if n]
    return f"blocked ({', '.join(parts)} error{'s' if len(errors) > 1 else ''})"


def _taps(analysis: Analysis, request: RunnerRequest | None) -> str:
    """`[33, 18, 2] → 2→out of layer 1, …  (from <key>, in layer order)` for one runner."""
    ids = analysis.ids_of(request)
    if ids is None:
        return "unknown (no ids, default not readable)"
    captured = analysis.captured(ids)
    where = f"from {request.source}" if request is not None and request.ids else "target default"
    raw = f"{list(ids)} → " if captured != list(ids) else ""
    order = ", in layer order" if raw else ""
    return f"{raw}{analysis.physical(captured)}  ({where}{order})"


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
        # Piped output is not wrapped, as check's is not: a line is one row of the table.
        width=shutil.get_terminal_size().columns if tty else 10_000,
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
    resolution = analysis.resolution
    if resolution.method is None:
        row("method", f"refused: {resolution.refusal}")
    else:
        row("method", f"{resolution.method} ({resolution.how})")
    row("drafter", f"{drafter} ({analysis.draft_format} config)")
    if analysis.runner is not None:
        row("runner", f"model runner {analysis.runner.upper()} ({analysis.runner_why})")
    if not analysis.checked or analysis.translated.architecture is None:
        # The taps, the aux count and the vocabulary map are not what runs here.
        row("verdict", verdict)
        return _printed(console, buffer, table, tty)
    chosen = analysis.chosen
    for request in analysis.requests:
        if request is not chosen and analysis.ids_of(request) == analysis.ids_of(chosen):
            continue
        label = "taps" if request is chosen else ""
        prefix = "" if request is chosen else f"{request.runner.runner}: "
        row(label, prefix + _taps(analysis, request))
    if not analysis.requests:
        row("taps", _taps(analysis, None))
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
    return _printed(console, buffer, table, tty)


def _printed(console: Console, buffer: io.StringIO, table: Table, tty: bool) -> str:
    console.print(table)
    console.print()
    if tty:
        return buffer.getvalue()
    # rich pads every cell to its column's width; piped output keeps no trailing blanks.
    return "".join(f"{line.rstrip()}\n" for line in buffer.getvalue().splitlines())
