"""Verdicts on the code path vLLM runs: roles, import-time conditions, class factories.

`fixtures/verdicts/vllm` holds one small case per shape; each has a regression test on the real
release where it was seen.
"""

from __future__ import annotations

import filecmp
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from eagle3lint.cli import app
from eagle3lint.engine import CheckOptions, run_check
from eagle3lint.index.extract import summarize
from eagle3lint.index.refs import ClassRef

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "fixtures" / "verdicts" / "vllm"
KIMI = "KimiK25ForConditionalGeneration"
KIMI_CONFIG = REPO / "examples" / "kimi-k2.5" / "config.json"
runner = CliRunner()


def check(*args: str) -> tuple[int, dict]:
    result = runner.invoke(app, ["check", *args, "--format", "json"])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)


def by_arch(report: dict) -> dict[str, dict]:
    return {t["arch"]: t for t in report["targets"]}


def test_roles_in_the_fixture() -> None:
    _, report = check(str(FIXTURE))
    targets = by_arch(report)
    roles = {arch: t["role"] for arch, t in targets.items()}
    assert roles == {
        "GoodLlamaForCausalLM": "target",
        "SplitFamilyForCausalLM": "target",
        "BareForCausalLM": "target",
        "HelperLoopForCausalLM": "target",
        "TempTapForCausalLM": "target",
        "TowerConfigVLForConditionalGeneration": "target",
        "BareDecoderVLForConditionalGeneration": "target",
        "GoodLlamaBidirectionalModel": "pooling",
        "GoodLlamaEmbedModel": "pooling",
        "MarkedRewardModel": "pooling",
        "Eagle3GoodLlamaForCausalLM": "draft",
    }
    for target in targets.values():
        if target["role"] != "target":
            assert target["eagle3_ready"] is None and target["findings"] == []
    summary = report["summary"]
    assert (summary["archs"], summary["targets"], summary["drafts"], summary["pooling"]) == (
        11,
        7,
        1,
        3,
    )
    assert summary["ready"] + summary["blocked"] + summary["unverified"] == summary["targets"]
    # The fixture has a model_type allow-list: with no model_type given, no target is ready.
    assert summary["ready"] == 0 and summary["unverified"] == sum(
        t["role"] == "target" and t["eagle3_ready"] is None for t in targets.values()
    )


def test_factory_bases_carry_the_argument_members() -> None:
    """`as_embedding_model(GoodLlamaForCausalLM)` is a subclass of its argument."""
    targets = by_arch(check(str(FIXTURE))[1])
    assert targets["GoodLlamaBidirectionalModel"]["implements_eagle3"]
    assert targets["GoodLlamaEmbedModel"]["implements_eagle3"]
    assert not targets["MarkedRewardModel"]["implements_eagle3"]


def test_type_checking_stub_is_not_the_runtime_base() -> None:
    targets = by_arch(check(str(FIXTURE))[1])
    assert targets["Eagle3GoodLlamaForCausalLM"]["implements_eagle3"]


def test_type_checking_or_platform_condition_is_evaluated_for_cuda() -> None:
    split = by_arch(check(str(FIXTURE), "--model-type", "llama")[1])["SplitFamilyForCausalLM"]
    assert split["variant"] == "cuda"
    assert split["implements_eagle3"] and split["eagle3_ready"]
    # The ROCm branch stays visible as a variant that answers differently.
    assert [f["code"] for f in split["findings"] if f["code"] == "EAG104"] == ["EAG104"]


@pytest.mark.parametrize("arch", ["Eagle3GoodLlamaForCausalLM", "MarkedRewardModel"])
def test_asking_for_a_non_target_gets_one_note(arch: str) -> None:
    code, report = check(str(FIXTURE), "--arch", arch)
    [target] = report["targets"]
    assert code == 0 and target["eagle3_ready"] is None
    assert [(f["code"], f["severity"]) for f in target["findings"]] == [("EAG905", "info")]
    text = runner.invoke(app, ["check", str(FIXTURE), "--arch", arch])
    assert "no target verdict" in text.stdout and "EAG905" in text.stdout


def test_0_33_drafts_and_pooling_are_not_targets(vllm_release: Callable) -> None:
    root = vllm_release("0.33.0")
    archs = [
        "Eagle3LlamaForCausalLM",
        "LlamaBidirectionalModel",
        "MiniMaxM3SparseForCausalLM",
        "LlamaForCausalLM",
    ]
    _, report = check(str(root), *(a for arch in archs for a in ("--arch", arch)))
    targets = by_arch(report)
    eagle3 = targets["Eagle3LlamaForCausalLM"]
    # TYPE_CHECKING stub vs `_Eagle3LlamaForCausalLMBase = LlamaForCausalLM` at run time.
    assert (eagle3["role"], eagle3["implements_eagle3"]) == ("draft", True)
    assert targets["LlamaBidirectionalModel"]["role"] == "pooling"
    minimax = targets["MiniMaxM3SparseForCausalLM"]
    assert "/nvidia/" in minimax["path"] and minimax["variant"] == "cuda"
    assert targets["LlamaForCausalLM"]["role"] == "target"


def test_0_22_factory_base_implements_eagle3(vllm_release: Callable) -> None:
    """`class LlamaBidirectionalModel(as_embedding_model(LlamaForCausalLM))` (0.14-0.29)."""
    root = vllm_release("0.22.0")
    _, report = check(str(root), "--arch", "LlamaBidirectionalModel")
    [target] = report["targets"]
    assert (target["role"], target["implements_eagle3"]) == ("pooling", True)


def test_0_33_lazy_type_checking_exports_resolve(vllm_release: Callable) -> None:
    """`if TYPE_CHECKING: from .model import X` plus a module `__getattr__` (vllm/models/flint)."""
    root = vllm_release("0.33.0")
    _, report = check(str(root), "--arch", "FlintForCausalLM", "--arch", "InklingForCausalLM")
    assert report["errors"] == []
    assert {t["arch"] for t in report["targets"]} == {"FlintForCausalLM", "InklingForCausalLM"}


RUNNER = "v1/worker/gpu_model_runner.py"
GUARD = """            if not supports_eagle3(self.get_model()):
                raise RuntimeError(
                    "Model does not support EAGLE3 interface but "
                    "aux_hidden_state_outputs was requested"
                )
"""


def test_unguarded_runner_blocks_targets_without_the_methods(tmp_path: Path) -> None:
    """A runner calling the aux-layer methods with no supports_eagle3 check (0.10.0)."""
    tree = tmp_path / "vllm"
    shutil.copytree(FIXTURE, tree)
    runner_file = tree / RUNNER
    text = runner_file.read_text()
    assert GUARD in text
    runner_file.write_text(text.replace(GUARD, ""))
    _, guarded = check(str(FIXTURE), "--arch", "BareForCausalLM")
    # No decoder in `.model` either: the proposer fails on that first (EAG411).
    assert [f["code"] for f in guarded["targets"][0]["findings"] if f["code"] < "EAG5"] == [
        "EAG101",
        "EAG411",
    ]
    _, report = check(str(tree), "--arch", "BareForCausalLM")
    assert report["vllm"]["details"]["unguarded_aux_calls"] is True
    [bare] = report["targets"]
    assert bare["eagle3_ready"] is False
    messages = [f["message"] for f in bare["findings"] if f["code"] == "EAG201"]
    assert len(messages) == 2 and all("AttributeError" in m for m in messages)


def test_0_10_unguarded_runner_blocks_llava(vllm_release: Callable) -> None:
    root = vllm_release("0.10.0")
    _, report = check(
        str(root),
        "--arch",
        "LlavaForConditionalGeneration",
        "--arch",
        "LlamaForCausalLM",
        "--model-type",
        "llama",
    )
    targets = by_arch(report)
    assert report["vllm"]["details"]["unguarded_aux_calls"] is True
    llava = targets["LlavaForConditionalGeneration"]
    assert llava["eagle3_ready"] is False
    assert {f["code"] for f in llava["findings"] if f["severity"] == "error"} == {"EAG201"}
    assert targets["LlamaForCausalLM"]["eagle3_ready"] is True


def test_layer_loop_found_through_two_helper_calls() -> None:
    _, report = check(str(FIXTURE), "--arch", "HelperLoopForCausalLM", "--model-type", "llama")
    [target] = report["targets"]
    assert target["eagle3_ready"] and target["findings"] == [], target["findings"]


def test_tap_through_a_temporary_and_after_the_loop() -> None:
    _, report = check(str(FIXTURE), "--arch", "TempTapForCausalLM", "--model-type", "llama")
    [target] = report["targets"]
    codes = [(f["code"], f["line"]) for f in target["findings"]]
    # The temporary is `hidden_states + residual` (None at layer 0); the tap after the loop
    # captures the last layer's output, so EAG306 does not apply.
    assert codes == [("EAG305", 51)]
    assert "`hidden_states + residual`" in target["findings"][0]["message"]


@pytest.mark.parametrize("version", ["0.25.0", "0.33.0"])
def test_deepseek_v2_temporary_tap(version: str, vllm_release: Callable) -> None:
    root = vllm_release(version)
    _, report = check(str(root), "--arch", "DeepseekV2ForCausalLM")
    [target] = report["targets"]
    codes = [f["code"] for f in target["findings"]]
    assert "EAG305" in codes and "EAG306" not in codes


def test_deepseek_v4_findings_sit_on_the_loop_running_the_layers(vllm_release: Callable) -> None:
    """The ROCm DeepseekV4 model runs its layers in `_run_layers`, after a loop that only walks
    the layers' Engram tables; its explicit tap there is recognised."""
    root = vllm_release("0.33.0")
    run = run_check(CheckOptions(paths=[root], archs=["DeepseekV41ForCausalLM"]))
    [target] = run.targets
    assert "rocm" in target.variants
    model = run.index.resolve("vllm.models.deepseek_v41.amd.model", "DeepseekV4Model")
    assert isinstance(model, ClassRef)
    found = run.index.forward_of(model)
    assert found is not None
    forward = found[1]
    assert forward.loop_helper == "_run_layers"
    assert [tap.value_expr for loop in forward.loops for tap in loop.taps] == [
        "aux_recon.mean(dim=1)"
    ]


TOWER_VL = "TowerConfigVLForConditionalGeneration"
TOWER_HF = FIXTURE.parent / "hf" / "tower_config_vl.json"


def test_a_tower_sub_config_is_not_the_model_config() -> None:
    _, report = check(str(FIXTURE), "--arch", TOWER_VL, "--model-type", "llama")
    [target] = report["targets"]
    codes = {f["code"]: f for f in target["findings"]}
    assert "EAG401" not in codes
    assert "GoodVLVisionConfig" in codes["EAG402"]["message"]


def test_an_hf_config_key_satisfies_the_read(tmp_path: Path) -> None:
    _, report = check(str(FIXTURE), "--arch", TOWER_VL, "--hf-config", str(TOWER_HF))
    [target] = report["targets"]
    assert not {"EAG401", "EAG402"} & {f["code"] for f in target["findings"]}
    without = json.loads(TOWER_HF.read_text())
    del without["image_token_index"]
    (tmp_path / "config.json").write_text(json.dumps(without))
    _, report = check(str(FIXTURE), "--arch", TOWER_VL, "--hf-config", str(tmp_path))
    [target] = report["targets"]
    assert [f["code"] for f in target["findings"] if f["code"].startswith("EAG40")] == ["EAG401"]


@pytest.mark.parametrize("arch", ["Step3VLForConditionalGeneration", "MiMoV2OmniForCausalLM"])
def test_0_33_vision_sub_configs_are_not_model_configs(arch: str, vllm_release: Callable) -> None:
    root = vllm_release("0.33.0")
    _, report = check(str(root), "--arch", arch)
    [target] = report["targets"]
    codes = {f["code"] for f in target["findings"]}
    assert "EAG401" not in codes and "EAG402" in codes


def test_0_33_kimi_vl_reads_its_model_config(vllm_release: Callable) -> None:
    """KimiVLConfig (registered) lacks image_token_index; MoonViTConfig (its tower's) is not
    the model's config and no longer named."""
    root = vllm_release("0.33.0")
    _, report = check(str(root), "--arch", "KimiVLForConditionalGeneration")
    [target] = report["targets"]
    [finding] = [f for f in target["findings"] if f["code"] == "EAG401"]
    assert finding["message"].startswith("KimiVLConfig has no image_token_index")


BARE_VL = "BareDecoderVLForConditionalGeneration"


def test_wrapper_holding_a_bare_decoder_gets_the_decoder_side_findings(tmp_path: Path) -> None:
    """The decoder-side to-do list, and the blocker no repair removes: the proposer takes
    `get_language_model().model`, which a bare decoder does not have (EAG411), so `fix` leaves
    the target alone rather than half-repair it."""
    args = ["--arch", BARE_VL, "--model-type", "llama"]
    _, report = check(str(FIXTURE), *args)
    [target] = report["targets"]
    on_decoder = {f["code"] for f in target["findings"] if "PlainDecoderModel" in f["message"]}
    # No EAG103: the wrapper's protocol defaults reach the decoder directly, never through
    # the language model's own methods.
    assert {"EAG204", "EAG301", "EAG411"} <= on_decoder and "EAG103" not in on_decoder
    tree = tmp_path / "vllm"
    shutil.copytree(FIXTURE, tree)
    fixed = runner.invoke(app, ["fix", str(tree), *args, "--no-cache"])
    assert fixed.exit_code == 1, fixed.output
    assert f"not fixed: {BARE_VL}: EAG411 has no automatic fix" in fixed.output
    assert "0 file(s) changed" in fixed.output
    assert filecmp.dircmp(FIXTURE, tree).diff_files == []


def test_0_15_kimi_gets_the_complete_to_do_list(release_copy: Callable) -> None:
    """Kimi-K2.5 on 0.15 holds a bare DeepseekV2Model: beside the decoder's to-do list, the
    proposer's `hasattr(target_language_model.model, ...)` fails on it (EAG411), which no
    repair removes, so `fix` changes nothing (it once made the target look ready)."""
    root = release_copy("0.15.0")
    args = ["--arch", KIMI, "--hf-config", str(KIMI_CONFIG), "--no-cache"]
    _, report = check(str(root), *args)
    [kimi] = report["targets"]
    on_decoder = {f["code"] for f in kimi["findings"] if "DeepseekV2Model" in f["message"]}
    assert {"EAG201", "EAG301", "EAG411"} <= on_decoder
    [finding] = [f for f in kimi["findings"] if f["code"] == "EAG411"]
    assert "'DeepseekV2Model' object has no attribute 'model'" in finding["message"]
    fixed = runner.invoke(app, ["fix", str(root), *args])
    assert fixed.exit_code == 1, fixed.output
    assert f"not fixed: {KIMI}: EAG411 has no automatic fix" in fixed.output


@pytest.mark.parametrize(
    ("condition", "runs_first_branch"),
    [
        ("sys.version_info >= (3, 0)", True),
        ("sys.version_info < (3, 0)", False),
        ("sys.version_info[:2] >= (99, 0)", False),
        ("TYPE_CHECKING or sys.version_info >= (3, 0)", True),
        ("not sys.version_info >= (3, 0)", False),
    ],
)
def test_version_conditions_take_the_branch_this_python_runs(
    condition: str, runs_first_branch: bool
) -> None:
    """`if sys.version_info >= (3, 11): ... else: ...` defines names at import time too
    (hyperclovax_vision.py, 0.11.0): only the branch the interpreter runs counts."""
    source = (
        "import sys\nfrom typing import TYPE_CHECKING\n\n"
        f"if {condition}:\n"
        "    class Model(nn.Module, SupportsEagle3):\n        pass\n"
        "else:\n"
        "    class Model(nn.Module):\n        pass\n"
    )
    summary = summarize(source, "vllm/model_executor/models/m.py")
    bases = summary.classes["Model"].bases
    assert ("SupportsEagle3" in bases) is runs_first_branch


def test_0_33_qwen2_without_its_in_loop_tap_is_blocked(release_copy: Callable) -> None:
    """Issue 28: with only the pre-loop tap left (the stream entering the first layer), Qwen2
    captures one state where the runner asks for three; the pre-loop tap once passed for the
    loop's."""
    root = release_copy("0.33.0")
    model = root / "model_executor" / "models" / "qwen2.py"
    in_loop = (
        "            self._maybe_add_hidden_state(\n"
        "                aux_hidden_states, idx + 1, hidden_states, residual\n"
        "            )\n"
    )
    text = model.read_text()
    assert text.count(in_loop) == 1
    _, before = check(str(root), "--arch", "Qwen2ForCausalLM", "--no-cache")
    assert before["targets"][0]["eagle3_ready"] is True
    model.write_text(text.replace(in_loop, ""))
    _, after = check(str(root), "--arch", "Qwen2ForCausalLM", "--no-cache")
    [target] = after["targets"]
    [finding] = [f for f in target["findings"] if f["severity"] == "error"]
    assert finding["code"] == "EAG301" and "only outside its layer loop" in finding["message"]
    assert not finding["fixable"]


SUPER_FORWARD = """
from torch import nn
class BaseModel(nn.Module):
    def forward(self, input_ids, positions):
        hidden_states = input_ids
        for layer in self.layers:
            hidden_states = layer(hidden_states)
        return hidden_states
class ChildModel(BaseModel):
    def forward(self, input_ids, positions, extra=None):
        return super().forward(input_ids, positions)
class LoopingChildModel(BaseModel):
    def forward(self, input_ids, positions):
        if positions is None:
            return super().forward(input_ids, positions)
        return input_ids
"""


def test_a_forward_returning_super_forward_is_followed_to_the_base() -> None:
    """Issue 28: MistralModel.forward only returns `super().forward(...)`: LlamaModel's loop
    runs the layers (it was EAG307, "no loop over self.layers", on every release)."""
    summary = summarize(SUPER_FORWARD, "vllm/model_executor/models/m.py")
    assert summary.classes["ChildModel"].forward.returns_super
    # Only a forward that is nothing but the call is passed over.
    assert not summary.classes["LoopingChildModel"].forward.returns_super
    assert not summary.classes["BaseModel"].forward.returns_super


def test_0_33_mistral_forward_through_super_is_checked(vllm_release: Callable) -> None:
    vllm_release("0.33.0")
    _, report = check("--vllm", "0.33.0", "--arch", "MistralForCausalLM", "--verbose")
    [target] = report["targets"]
    assert target["eagle3_ready"] is True
    assert not [f for f in target["findings"] if f["code"] in ("EAG307", "EAG308")]


def test_0_33_checkpoint_chosen_language_model_is_an_info_note(vllm_release: Callable) -> None:
    """Llava builds its language model from the checkpoint's text config
    (`init_vllm_registered_model` with no `architectures=`): no decoder to check here, and each
    text architecture is a target of its own, so that is a note, not a warning."""
    vllm_release("0.33.0")
    _, report = check("--vllm", "0.33.0", "--arch", "LlavaForConditionalGeneration", "--verbose")
    [target] = report["targets"]
    [note] = [f for f in target["findings"] if f["code"] == "EAG308"]
    assert note["severity"] == "info" and "checkpoint's text config" in note["message"]
    assert target["eagle3_ready"] is True


def test_0_33_llama4_language_model_is_the_model_class_given(vllm_release: Callable) -> None:
    """Llama 4 builds `initialize_model(vllm_config.with_hf_config(text_config,
    ["LlamaForCausalLM"]), model_class=Llama4ForCausalLM)`: the class given wins, and its
    aux-layer methods delegate after an `assert hasattr(...)`."""
    vllm_release("0.33.0")
    _, report = check("--vllm", "0.33.0", "--arch", "Llama4ForConditionalGeneration", "--verbose")
    [target] = report["targets"]
    assert target["eagle3_ready"] is True
    assert not [f for f in target["findings"] if f["severity"] != "info"], target["findings"]


def test_0_17_qwen3_5_findings_sit_on_the_classes_the_runner_calls(
    vllm_release: Callable,
) -> None:
    """Issue 28: Qwen3.5's wrapper sets `self.language_model.model.aux_hidden_state_layers`
    itself (Qwen3-VL's methods): the runner never calls Qwen3_5ForCausalLM's methods, so no
    finding asks to change them; the decoder's missing taps remain."""
    vllm_release("0.17.0")
    _, report = check("--vllm", "0.17.0", "--arch", "Qwen3_5ForConditionalGeneration")
    [target] = report["targets"]
    errors = [f for f in target["findings"] if f["severity"] == "error"]
    assert [f["code"] for f in errors] == ["EAG301"], errors
    assert not [f for f in target["findings"] if "Qwen3_5ForCausalLM " in f["message"]]


def test_0_33_wrapper_relying_on_the_defaults_gets_one_eag204(vllm_release: Callable) -> None:
    """The protocol defaults of a wrapper go to its language model's decoder: one EAG204,
    naming the wrapper the runner calls, and no demand on the language model's own methods."""
    vllm_release("0.33.0")
    _, report = check("--vllm", "0.33.0", "--arch", "Gemma3ForConditionalGeneration")
    [target] = report["targets"]
    codes = [f["code"] for f in target["findings"]]
    assert codes.count("EAG204") == 1 and "EAG103" not in codes, codes
    [eag204] = [f for f in target["findings"] if f["code"] == "EAG204"]
    assert eag204["message"].startswith("Gemma3ForConditionalGeneration relies on")


@pytest.mark.parametrize(
    "arch",
    ["KimiK3ForConditionalGeneration", "KimiLinearForCausalLM", "MiniMaxM3SparseForCausalLM"],
)
def test_0_33_taps_after_the_residual_is_assigned_are_not_eag305(
    arch: str, vllm_release: Callable
) -> None:
    """Issue 28: these loops assign the residual (the layer or its input norm returns it)
    before they tap, and guard the pre-loop tap of layer 0: residual is never None there."""
    vllm_release("0.33.0")
    _, report = check("--vllm", "0.33.0", "--arch", arch, "--verbose")
    [target] = report["targets"]
    assert not [f for f in target["findings"] if f["code"] == "EAG305"], target["findings"]


def test_a_tap_before_the_layer_still_reads_the_first_layers_none_residual() -> None:
    source = """
from torch import nn
class LoopModel(nn.Module):
    def forward(self, positions, hidden_states):
        residual = None
        aux_hidden_states = []
        for idx, layer in enumerate(self.layers):
            if idx in self.aux_hidden_state_layers:
                aux_hidden_states.append(hidden_states + residual)
            hidden_states, residual = layer(positions, hidden_states, residual)
            if idx + 1 in self.aux_hidden_state_layers:
                aux_hidden_states.append(hidden_states + residual)
        return hidden_states, aux_hidden_states
"""
    summary = summarize(source, "vllm/model_executor/models/m.py")
    taps = summary.classes["LoopModel"].forward.loops[0].taps
    assert [t.residual_guarded for t in taps] == [False, True]


@pytest.mark.parametrize("version", ["0.33.0", "0.34.0"])
def test_a_language_model_marked_in_init_is_the_one_the_proposer_reads(
    version: str, vllm_release: Callable
) -> None:
    """Phi-4-multimodal and MuseGlimmer build their decoder under `with
    self._mark_language_model(...)` as `self.model`: vLLM's default `get_language_model()`
    returns that decoder, whose own `.model` the EAGLE proposer then reads (EAG411). The
    claimed MuseGlimmer is blocked; the unclaimed Phi-4-multimodal is no longer promised a
    `fix` that adds SupportsEagle3 to a model that still could not run."""
    vllm_release(version)
    archs = ("Phi4MMForCausalLM", "MuseGlimmerForCausalLM")
    _, report = check("--vllm", version, *(a for arch in archs for a in ("--arch", arch)))
    targets = by_arch(report)
    for arch in archs:
        [eag411] = [f for f in targets[arch]["findings"] if f["code"] == "EAG411"]
        assert "(its language model, " in eag411["message"], eag411
        assert targets[arch]["eagle3_ready"] is False
    [eag101] = [f for f in targets["Phi4MMForCausalLM"]["findings"] if f["code"] == "EAG101"]
    assert not eag101["fixable"] and "EAG411" in eag101["fix_refused"]


def test_0_33_platform_variants_behind_getattr_and_type_checking(vllm_release: Callable) -> None:
    """vLLM 0.33's `qwen4_exp` imports each platform's classes in its module `__getattr__`, and
    `kimi_k3` picks them after a `TYPE_CHECKING` branch and a `device_type == "tpu"` test: both
    are platform families, and Kimi Linear's ROCm and XPU class (`amd/linear.py`) lacks the
    SupportsEagle3 its CUDA class has (EAG104)."""
    vllm_release("0.33.0")
    archs = ("Qwen4ExpForCausalLM", "KimiLinearForCausalLM", "KimiK3ForConditionalGeneration")
    _, report = check("--vllm", "0.33.0", *(a for arch in archs for a in ("--arch", arch)))
    targets = by_arch(report)
    assert {arch: targets[arch]["variant"] for arch in archs} == dict.fromkeys(archs, "cuda")
    eag104 = [f["message"] for f in targets["KimiLinearForCausalLM"]["findings"]]
    assert any(
        m.startswith("The rocm variant vllm.models.kimi_k3.amd.linear.KimiLinearForCausalLM")
        for m in eag104
    ), eag104
