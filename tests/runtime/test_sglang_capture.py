"""`pair`'s reading of each SGLang target's capture method against the method itself.

For each release of `venvs.SGLANG_RELEASES`, every target whose own class defines
`set_eagle3_layers_to_capture` (a wrapper that hands the ids to its language model, and a
model whose class is not read, are named, not compared) is asked, through
`sglang_capture_proof.py`, what SGLang's code makes of no ids, of ids ending at the last layer
(L - 1) and of ids ending at L. eagle3lint's `layers_to_capture` must be what the method sets,
and its start-up IndexError (SGL202) must be predicted exactly where the method raises one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from runtime import in_venv
from venvs import SGLANG, SGLANG_RELEASES, install, installed_package

from eagle3lint.engine import CheckOptions, run_check
from eagle3lint.engines import Role
from eagle3lint.engines.sglang.pairing import (
    UNREAD,
    SglangAnalysis,
    SglangPairing,
    analyse,
    read_capture,
)
from eagle3lint.engines.sglang.targets import SglangTarget

PROOF = Path(__file__).resolve().parent / "sglang_capture_proof.py"
LAYERS = 12
IDS: tuple[list[int] | None, ...] = (None, [1, 6, LAYERS - 1], [1, 6, LAYERS])


def _prediction(target: SglangTarget, ids: list[int] | None) -> SglangAnalysis:
    draft: dict[str, Any] = {"architectures": ["LlamaForCausalLMEagle3"]}
    if ids is not None:
        draft["eagle_config"] = {"eagle_aux_hidden_state_layer_ids": ids}
    config = {"architectures": [target.arch], "num_hidden_layers": LAYERS}
    return analyse(SglangPairing(Path("head"), draft, Path("target"), config), target)


@pytest.mark.parametrize("version", SGLANG_RELEASES)
def test_pair_reads_every_capture_method_as_sglang_runs_it(version: str) -> None:
    python = install(version, SGLANG)
    run = run_check(CheckOptions(paths=[installed_package(version, SGLANG)], require=["*"]))
    cases, delegated = [], []
    for target in run.targets:
        if target.role is not Role.TARGET or target.capture is None:
            continue
        reading = read_capture(target)
        if reading.owner != target.capture.owner.name or reading.convention == UNREAD:
            delegated.append(target.arch)
            continue
        decoder = reading.decoder
        for ids in IDS:
            request = {
                "module": target.ref.file.module,
                "class": target.ref.name,
                "decoder_module": decoder.file.module if decoder else None,
                "decoder_class": decoder.name if decoder else None,
                "layers": LAYERS,
                "ids": ids,
            }
            cases.append((target, ids, request))
    answers = in_venv(python, PROOF, [r for _, _, r in cases], timeout=1800, cwd=PROOF.parent)
    compared, not_run, disagreements = 0, {}, []
    for (target, ids, _), answer in zip(cases, answers, strict=True):
        if "not_run" in answer:
            not_run[target.arch] = answer["not_run"]
            continue
        compared += 1
        ours = _prediction(target, ids)
        if "error" in answer:
            if not (ours.out_of_range and answer["error"].startswith("IndexError")):
                disagreements.append(
                    f"{target.arch} {ids}: SGLang {answer['error']}, ours {ours.captured}"
                )
        elif ours.out_of_range or ours.captured != answer["captured"]:
            disagreements.append(
                f"{target.arch} {ids}: SGLang {answer['captured']}, ours {ours.captured} "
                f"(IndexError predicted on {ours.out_of_range})"
            )
    assert disagreements == [], "\n".join(disagreements)
    assert not_run == {}
    # Most targets' own class reads the ids; the wrappers that hand them to their language
    # model, and MindSpore's (whose model class is not read), are few.
    assert compared >= 3 * 15, compared
    assert set(delegated) <= WRAPPERS, delegated


WRAPPERS = {
    "KimiK25ForConditionalGeneration",
    "Llama4ForConditionalGeneration",
    "Gemma3ForConditionalGeneration",
    "MindSporeForCausalLM",
}
