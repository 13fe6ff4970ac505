"""`eagle3lint fix` proved by vLLM's CPU build: a blocked target, repaired as a user repairs it,
runs EAGLE-3 and gives exactly the unrepaired model's tokens.

For each sampled architecture of a CPU build: `eagle3lint fix --arch ARCH --hf-config
TARGET/config.json` on a copy of the installed package's Python files, then the changed files
are laid over the installed package (`overlay/sitecustomize.py`, in every process vLLM starts)
and the tiny target is generated three ways: unrepaired without EAGLE-3 (the reference),
repaired without EAGLE-3 (the repair must not change the model), and repaired with a random
EAGLE-3 head (it must run, its drafter must propose, greedy decoding makes its tokens the
reference's, and the aux states the head is handed are transformers' `hidden_states` of the
layers the repaired target taps by default: `judge.taps`).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from builds import Release
from judge import default_taps, ready_on_cpu, taps
from repairs import repair
from runs import CANNOT, record
from test_e2e_verdicts import limits, stopped
from venvs import CPU_BUILD_RELEASES

REPAIRS: dict[str, tuple[str, ...]] = {
    "0.16.0": ("DeepseekV3ForCausalLM", "KimiK25ForConditionalGeneration"),
    "0.25.0": ("GemmaForCausalLM",),
    "0.32.0": ("GemmaForCausalLM",),
}
"""Per release, blocked architectures whose repair is run end to end. Gemma's takes every
repair kind a plain decoder needs (SupportsEagle3, the aux-layer methods, the forward's taps).
The seed family on 0.16.0 takes the rest (the model-type gate in the speculative config, the
wrapper's delegation, the image token's name); that build runs no speculative decoding and no
MLA (test_e2e_verdicts.CANNOT_RUN_ON_CPU), so what is decided there is that the repaired run
gets past the gate that stopped the unrepaired one, to the CPU build's own limit."""


def _cases() -> list[tuple[str, str]]:
    return [(version, arch) for version in CPU_BUILD_RELEASES for arch in REPAIRS.get(version, ())]


@pytest.mark.parametrize(("release", "arch"), _cases(), indirect=["release"])
def test_a_repaired_target_runs_eagle3_with_the_same_tokens(
    release: Release, arch: str, tmp_path: Path
) -> None:
    bench = release.bench
    target = bench.target(arch)
    assert ready_on_cpu(release.verdict(arch, target)) is False, f"{arch} is not blocked"
    repaired = repair(release, arch, target, tmp_path)
    assert repaired.changed, f"fix changed nothing for {arch}:\n{repaired.output}"
    after = repaired.after
    assert ready_on_cpu(after), [f.code for f in after.findings]

    fixed_by = f"fix changed {', '.join(repaired.changed)}"
    overlay = repaired.overlay
    limit = limits(release.version, arch)
    reference = bench.generate(target)
    assert reference.ran or stopped(reference, limit), reference.describe()
    plain = bench.generate(target, overlay=overlay)
    assert (plain.tokens, plain.raised()) == (reference.tokens, reference.raised()), (
        plain.describe()
    )
    speculative = bench.generate(target, bench.head(target), overlay=overlay)
    if stopped(speculative, limit):
        before = bench.generate(target, bench.head(target))
        assert not stopped(before, limit), f"{arch} unrepaired: {before.describe()}"
        did = f"unrepaired: {before.describe()}; repaired: {speculative.describe()}"
        record(release.version, "repair", arch, CANNOT, fixed_by, did)
        return
    assert set(plain.overlaid or []) >= set(repaired.changed), (plain.overlaid, repaired.changed)
    assert speculative.ran, f"{arch} repaired on {release.version}: {speculative.describe()}"
    assert speculative.tokens == reference.tokens
    assert speculative.drafts is None or speculative.drafts > 0
    # The repair wrote the taps into the model's forward: where they sit decides which states the
    # head gets, which the tokens cannot show.
    reference = bench.hidden_states(target)
    held, found = taps(speculative, reference, default_taps(len(reference[0]) - 1))
    assert held, f"{arch} repaired on {release.version}: {found}"
    did = (
        f"repaired: ran ({speculative.runner}), {speculative.drafts} drafts, the same tokens; "
        + found
    )
    record(release.version, "repair", arch, "agree", fixed_by, did)
