"""`eagle3lint pair` on an SGLang tree: the target's check with the sglang-pairing rule, led by
the layers SGLang taps for the head (and those vLLM would tap for the same ids)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from eagle3lint.commands.check import View, render
from eagle3lint.commands.options import OutputFormat
from eagle3lint.commands.pair_summary import verdict_of
from eagle3lint.report.terminal import Terminal

if TYPE_CHECKING:
    from eagle3lint.engine import CheckOptions


def installed(engine: str, options: CheckOptions) -> list[Path]:
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


def is_sglang(options: CheckOptions) -> bool:
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
    table = _sglang_table(pairing, report.contract.version, verdict_of(report, None))
    return table + body, report.exit_code(exit_zero)


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


def _sglang_table(pairing: object, version: str | None, verdict: str) -> str:
    from eagle3lint.commands.pair_summary import Summary
    from eagle3lint.engines.sglang.pairing import SglangPairing

    assert isinstance(pairing, SglangPairing) and pairing.analysis is not None
    analysis = pairing.analysis
    summary = Summary()
    row = summary.row

    def layers(outputs: list[int]) -> str:
        return analysis.layers_listed(outputs, "out of layer ", brackets=False)

    row("target", f"{pairing.target_architecture()} ({analysis.layers} layers)")
    row("release", f"SGLang {version or '(version unknown)'}")
    if analysis.ids is not None:
        ids = analysis.listed(analysis.ids)
        source = f'{ids} from eagle_config["eagle_aux_hidden_state_layer_ids"]'
    else:
        source = "none under eagle_config: the target's default [2, L // 2, L - 3]"
    row("ids", source)
    row("convention", f"{analysis.convention} ({analysis.convention_owner})")
    if analysis.read:
        row("taps", f"{analysis.listed(analysis.captured)} → {layers(analysis.outputs)}")
    else:
        row("taps", "not known: the ids go to a model class not read")
    vllm = analysis.vllm_outputs()
    if vllm is not None:
        same = " (the same)" if vllm == analysis.outputs else ""
        row("in vLLM", f"{layers(vllm)}{same}")
    row("verdict", verdict)
    return summary.printed()
