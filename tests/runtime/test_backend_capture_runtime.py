"""The Transformers backend's capture path (EAG421-EAG424) held against what it really records.

`backend_capture.py`, run by the release's own venv, builds a tiny random model of each
model_type with the transformers vLLM installs, calls the release's own
`set_aux_hidden_state_layers` and runs the model as the backend's forward does; eagle3lint
judges the same model_type statically (`check --arch <backend class> --model-type <type>`).
The sample: the model_types of every registered backend target of 0.33.0, and probes for each
way capture fails (BLOOM and CodeGen record nothing, Jamba mixes layer classes, LongcatFlash
derives `num_hidden_layers`, Llava, Gemma 3 and Mistral 3 are composites whose language model
records for itself).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from runtime import installed_tree
from venvs import install

from eagle3lint.engine import CheckOptions, run_check
from eagle3lint.engines.vllm.hf_models import auto_mappings

ORACLE = Path(__file__).resolve().parent / "backend_capture.py"
RELEASE = "0.33.0"
LAYERS, IDS = 6, [2, 3, 5]
PROBES = ("bloom", "codegen", "jamba", "longcat_flash", "llava", "gemma3", "mistral3", "llama")
CAPTURE_CODES = ("EAG421", "EAG422", "EAG423", "EAG424")
TEXT, MULTIMODAL = "TransformersForCausalLM", "TransformersMultiModalForCausalLM"


def ask(version: str, types: list[str]) -> dict[str, dict[str, Any]]:
    """The oracle's answer for each of `types`, from release `version`'s venv."""
    done = subprocess.run(
        [str(install(version)), str(ORACLE)],
        input=json.dumps({"types": types, "layers": LAYERS, "ids": IDS}),
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    answers = {}
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            answer = json.loads(line)
            answers[answer["type"]] = answer
    assert answers, done.stderr[-3000:]
    return answers


def judged(version: str, model_type: str, arch: str) -> set[str]:
    """The capture codes eagle3lint reports for `arch` built with `model_type`."""
    options = CheckOptions(
        paths=[installed_tree(version)], archs=[arch], model_type=model_type, require=["*"]
    )
    report = run_check(options).report
    [target] = [t for t in report.targets if t.arch == arch]
    return {f.code for f in target.findings if f.code in CAPTURE_CODES}


def expected_outcomes(codes: set[str]) -> set[str]:
    """What the backend records, as eagle3lint's findings predict it for `IDS`."""
    if "EAG421" in codes:
        return {"ImportError"}
    if "EAG423" in codes:
        return {"KeyError"}
    if "EAG422" in codes:
        return {"records-nothing"}
    if "EAG424" in codes:
        # A requested layer of another class records an empty tuple: the backend's `x[0]`.
        return {"IndexError", *(f"records {k} of {len(IDS)}" for k in range(len(IDS)))}
    return {"records"}


@pytest.fixture(scope="module")
def registered_types() -> dict[str, str]:
    """model_type → architecture, for the registered backend targets of RELEASE whose name
    gives a model_type."""
    install(RELEASE)
    report = run_check(CheckOptions(paths=[installed_tree(RELEASE)], require=["*"])).report
    run = run_check(CheckOptions(paths=[installed_tree(RELEASE)], archs=[TEXT]))
    mappings = auto_mappings(run.index)
    assert not isinstance(mappings, str), mappings
    return {
        mappings.model_types[t.arch]: t.arch
        for t in report.targets
        if t.is_target and t.cls.startswith("Transformers") and t.arch in mappings.model_types
    }


def test_backend_capture_agrees_with_what_the_backend_records(
    registered_types: dict[str, str],
) -> None:
    types = sorted({*registered_types, *PROBES})
    answers = ask(RELEASE, types)
    decided, disagreements, seen = 0, [], set()
    for model_type in types:
        answer = answers.get(model_type, {"outcome": "unanswered"})
        if answer["outcome"] in ("unbuilt", "unanswered"):
            continue  # a tiny model of this type cannot be built on CPU here
        arch = MULTIMODAL if answer["composite"] else TEXT
        codes = judged(RELEASE, model_type, arch)
        decided += 1
        seen |= codes or {"ready"}
        if answer["outcome"] not in expected_outcomes(codes):
            disagreements.append(f"{model_type}: eagle3lint {sorted(codes)}, vLLM {answer}")
    print(f"{decided} of {len(types)} model_types decided on {RELEASE}")
    assert not disagreements, "\n".join(disagreements)
    # Every outcome the rule predicts was met: the comparison cannot pass by deciding nothing.
    assert {"ready", "EAG422", "EAG423", "EAG424"} <= seen, seen
    assert decided >= len(PROBES) + 10


def test_transformers_4_cannot_capture_on_0_16(registered_types: dict[str, str]) -> None:
    """vLLM 0.16.0 requires transformers<5 and its backend checks for 5.0.0 before capturing."""
    install("0.16.0")
    assert ask("0.16.0", ["llama"])["llama"]["outcome"] == "ImportError"
    assert judged("0.16.0", "llama", TEXT) == {"EAG421"}
