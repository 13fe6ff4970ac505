"""`eagle3lint pair`: `check` of the target architecture plus the draft-pairing rule, with a
summary table of what the release will do with the pair."""

from __future__ import annotations

import io
import json
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
from eagle3lint.commands.output import OutputFileOpt, write_output
from eagle3lint.commands.pair_summary import Summary, verdict_of
from eagle3lint.errors import EXIT_FINDINGS, EXIT_OK, UsageError
from eagle3lint.report.terminal import Terminal

if TYPE_CHECKING:
    from eagle3lint.drafts.analysis import Analysis, RunnerRequest
    from eagle3lint.drafts.draft import DraftPairing
    from eagle3lint.engine import CheckOptions
    from eagle3lint.report.model import Report


@takes(
    "paths",
    "vllm",
    "sglang",
    "platform",
    "select",
    "ignore",
    "jobs",
    "no_cache",
    "debug",
    helps={
        "paths": "The engine's tree whose release runs the pair: a vLLM (or SGLang) checkout or "
        "package folder. None: the installed engine (--engine), unless --vllm or --sglang names "
        "a release.",
        "vllm": "Judge the pair as vLLM release X.Y.Z runs it (its sources from PyPI).",
        "sglang": "Judge the pair as SGLang release X.Y.Z runs it (its sources from PyPI).",
    },
)
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
    max_model_len: Annotated[
        int | None,
        typer.Option(
            "--max-model-len",
            min=1,
            help="The context you serve with (vllm serve --max-model-len); default: the "
            "target's, as vLLM derives it.",
        ),
    ] = None,
    hf_overrides: Annotated[
        str | None,
        typer.Option(
            "--hf-overrides",
            help="The JSON object vllm serve --hf-overrides takes (applied to the target).",
        ),
    ] = None,
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
    output_file: OutputFileOpt = None,
) -> None:
    """Check an EAGLE-3 drafter against its target for one release (exit codes as check)."""
    with guard(args.debug):
        from eagle3lint.drafts.context import parse_hf_overrides
        from eagle3lint.drafts.draft import DraftPairing, SpeculativeConfig

        overrides = parse_hf_overrides(hf_overrides)
        options = replace(args, hf_config=target).check_options(progress=False)
        from eagle3lint.commands.pair_sglang import installed, is_sglang, run_sglang_pair

        if engine is not None:
            options.paths = options.paths or installed(engine, options)
        if is_sglang(options):
            if max_model_len is not None or overrides:
                raise UsageError(
                    "--max-model-len and --hf-overrides are read for vLLM only: SGLang's "
                    "context checks are not written yet"
                )
            output, code = run_sglang_pair(
                options, draft, target, speculative_config, output_format, quiet, verbose,
                exit_zero,
            )  # fmt: skip
            write_output(output, output_file)
            raise typer.Exit(code)
        settings = SpeculativeConfig.parse(speculative_config) if speculative_config else None
        pairing = DraftPairing.load(draft, list(draft_weights or []), target, pp, settings)
        pairing.max_model_len = max_model_len
        pairing.hf_overrides = overrides
        # A file gets no colour, as a pipe gets none.
        stream = sys.stdout if output_file is None else io.StringIO()
        view = View(output_format, quiet, verbose, exit_zero, False, Terminal.of(stream))
        output, code = run_pair(
            options, pairing, output_format.value, lambda report: render(report, view), exit_zero
        )
        write_output(output, output_file)
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
    unread = _taps_unread(analysis)
    verdict = verdict_of(report, None if analysis.checked else analysis.resolution.method, unread)
    code = report.exit_code(exit_zero)
    if unread is not None and code == EXIT_OK and not exit_zero:
        code = EXIT_FINDINGS  # the pair was asked about: "maybe" fails it, as in check
    if output_format == "json":
        data = report.to_json()
        data["pairing"] = analysis.to_json(pairing, verdict)
        return json.dumps(data, indent=2) + "\n", code
    body = show(report)
    if output_format != "text":
        return body, code
    return summary_table(analysis, pairing, verdict) + body, code


def _taps_unread(analysis: Analysis) -> str | None:
    """Why the layers the runner taps are unknown (no ids in the config, and the target's
    default getter not readable), when the drafter uses aux states; else None."""
    if not analysis.checked or not analysis.uses_aux or analysis.translated.architecture is None:
        return None
    if analysis.ids_of(analysis.chosen) is not None:
        return None
    return (
        f"the layers {analysis.target_arch} taps: the draft config holds no ids and its "
        "default getter could not be read"
    )


def _taps(analysis: Analysis, request: RunnerRequest | None) -> str:
    """`[33, 18, 2] → 2→out of layer 1, …  (from <key>, in layer order)` for one runner."""
    ids = analysis.ids_of(request)
    if ids is None:
        return "unknown (no ids, default not readable)"
    captured = analysis.captured(ids)
    where = f"from {request.source}" if request is not None and request.ids else "target default"
    raw = f"{analysis.listed(ids)} → " if captured != list(ids) else ""
    order = ", in layer order" if raw else ""
    return f"{raw}{analysis.physical(captured)}  ({where}{order})"


def summary_table(analysis: Analysis, pairing: DraftPairing, verdict: str) -> str:
    """The short table `pair`'s text output leads with."""
    summary = Summary()
    row = summary.row
    drafter = analysis.translated.architecture or "refused by the translation"
    if analysis.declared_arch and analysis.declared_arch != drafter:
        drafter = f"{analysis.declared_arch} → {drafter}"

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
        return summary.printed()
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
    if analysis.served is not None and analysis.draft_positions is not None:
        served = analysis.served
        row(
            "context",
            f"served {served.length} ({served.source}), draft {analysis.draft_positions} positions",
        )
    if pairing.pipeline_size > 1:
        row("pipeline", f"{pairing.pipeline_size} ranks")
    row("verdict", verdict)
    return summary.printed()
