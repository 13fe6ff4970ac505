"""The aux states vLLM hands an EAGLE-3 head are held to transformers' `hidden_states`
(`judge.taps`): the states of the right layers pass, those of a tap one layer off fail, and a
reference whose neighbouring layers are alike decides nothing. The runs themselves are in
test_e2e_verdicts.py and test_e2e_repairs.py; these need no vLLM."""

from __future__ import annotations

import random

from judge import TAP_TOLERANCE, default_taps, tap_error, taps
from runs import Outcome
from tiny_generate import PROMPTS

LAYERS = 8
WIDTH = 4


def _reference(alike: bool = False) -> list[list[list[list[float]]]]:
    """transformers' `hidden_states` as `Workbench.hidden_states` gives them: per prompt, per
    entry (the embeddings, then each layer's output), per position; random, or the same in every
    entry (`alike`)."""
    rng = random.Random(0)
    rows = [[[rng.uniform(-500, 500) for _ in range(WIDTH)] for _ in p] for p in PROMPTS]
    return [
        [
            rows[p] if alike else [[rng.uniform(-500, 500) for _ in range(WIDTH)] for _ in prompt]
            for _ in range(LAYERS + 1)
        ]
        for p, prompt in enumerate(PROMPTS)
    ]


def _handed(reference: list[list[list[list[float]]]], taps_at: list[int]) -> Outcome:
    """A run whose proposer was handed the prefill's states of the entries `taps_at`, with a
    float32-sized error on each."""
    states = [
        [value * (1 + 1e-7) for k in taps_at for value in reference[p][k][position]]
        for p, prompt in enumerate(PROMPTS)
        for position in range(len(prompt))
    ]
    aux = {
        "tokens": [token for prompt in PROMPTS for token in prompt],
        "positions": [position for prompt in PROMPTS for position in range(len(prompt))],
        "states": states,
    }
    return Outcome([[1]], None, "v1", 1, [], aux)


def test_the_states_of_the_tapped_layers_pass() -> None:
    reference = _reference()
    ids = default_taps(LAYERS)
    held, found = taps(_handed(reference, list(ids)), reference, ids)
    assert held, found
    assert found.startswith("aux states = transformers' hidden_states[2, 4, 5]")


def test_a_tap_one_layer_off_fails() -> None:
    reference = _reference()
    ids = default_taps(LAYERS)
    for shift in (-1, 1):
        off = _handed(reference, [k + shift for k in ids])
        assert tap_error(off.aux or {}, reference, ids) > 1000 * TAP_TOLERANCE
        held, found = taps(off, reference, ids)
        assert not held
        assert "aux states off transformers' hidden_states[2, 4, 5]" in found


def test_the_head_gets_each_tap_once_in_increasing_order() -> None:
    reference = _reference()
    held, found = taps(_handed(reference, [1, 3, 5]), reference, (5, 3, 1, 3))
    assert held, found


def test_alike_layers_decide_nothing() -> None:
    reference = _reference(alike=True)
    ids = default_taps(LAYERS)
    held, found = taps(_handed(reference, list(ids)), reference, ids)
    assert not held
    assert found.endswith("no evidence")


def test_a_run_without_aux_states_fails() -> None:
    held, found = taps(Outcome([[1]], None, "v1", 1), _reference(), default_taps(LAYERS))
    assert (held, found) == (False, "the run recorded no aux states")
