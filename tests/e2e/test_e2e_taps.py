"""A tap one layer off, in a real run: the check of the aux states vLLM hands the EAGLE-3 head
(`judge.taps`, which test_e2e_verdicts.py and test_e2e_repairs.py apply) fails where the tokens
cannot tell.

Llama's decoder, laid over the installed package (`overlay/sitecustomize.py`) with its tap
moved from the output of layer k - 1 to that of layer k - 2 for aux id k, still runs EAGLE-3 and
still gives the plain run's tokens (greedy decoding is lossless whatever the head is fed); the
states it hands the head are transformers' `hidden_states` one entry early, and the check says
so.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from builds import Release
from judge import TAP_TOLERANCE, default_taps, tap_error, taps
from venvs import CPU_BUILD_RELEASES

TAP = "aux_hidden_states, idx + 1, hidden_states, residual"
"""Llama's tap after each layer (`_maybe_add_hidden_state(..., idx + 1, ...)`: the state
entering layer idx + 1), in the releases of `TAP_RELEASES`."""
TAP_RELEASES = ("0.32.0",)
"""The CPU builds this runs on: one is enough to show the check can fail (a vLLM start each)."""


@pytest.mark.parametrize(
    "release", [v for v in CPU_BUILD_RELEASES if v in TAP_RELEASES], indirect=True
)
def test_a_tap_one_layer_off_fails_the_check_not_the_tokens(
    release: Release, tmp_path: Path
) -> None:
    bench = release.bench
    target = bench.target("LlamaForCausalLM")
    source = (release.tree / "model_executor" / "models" / "llama.py").read_text()
    assert source.count(TAP) == 1, "llama.py's tap is not where this test moves it from"
    moved = tmp_path / "overlay" / "vllm" / "model_executor" / "models" / "llama.py"
    moved.parent.mkdir(parents=True)
    moved.write_text(source.replace(TAP, TAP.replace("idx + 1", "idx + 2")))

    plain = bench.generate(target)
    speculative = bench.generate(target, bench.head(target), overlay=tmp_path / "overlay")
    assert speculative.overlaid == ["vllm.model_executor.models.llama"], speculative.overlaid
    assert speculative.ran, speculative.describe()
    assert speculative.tokens == plain.tokens
    assert speculative.drafts is None or speculative.drafts > 0

    reference = bench.hidden_states(target)
    ids = default_taps(len(reference[0]) - 1)
    held, found = taps(speculative, reference, ids)
    assert not held, found
    assert found.startswith("aux states off"), found
    # What the head got instead: the entries one layer early.
    assert tap_error(speculative.aux or {}, reference, [k - 1 for k in ids]) <= TAP_TOLERANCE
