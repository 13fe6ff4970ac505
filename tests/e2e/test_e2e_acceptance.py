"""`pair`'s silent-trap findings held against measured acceptance on vLLM's CPU build.

A target and a head made to agree (`tiny_acceptance`: both emit one token at every step) accept
every draft the drafter makes, and none where the runner drafts nothing. So a finding that says
"no drafts past N" must come with acceptance collapsing at a prompt longer than N, and no
finding with nearly every draft accepted. Issue 54: the draft's `max_position_embeddings` below
the served context (EAG644), on model runner V1, the only runner the CPU build runs.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from builds import Release
from runs import record
from tiny_acceptance import MAX_MODEL_LEN
from venvs import CPU_BUILD_RELEASES

PROMPT = 100
"""Tokens of the prompt: past the short head's positions, within the long head's."""
HEADS = (("head-within-the-context", 512), ("head-below-the-context", 64))
RELEASES = ("0.25.0", "0.32.0")
"""The CPU builds that run speculative decoding and report its counters."""


def _cases() -> list[object]:
    return [
        pytest.param(version, name, positions, id=f"{version}-{name}")
        for version in CPU_BUILD_RELEASES
        if version in RELEASES
        for name, positions in HEADS
    ]


@pytest.mark.parametrize(("release", "name", "positions"), _cases(), indirect=["release"])
def test_context_finding_iff_acceptance_collapses(
    release: Release, name: str, positions: int
) -> None:
    bench = release.bench
    target = bench.target("LlamaForCausalLM")
    head = bench.head(target, config={"max_position_embeddings": positions})
    command = ["pair", str(release.tree), "--target", str(target), "--draft", str(head)]
    command += ["--max-model-len", str(MAX_MODEL_LEN), "--format", "json"]
    paired = subprocess.run(
        [sys.executable, "-m", "eagle3lint", *command], capture_output=True, text=True, check=False
    )
    assert paired.returncode in (0, 1), paired.stderr[-3000:]
    report = json.loads(paired.stdout)
    found = [f for t in report["targets"] for f in t["findings"] if f["code"] == "EAG644"]

    run = bench.acceptance(target, head, PROMPT)
    assert "error" not in run, run
    # Both runs draft at every step (real drafts, or V1's placeholder ids 0): the counters
    # measure acceptance, not whether speculation was configured.
    assert run["draft_tokens"] > 0, run
    rate = run["accepted_tokens"] / run["draft_tokens"]
    collapsed = rate < 0.5
    said = f"EAG644 {found[0]['severity']}" if found else "no EAG644"
    measured = (
        f"{run['accepted_tokens']} of {run['draft_tokens']} draft tokens accepted ({rate:.0%}); "
        f"prompt {PROMPT} tokens, head {positions} positions, served {MAX_MODEL_LEN}"
    )
    assert bool(found) == collapsed, f"{name} on {release.version}: {said}; {measured}"
    assert rate in (0.0, 1.0), f"agreement by construction is all or nothing: {measured}"
    record(release.version, "acceptance", name, "agree", said, measured)
