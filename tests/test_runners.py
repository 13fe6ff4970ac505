"""The model runner a verdict follows, and the methods the target contract gates (issue 28).

The selection shapes of `config/vllm.py` are written here in small trees of our own, one per
shape vLLM has had; each has a test on the real release that has it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from eagle3lint.cli import app
from eagle3lint.engines.vllm.contract.model import V1, V2, Runners
from eagle3lint.engines.vllm.contract.runners import (
    SELECTION,
    V1_RUNNER,
    V2_EAGLE3,
    V2_RUNNER,
    read_methods,
    read_runners,
)
from eagle3lint.engines.vllm.contract.setup import Setup

runner = CliRunner()

V1_BRANCHES = """
class GPUModelRunner:
    def __init__(self):
        self.use_aux_hidden_state_outputs = False
        if self.speculative_config.use_dflash():
            self.use_aux_hidden_state_outputs = True
        elif self.speculative_config.use_eagle():
            if self.speculative_config.method == "eagle3":
                self.use_aux_hidden_state_outputs = (
                    self.drafter.eagle3_use_aux_hidden_state
                )
        elif self.speculative_config.method == "medusa":
            self.use_aux_hidden_state_outputs = False
"""
SPECULATIVE = """
class SpeculativeConfig:
    def use_dflash(self) -> bool:
        return self.method in ("dflash",)

    def use_eagle(self) -> bool:
        return self.method in ("eagle", "eagle3", "mtp")
"""
LISTED = """
DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES = frozenset({"Qwen3ForCausalLM", "LlamaForCausalLM"})


class VllmConfig:
    @property
    def use_v2_model_runner(self) -> bool:
        if envs.VLLM_USE_V2_MODEL_RUNNER is not None:
            return envs.VLLM_USE_V2_MODEL_RUNNER
        if not self._is_default_v2_model_runner_model():
            return False
        if not HAS_TRITON:
            return False
        return not self._get_v2_model_runner_unsupported_features()

    def _is_default_v2_model_runner_model(self) -> bool:
        model_config = self.model_config
        if getattr(model_config, "is_hybrid", False):
            return False
        architectures = getattr(model_config, "architectures", [])
        return (
            any(arch in DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES for arch in architectures)
            {dense}
        )

    def _get_v2_model_runner_unsupported_features(self) -> list[str]:
        unsupported = []
        if speculative_config.method in ("ngram", "ngram_gpu"):
            unsupported.append("ngram/ngram_gpu speculative decoding")
        if speculative_config.parallel_drafting:
            unsupported.append("parallel drafting for EAGLE speculative decoding")
        return unsupported
"""
ALL = """
ROCM_DEFAULT_MRV1_ARCHITECTURES = frozenset(
    {"DeepseekV32ForCausalLM", "GlmMoeDsaForCausalLM"}
)


class VllmConfig:
    @property
    def use_v2_model_runner(self) -> bool:
        if current_platform.is_rocm():
            if any(arch in ROCM_DEFAULT_MRV1_ARCHITECTURES for arch in architectures):
                return False
        if not HAS_TRITON and not current_platform.is_unspecified():
            return False
        return True
"""
V2_AUX = """
def requires_aux_hidden_states(spec_config) -> bool:
    if spec_config.method == "eagle3":
        return True
    return spec_config.method in ("dflash", "dspark", "extract_hidden_states")


def verify_supports_aux_hidden_states_over_pp(model, method) -> None:
    if not getattr(inner, "supports_aux_hidden_states_over_pp", False):
        raise ValueError(f"{type(model).__name__} does not support {method}")
"""


def tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def read(path: Path) -> str | None:
    return path.read_text() if path.is_file() else None


def test_only_v1(tmp_path: Path) -> None:
    root = tree(tmp_path, {V1_RUNNER: V1_BRANCHES, "config/speculative.py": SPECULATIVE})
    runners = read_runners(root, read)
    assert runners == Runners((V1,), V1)
    assert read_methods(root, runners, read) == ("eagle3", "dflash")


def test_v2_opt_in_only(tmp_path: Path) -> None:
    root = tree(
        tmp_path, {V1_RUNNER: V1_BRANCHES, V2_RUNNER: "", SELECTION: "class VllmConfig: ..."}
    )
    runners = read_runners(root, read)
    assert runners is not None and runners.present == (V1, V2) and runners.default == V1
    assert runners.default_for("LlamaForCausalLM", moe=False, kinds=frozenset()) == V1


def test_listed_architectures_and_dense_models(tmp_path: Path) -> None:
    """0.25's shape: listed architectures, and any model without experts that is not hybrid."""
    root = tree(
        tmp_path,
        {
            V1_RUNNER: V1_BRANCHES,
            V2_RUNNER: "x = 1",
            SELECTION: LISTED.replace("{dense}", "or not model_config.is_moe"),
        },
    )
    runners = read_runners(root, read)
    assert runners is not None
    assert runners.v2_architectures == ("Qwen3ForCausalLM", "LlamaForCausalLM")
    assert runners.v2_for_dense and runners.v1_for_kinds == ("hybrid",)
    assert runners.v1_without_triton
    assert runners.v1_features == (
        "ngram/ngram_gpu speculative decoding",
        "parallel drafting for EAGLE speculative decoding",
    )
    pick = runners.default_for
    assert pick("Qwen3ForCausalLM", moe=True, kinds=frozenset()) == V2
    assert pick("GptOssForCausalLM", moe=True, kinds=frozenset()) == V1
    assert pick("GemmaForCausalLM", moe=False, kinds=frozenset()) == V2
    assert pick("LlamaForCausalLM", moe=False, kinds=frozenset({"hybrid"})) == V1
    assert "parallel drafting" in runners.when_v1()


def test_listed_architectures_only(tmp_path: Path) -> None:
    root = tree(
        tmp_path,
        {V1_RUNNER: V1_BRANCHES, V2_RUNNER: "x = 1", SELECTION: LISTED.replace("{dense}", "")},
    )
    runners = read_runners(root, read)
    assert runners is not None and not runners.v2_for_dense
    assert runners.default_for("GemmaForCausalLM", moe=False, kinds=frozenset()) == V1
    assert runners.default_for("LlamaForCausalLM", moe=False, kinds=frozenset()) == V2


def test_v2_for_all_with_rocm_exceptions(tmp_path: Path) -> None:
    root = tree(
        tmp_path, {V1_RUNNER: V1_BRANCHES, V2_RUNNER: "x = 1", SELECTION: ALL, V2_EAGLE3: V2_AUX}
    )
    runners = read_runners(root, read)
    assert runners is not None and runners.default == V2
    assert runners.rocm_v1_architectures == ("DeepseekV32ForCausalLM", "GlmMoeDsaForCausalLM")
    assert runners.v2_pp_needs_relay
    assert runners.default_for("DeepseekV32ForCausalLM", moe=True, kinds=frozenset()) == V2
    assert read_methods(root, runners, read) == (
        "eagle3",
        "dflash",
        "dspark",
        "extract_hidden_states",
    )


def test_v2_alone_with_speculator_configs(tmp_path: Path) -> None:
    """0.34's shape: no V1, and per-method configs saying whether they use aux states."""
    base = """
class SpeculatorConfig:
    base_method = None

    @property
    def uses_aux_hidden_states(self) -> bool:
        return False


class DraftModelSpeculatorConfig(SpeculatorConfig):
    pass
"""
    eagle = """
class EagleSpeculatorConfig(DraftModelSpeculatorConfig):
    base_method = "eagle"


class Eagle3SpeculatorConfig(EagleSpeculatorConfig):
    base_method = "eagle3"

    @property
    def uses_aux_hidden_states(self) -> bool:
        return self.eagle_config.get("use_aux_hidden_state", True)
"""
    dflash = """
class DFlashSpeculatorConfig(DraftModelSpeculatorConfig):
    base_method = "dflash"

    @property
    def uses_aux_hidden_states(self) -> bool:
        return True


class XPressSpeculatorConfig(DFlashSpeculatorConfig):
    speculator_class = "x"
"""
    folder = "v1/worker/gpu/spec_decode"
    root = tree(
        tmp_path,
        {
            V2_RUNNER: "x = 1",
            V2_EAGLE3: V2_AUX,
            f"{folder}/speculator_config.py": base,
            f"{folder}/eagle/config.py": eagle,
            f"{folder}/dflash/config.py": dflash,
        },
    )
    runners = read_runners(root, read)
    assert runners == Runners((V2,), V2, v2_pp_needs_relay=True)
    assert read_methods(root, runners, read) == (
        "eagle3",
        "dflash",
        "dspark",
        "extract_hidden_states",
    )


def test_no_runner_no_choice(tmp_path: Path) -> None:
    assert read_runners(tmp_path, read) is None


RELEASES = {
    # release: (present, default, listed, dense, methods)
    "0.16.0": ((V1, V2), V1, (), False, ("eagle3",)),
    "0.22.0": (
        (V1, V2),
        V1,
        ("Qwen3ForCausalLM",),
        False,
        ("eagle3", "dflash", "extract_hidden_states"),
    ),
    "0.25.0": (
        (V1, V2),
        V1,
        ("DeepseekV2ForCausalLM", "Qwen2MoeForCausalLM", "GraniteMoeForCausalLM"),
        True,
        ("eagle3", "dflash", "extract_hidden_states"),
    ),
    "0.33.0": ((V1, V2), V2, (), False, ("eagle3", "dflash", "dspark", "extract_hidden_states")),
    "0.34.0": ((V2,), V2, (), False, ("eagle3", "dflash", "dspark", "extract_hidden_states")),
}


@pytest.mark.parametrize("version", sorted(RELEASES))
def test_runner_facts_of_real_releases(version: str, vllm_release: Callable) -> None:
    present, default, listed, dense, methods = RELEASES[version]
    _, report = check("--vllm", version, "--arch", "LlamaForCausalLM")
    details = report["vllm"]["details"]
    assert details["runners"]["present"] == list(present)
    assert details["runners"]["default"] == default
    assert details["runners"]["v2_architectures"] == list(listed)
    assert details["runners"]["v2_for_dense"] is dense
    assert details["methods"] == list(methods)
    llama = report["targets"][0]
    assert llama["runner"] == (
        None if len(present) == 1 else (V2 if dense or default == V2 else V1)
    )


def check(*args: str) -> tuple[int, dict]:
    result = runner.invoke(app, ["check", *args, "--format", "json"])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)


@pytest.mark.parametrize(
    ("arch", "code", "under_v1"),
    [
        # Its config subclasses transformers' Qwen3VLConfig, read as 0.33.0 resolves it.
        ("Alpamayo2Super", "EAG401", False),
        ("Qwen3ASRForConditionalGeneration", "EAG401", False),
    ],
)
def test_0_33_v1_only_image_token_read_does_not_decide_the_v2_default(
    arch: str, code: str, under_v1: bool | None, vllm_release: Callable
) -> None:
    """The image-token read lives only in V1's proposer; V2 runs these targets by default, so
    they are ready (blocked, or unverified, only under V1)."""
    exit_code, report = check("--vllm", "0.33.0", "--arch", arch)
    target = report["targets"][0]
    assert exit_code == 0
    assert target["eagle3_ready"] is True and target["runner"] == V2
    assert target["ready_by_runner"] == {V1: under_v1, V2: True}
    assert target["unverified"] == []
    (finding,) = [f for f in target["findings"] if f["code"] == code]
    assert finding["severity"] in ("warning", "info") and finding["runners"] == [V1]
    assert (
        "(Only under model runner V1, which runs instead of the default V2 with"
        in (finding["message"])
    )


def test_0_16_seed_blockers_are_on_the_default_runner(vllm_release: Callable) -> None:
    """Before 0.22 V1 is the default: Kimi-K2.5's three crashes stay errors."""
    kimi = Path(__file__).resolve().parent.parent / "examples" / "kimi-k2.5" / "config.json"
    code, report = check(
        "--vllm", "0.16.0", "--arch", "KimiK25ForConditionalGeneration", "--hf-config", str(kimi)
    )
    target = report["targets"][0]
    assert code == 1 and target["runner"] == V1 and target["ready_by_runner"] is None
    errors = {f["code"] for f in target["findings"] if f["severity"] == "error"}
    # The gate, the image-token read (V1's proposer, the runner that runs) and the interface.
    assert {"EAG501", "EAG401", "EAG102"} <= errors, errors


def test_0_34_has_one_runner_and_no_v1_only_findings(vllm_release: Callable) -> None:
    _, report = check("--vllm", "0.34.0", "--require", "*")
    codes = {f["code"] for t in report["targets"] for f in t["findings"]}
    assert not codes & {"EAG401", "EAG402", "EAG403"}
    assert all(t["runner"] is None and t["ready_by_runner"] is None for t in report["targets"])
    # V2 refuses pipeline parallelism for a decoder that does not declare the relay: no EAG304
    # for those (every decoder of 0.34 that declares it also relays).
    assert all(
        t["pp_aux_relay"]
        for t in report["targets"]
        if any(f["code"] == "EAG304" for f in t["findings"])
    )


def test_platforms_whose_runner_differs_from_cudas() -> None:
    """ROCm keeps V1 for its list (0.30-0.31); the CPU build has no Triton, which V2 needs."""
    runners = Runners(
        (V1, V2), V2, rocm_v1_architectures=("DeepseekV32ForCausalLM",), v1_without_triton=True
    )

    def on(platform: str, arch: str) -> str:
        setup = Setup().on(platform)
        return runners.default_for(arch, moe=False, kinds=frozenset(), setup=setup)

    assert [on(p, "DeepseekV32ForCausalLM") for p in ("cuda", "rocm", "cpu")] == [V2, V1, V1]
    assert [on(p, "LlamaForCausalLM") for p in ("cuda", "rocm", "cpu")] == [V2, V2, V1]


def test_0_33_json_names_the_cpu_builds_runner(vllm_release: Callable) -> None:
    _, report = check("--vllm", "0.33.0", "--arch", "LlamaForCausalLM")
    assert report["targets"][0]["runner_by_platform"] == {"cpu": V1}


def test_0_33_eag304_is_v1_only_where_v2_refuses_pipeline_parallelism(
    vllm_release: Callable,
) -> None:
    """Model runner V2 refuses EAGLE-3 with pipeline parallelism for a decoder that does not
    relay its aux states (0.30 on): the rank-local tap indices matter under V1 only."""
    _, report = check("--vllm", "0.33.0", "--require", "*")
    found = [
        (t["pp_aux_relay"], f["runners"])
        for t in report["targets"]
        for f in t["findings"]
        if f["code"] == "EAG304"
    ]
    assert found
    assert all(runners == [V1] for relay, runners in found if not relay), found


def test_0_17_eag501_quotes_the_releases_own_error(vllm_release: Callable) -> None:
    """From 0.17 the gate's error starts with the method (`eagle3 is only supported for`), where
    0.16's said `Eagle3 is only supported for`."""
    messages = {}
    for version in ("0.16.0", "0.17.0"):
        _, report = check(
            "--vllm", version, "--arch", "DeepseekV3ForCausalLM", "--model-type", "kimi_k2"
        )
        [eag501] = [f for f in report["targets"][0]["findings"] if f["code"] == "EAG501"]
        messages[version] = eag501["message"]
    assert "'Eagle3 is only supported for [...] models'" in messages["0.16.0"]
    assert "'eagle3 is only supported for [...] models'" in messages["0.17.0"]


@pytest.mark.parametrize(
    "arch",
    [
        "Glm4ForCausalLM",
        "Phi4MMForCausalLM",
        "DomynEdgeForCausalLM",
        "DiffusionGemmaForBlockDiffusion",
    ],
)
def test_0_33_a_decoder_tapped_in_another_models_file_is_no_claim(
    arch: str, vllm_release: Callable
) -> None:
    """Issue 28: these build (or inherit) Llama's, Qwen2's or Gemma 4's tapped decoder without
    declaring anything of EAGLE-3: not claims, so a whole-tree run does not fail for them."""
    _, report = check("--vllm", "0.33.0")
    [target] = [t for t in report["targets"] if t["arch"] == arch]
    assert target["claims_eagle3"] is False
    assert not [f for f in target["findings"] if f["severity"] == "error"]
