"""The speculative method `pair` says a release runs a draft with is the one vLLM's own
`SpeculativeConfig` chooses, every config vLLM refuses is an error finding of `pair`, and the
layer ids `pair` says each model runner requests are the ones that runner's own reader returns.

For each release of `RELEASES` (its venv installed once, `venvs.py`), the cases below are draft
folders (config.json only) named so that the model string does or does not hold vLLM's clues
(`eagle-`, `eagle3`), with and without a configured method, in both config formats and with
speculators types the release loads, refuses or does not know. `method_choice.py`, run by the
release's interpreter, builds vLLM's `SpeculativeConfig` for each as `vllm serve
--speculative-config` does; eagle3lint runs `pair --speculative-config` with the same JSON on
the installed `vllm` package. The folders are given as relative paths from a working folder of
their own: vLLM tests the whole model string, and pytest's folder names could hold a clue.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from runtime import in_venv, installed_tree
from typer.testing import CliRunner
from venvs import install

from eagle3lint.cli import app

METHOD_CHOICE = Path(__file__).resolve().parent / "method_choice.py"
TIMEOUT = 1800
RELEASES = ("0.16.0", "0.25.0", "0.33.0", "0.34.0")
"""Before `draft_model` was the fallback (0.16), the elif chain with it (0.25, 0.33), and
0.34's detection order with drafts that declare their method."""

TARGET = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 128,
    "intermediate_size": 256,
    "num_hidden_layers": 8,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 1024,
    "max_position_embeddings": 512,
    "torch_dtype": "float32",
}
LAYER = {**TARGET, "num_hidden_layers": 1}
EAGLE_HEAD = {**LAYER, "architectures": ["LlamaForCausalLMEagle3"]}
DFLASH_HEAD = {
    **LAYER,
    "architectures": ["DFlashDraftModel"],
    "model_type": "qwen3",
    "num_hidden_layers": 2,
    "head_dim": 32,
    "block_size": 4,
    "dflash_config": {"target_layer_ids": [0, 3, 6], "mask_token_id": 5},
}
DSPARK_HEAD = {
    **LAYER,
    "architectures": ["Qwen3DSparkModel"],
    "model_type": "qwen3",
    "num_hidden_layers": 3,
    "head_dim": 32,
    "block_size": 4,
    "mask_token_id": 5,
    "markov_rank": 8,
    "target_layer_ids": [0, 3, 6],
}


def speculators(kind: str, model_type: str = "llama", **top: Any) -> dict[str, Any]:
    return {
        "architectures": ["Eagle3Speculator"],
        "speculators_model_type": kind,
        "draft_vocab_size": 1024,
        "target_hidden_size": 128,
        "eagle_aux_hidden_state_layer_ids": [2, 4, 5],
        "transformer_layer_config": {
            **LAYER,
            "architectures": ["LlamaForCausalLM"],
            "model_type": model_type,
        },
        "speculators_config": {
            "proposal_methods": [{"proposal_type": "greedy", "speculative_tokens": 3}],
            "verifier": {"name_or_path": "target", "architectures": ["LlamaForCausalLM"]},
        },
        **top,
    }


FOLDERS: dict[str, dict[str, Any]] = {
    "my-head": EAGLE_HEAD,
    "EAGLE-3-head": EAGLE_HEAD,
    "llama-eagle3-head": EAGLE_HEAD,
    "spec-head": speculators("eagle3"),
    "spec-eagle3-head": speculators("eagle3"),
    "peagle-head": speculators("peagle", mask_token_id=5),
    "peagle-eagle3-head": speculators("peagle", mask_token_id=5),
    "unknown-eagle3-head": speculators("medusa2"),
    "qwen2-eagle3-head": speculators("eagle3", "qwen2"),
    # Where the ids are: each runner reads its own places (0.25: V2 only the top level).
    "ids-top-head": {**EAGLE_HEAD, "eagle_aux_hidden_state_layer_ids": [1, 3, 5]},
    "ids-sub-head": {**EAGLE_HEAD, "eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 3, 5]}},
    "ids-sub-layer-ids-head": {**EAGLE_HEAD, "eagle_config": {"layer_ids": [1, 3, 5]}},
    "dflash-head": DFLASH_HEAD,
    "dspark-head": DSPARK_HEAD,
}
CASES: list[tuple[str, str | None]] = [
    ("my-head", None),
    ("my-head", "eagle3"),
    ("my-head", "eagle"),
    ("my-head", "draft_model"),
    ("EAGLE-3-head", None),
    ("llama-eagle3-head", None),
    ("spec-head", None),
    ("spec-head", "eagle3"),
    ("spec-eagle3-head", None),
    ("peagle-head", "eagle3"),
    ("peagle-eagle3-head", None),
    ("unknown-eagle3-head", None),
    ("qwen2-eagle3-head", "eagle3"),
    ("ids-top-head", "eagle3"),
    ("ids-sub-head", "eagle3"),
    ("ids-sub-layer-ids-head", "eagle3"),
    ("dflash-head", None),
    ("dspark-head", None),
]


def _write_folders(root: Path) -> None:
    (root / "target").mkdir()
    (root / "target" / "config.json").write_text(json.dumps(TARGET))
    for name, config in FOLDERS.items():
        (root / name).mkdir()
        (root / name / "config.json").write_text(json.dumps(config))


def _vllm(python: Path, root: Path) -> dict[tuple[str, str | None], dict[str, Any]]:
    request = {"target": "target", "cases": CASES}
    answers = in_venv(python, METHOD_CHOICE, request, timeout=TIMEOUT, cwd=root)
    assert len(answers) == len(CASES), answers
    return {(a["model"], a["method"]): a for a in answers}


def _pair(tree: Path, model: str, method: str | None) -> dict[str, Any]:
    settings = {"model": model, "num_speculative_tokens": 3}
    if method is not None:
        settings["method"] = method
    args = ["pair", str(tree), "--target", "target", "--speculative-config", json.dumps(settings)]
    result = CliRunner().invoke(app, [*args, "--format", "json"])
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


def _disagreement(answer: dict[str, Any], report: dict[str, Any]) -> str | None:
    ours = report["pairing"]["method"]
    refusals = [
        f["message"]
        for t in report["targets"]
        for f in t["findings"]
        if f["code"] in ("EAG601", "EAG602") and f["severity"] == "error"
    ]
    if "chosen" in answer:
        if ours["name"] != answer["chosen"]:
            return f"vLLM chooses {answer['chosen']}, eagle3lint {ours}"
        unregistered = [m for m in refusals if "EAG601" in m or "not registered" in m]
        if unregistered:
            return f"vLLM accepts it, eagle3lint: {unregistered}"
        said = {r["runner"].rsplit(" ", 1)[-1]: r["ids"] for r in report["pairing"]["layer_ids"]}
        for runner, ids in (answer.get("layer_ids") or {}).items():
            if said.get(runner, "not read") != ids:
                return f"model runner {runner} reads {ids}, eagle3lint says {said.get(runner)}"
        return None
    error = answer["error"]
    if not refusals:
        return f"vLLM refuses it ({error}), eagle3lint reports no EAG601/EAG602 error"
    arch = re.search(r"architectures \['(\w+)'\]", error)
    if arch is not None:
        wanted = arch.group(1)
    elif "Expected one of" in error:
        wanted = "is not one this release loads"
    else:
        wanted = error.split(": ", 1)[1].split(" [type=")[0]
    if not any(wanted in message for message in refusals):
        return f"vLLM: {error}; eagle3lint: {refusals} (without {wanted!r})"
    return None


@pytest.mark.parametrize("version", RELEASES)
def test_pair_chooses_the_method_vllm_chooses(
    version: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    python = install(version)
    _write_folders(tmp_path)
    answers = _vllm(python, tmp_path)
    monkeypatch.chdir(tmp_path)
    tree = installed_tree(version)
    rows, different = [], []
    for model, method in CASES:
        answer = answers[(model, method)]
        report = _pair(tree, model, method)
        problem = _disagreement(answer, report)
        vllm = answer.get("chosen") or answer["error"][:70]
        rows.append(f"  {model:22} {method!s:12} vLLM {vllm:72} {'' if problem else 'agree'}")
        if problem:
            different.append(f"{model} {method}: {problem}")
    print(f"vLLM {version}:\n" + "\n".join(rows))
    assert not different, "\n".join(different)
