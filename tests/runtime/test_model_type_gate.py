"""The speculative config's model-type gate (the seed case's first crash) as vLLM's own
`SpeculativeConfig` decides it, before and after `eagle3lint fix`.

For each release of `RELEASES`, a Llama, a Gemma, a DeepSeek-V3 and a Kimi-K2.5 target
(config.json only; Kimi-K2.5's text config says `model_type: kimi_k2`) are paired with an
EAGLE-3 head: vLLM refuses a target exactly when eagle3lint reports EAG501 for it, and both name
the same model type. Each refused target is then repaired by `eagle3lint fix --arch ARCH
--hf-config` on a copy of the installed package's Python files, and vLLM, importing the fixed
copy first, accepts it. This is the seed family's end-to-end evidence: vLLM's CPU build of those
releases refuses any speculative config in its model runner (`judge.cpu_limited`), so what it
could show past the gate is what this test shows without a model load.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from runtime import in_venv, installed_tree
from test_method_choice import EAGLE_HEAD, METHOD_CHOICE, TARGET, TIMEOUT
from typer.testing import CliRunner
from venvs import copy_python_files, install

from eagle3lint.cli import app

RELEASES = ("0.16.0", "0.25.0")
"""The seed release, whose allow-list refuses DeepSeek-V3 and Kimi-K2.5, and one without the
gate (gone from 0.22), where all are accepted."""

GATE = "EAG501"
GEMMA = {**TARGET, "architectures": ["GemmaForCausalLM"], "model_type": "gemma", "head_dim": 32}
DEEPSEEK_V3 = {
    **TARGET,
    "architectures": ["DeepseekV3ForCausalLM"],
    "model_type": "deepseek_v3",
    "num_hidden_layers": 4,
    "num_key_value_heads": 4,
    "kv_lora_rank": 32,
    "q_lora_rank": 64,
    "qk_rope_head_dim": 16,
    "qk_nope_head_dim": 16,
    "v_head_dim": 32,
    "n_routed_experts": 4,
    "num_experts_per_tok": 2,
    "moe_intermediate_size": 64,
    "n_group": 1,
    "topk_group": 1,
    "first_k_dense_replace": 1,
    "n_shared_experts": 1,
}
KIMI_K25 = {
    "architectures": ["KimiK25ForConditionalGeneration"],
    "model_type": "kimi_k25",
    "text_config": {**DEEPSEEK_V3, "model_type": "kimi_k2"},
    "vision_config": {
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_attention_heads": 2,
        "num_hidden_layers": 2,
        "mm_hidden_size": 64,
    },
    "media_placeholder_token_id": TARGET["vocab_size"] - 1,
}
TARGETS: dict[str, dict[str, Any]] = {
    "llama": TARGET,
    "gemma": GEMMA,
    "deepseek": DEEPSEEK_V3,
    "kimi": KIMI_K25,
}


def _model_type(config: dict[str, Any]) -> str:
    return str(config.get("text_config", config)["model_type"])


def _write_folders(root: Path) -> None:
    for name, config in {**TARGETS, "head": EAGLE_HEAD}.items():
        (root / name).mkdir()
        (root / name / "config.json").write_text(json.dumps(config))


def _vllm(python: Path, root: Path, names: list[str], fixed: Path | None) -> dict[str, str | None]:
    """Target folder → vLLM's refusal (None when it accepts the EAGLE-3 head)."""
    request = {"target": names[0], "cases": [["head", "eagle3", name] for name in names]}
    answers = in_venv(python, METHOD_CHOICE, request, timeout=TIMEOUT, packages=fixed, cwd=root)
    assert len(answers) == len(names), answers
    return {name: answer.get("error") for name, answer in zip(names, answers, strict=True)}


def _gate_findings(tree: Path, root: Path, name: str) -> list[str]:
    """eagle3lint's EAG501 messages for target `name` of `tree`."""
    arch = TARGETS[name]["architectures"][0]
    config = str(root / name / "config.json")
    args = ["check", str(tree), "--arch", arch, "--hf-config", config, "--format", "json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code in (0, 1), result.output
    report = json.loads(result.stdout)
    return [
        f["message"]
        for t in report["targets"]
        for f in t["findings"]
        if f["code"] == GATE and f["severity"] == "error"
    ]


def _disagreement(name: str, refusal: str | None, gate: list[str]) -> str | None:
    model_type = _model_type(TARGETS[name])
    if refusal is None:
        return f"vLLM accepts it, eagle3lint: {gate}" if gate else None
    if not gate:
        return f"vLLM refuses it ({refusal}), eagle3lint reports no {GATE}"
    if f"'{model_type}'" not in refusal or not any(f"'{model_type}'" in g for g in gate):
        return f"vLLM: {refusal}; eagle3lint: {gate} (both should name {model_type!r})"
    return None


@pytest.mark.parametrize("version", RELEASES)
def test_the_model_type_gate_refuses_what_eagle3lint_says_and_fix_opens_it(
    version: str, tmp_path: Path
) -> None:
    python = install(version)
    _write_folders(tmp_path)
    names = list(TARGETS)
    tree = installed_tree(version)
    refusals = _vllm(python, tmp_path, names, None)
    different = [
        f"{name}: {problem}"
        for name in names
        if (problem := _disagreement(name, refusals[name], _gate_findings(tree, tmp_path, name)))
    ]
    assert not different, "\n".join(different)

    refused = [name for name in names if refusals[name] is not None]
    if not refused:
        return
    fixed = tmp_path / "fixed"
    copy_python_files(tree, fixed / "vllm")
    for name in refused:
        arch = TARGETS[name]["architectures"][0]
        config = str(tmp_path / name / "config.json")
        result = CliRunner().invoke(
            app, ["fix", str(fixed / "vllm"), "--arch", arch, "--hf-config", config]
        )
        assert result.exit_code == 0, result.output
        assert not _gate_findings(fixed / "vllm", tmp_path, name), f"{name}: fix left {GATE}"
    after = _vllm(python, tmp_path, refused, fixed)
    assert after == dict.fromkeys(refused), after
