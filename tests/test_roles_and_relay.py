"""Verdicts decided by what vLLM's code does, not where a name sits or what a class inherits:
a draft's role from the speculative config that names its architecture, and the
pipeline-parallel aux relay from the forward that runs.

Each shape has a small tree here and a regression test on the release where it was seen.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner
from vllm_tree import ARCH, write_vllm_tree

from eagle3lint.cli import app

runner = CliRunner()

TRANSFORMERS_MTP = ("TransformersForMTP", "TransformersMoEForMTP")


def check(*args: str) -> dict:
    result = runner.invoke(app, ["check", *args, "--format", "json"])
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


def roles(report: dict) -> dict[str, str]:
    return {t["arch"]: t["role"] for t in report["targets"]}


@pytest.mark.parametrize("version", ["0.33.0", "0.34.0"])
def test_transformers_backend_mtp_drafts_are_drafts(version: str, vllm_release: Callable) -> None:
    # Listed in `_TRANSFORMERS_BACKEND_MODELS`, not `_SPECULATIVE_DECODING_MODELS`: the
    # speculative config gives the draft `f"Transformers{moe}ForMTP"`, so vLLM loads them only
    # as drafters. They were targets with an EAG308 warning.
    args = [a for arch in (*TRANSFORMERS_MTP, "TransformersForCausalLM") for a in ("--arch", arch)]
    report = check(str(vllm_release(version)), *args)
    targets = {t["arch"]: t for t in report["targets"]}
    for arch in TRANSFORMERS_MTP:
        assert targets[arch]["role"] == "draft"
        assert targets[arch]["eagle3_ready"] is None
        assert [f["code"] for f in targets[arch]["findings"]] == ["EAG905"]
        assert "speculative config" in targets[arch]["findings"][0]["message"]
    assert roles(report)["TransformersForCausalLM"] == "target"


def test_a_draft_named_by_the_speculative_config_is_a_draft(tmp_path: Path) -> None:
    vllm = write_vllm_tree(tmp_path)
    registry = vllm / "model_executor/models/registry.py"
    registry.write_text(
        registry.read_text().replace(
            f'"{ARCH}": ("llama", "{ARCH}"),',
            f'"{ARCH}": ("llama", "{ARCH}"),\n    "LlamaMoEForMTP": ("llama", "{ARCH}"),'
            f'\n    "LlamaForMTPLike": ("llama", "{ARCH}"),',
        )
    )
    (vllm / "config").mkdir()
    (vllm / "config/speculative.py").write_text(
        "def overrides(hf_config, moe):\n"
        '    hf_config.update({"n_predict": 1, "architectures": [f"Llama{moe}ForMTP"]})\n'
    )
    found = roles(check(str(vllm)))
    assert found == {ARCH: "target", "LlamaMoEForMTP": "draft", "LlamaForMTPLike": "target"}


NO_RELAY = """\
from vllm.model_executor.models.llama import LlamaForCausalLM, LlamaModel


class NoRelayModel(LlamaModel):
    def forward(self, input_ids, positions, intermediate_tensors=None, inputs_embeds=None):
        hidden_states = self.embed_input_ids(input_ids)
        residual = None
        aux_hidden_states = []
        for idx, layer in enumerate(self.layers[self.start_layer : self.end_layer]):
            if idx in self.aux_hidden_state_layers:
                aux_hidden_states.append(hidden_states + residual)
            hidden_states, residual = layer(positions, hidden_states, residual)
        hidden_states, _ = self.norm(hidden_states, residual)
        if aux_hidden_states:
            return hidden_states, aux_hidden_states
        return hidden_states


class RelayModel(NoRelayModel):
    def forward(self, input_ids, positions, intermediate_tensors=None, inputs_embeds=None):
        remote = self.collect_remote_aux_hidden_states(intermediate_tensors)
        local = self.pack_local_aux_hidden_states([])
        return remote, local


class NoRelayForCausalLM(LlamaForCausalLM):
    def __init__(self, *, vllm_config, prefix: str = ""):
        super().__init__(vllm_config=vllm_config, prefix=prefix)
        self.model = NoRelayModel(vllm_config=vllm_config, prefix=prefix)


class RelayForCausalLM(LlamaForCausalLM):
    def __init__(self, *, vllm_config, prefix: str = ""):
        super().__init__(vllm_config=vllm_config, prefix=prefix)
        self.model = RelayModel(vllm_config=vllm_config, prefix=prefix)
"""


def test_an_inherited_relay_flag_over_a_forward_that_does_not_relay(
    vllm_release: Callable, tmp_path: Path
) -> None:
    # LlamaModel sets supports_aux_hidden_states_over_pp = True over its own forward, which
    # relays; NoRelayModel keeps the flag and replaces the forward.
    vllm_release("0.34.0")
    model = tmp_path / "norelay.py"
    model.write_text(NO_RELAY)
    targets = {t["arch"]: t for t in check(str(model), "--vllm", "0.34.0")["targets"]}
    assert targets["NoRelayForCausalLM"]["pp_aux_relay"] is False
    assert targets["RelayForCausalLM"]["pp_aux_relay"] is True
    assert {
        t["arch"]: t["pp_aux_relay"]
        for t in check(str(vllm_release("0.34.0")), "--arch", "LlamaForCausalLM")["targets"]
    } == {"LlamaForCausalLM": True}


@pytest.mark.parametrize("version", ["0.33.0", "0.34.0"])
def test_rank_local_taps_under_an_inherited_flag_run_on_v2(
    version: str, vllm_release: Callable, tmp_path: Path
) -> None:
    # V2 reads the flag, inherited or not, so it runs NoRelayModel under pipeline parallelism
    # and its rank-local tap indices select the wrong layers there too (EAG304 was V1 only on
    # 0.33 and missing on 0.34, where V2 is the only runner).
    vllm_release(version)
    model = tmp_path / "norelay.py"
    model.write_text(NO_RELAY)
    targets = {t["arch"]: t for t in check(str(model), "--vllm", version)["targets"]}
    [eag304] = [f for f in targets["NoRelayForCausalLM"]["findings"] if f["code"] == "EAG304"]
    assert not eag304["runners"]


@pytest.mark.parametrize(
    ("arch", "blocked"), [("NoRelayForCausalLM", True), ("RelayForCausalLM", False)]
)
def test_pair_pp_2_blocks_an_inherited_flag(
    arch: str, blocked: bool, release_copy: Callable, tmp_path: Path
) -> None:
    from test_pair import LLAMA, draft_folder, head, pairing_codes, tensors

    vllm = release_copy("0.34.0")
    (vllm / "model_executor/models/norelay.py").write_text(NO_RELAY)
    registry = vllm / "model_executor/models/registry.py"
    registry.write_text(
        registry.read_text().replace(
            "_TEXT_GENERATION_MODELS = {\n",
            "_TEXT_GENERATION_MODELS = {\n"
            '    "NoRelayForCausalLM": ("norelay", "NoRelayForCausalLM"),\n'
            '    "RelayForCausalLM": ("norelay", "RelayForCausalLM"),\n',
            1,
        )
    )
    target = tmp_path / "target.json"
    target.write_text(json.dumps({**json.loads(LLAMA.read_text()), "architectures": [arch]}))
    draft = draft_folder(tmp_path, head(), tensors())
    args = ["pair", str(vllm), "--target", str(target), "--draft", str(draft), "--pp", "2"]
    result = runner.invoke(app, [*args, "--format", "json"])
    assert result.exit_code in (0, 1), result.output
    report = json.loads(result.stdout)
    assert ("EAG661" in pairing_codes(report)) is blocked, pairing_codes(report)
    if blocked:
        assert result.exit_code == 1
        message = next(
            f["message"] for t in report["targets"] for f in t["findings"] if f["code"] == "EAG661"
        )
        assert "NoRelayModel inherits supports_aux_hidden_states_over_pp = True" in message


@pytest.mark.parametrize(
    ("source", "built"),
    [
        # A class called directly is built whatever architectures its config names.
        (
            'Qwen3LLMForCausalLM(vllm_config=vllm_config.with_hf_config(c, architectures=["Q"]))',
            ("Qwen3LLMForCausalLM", ()),
        ),
        # A builder resolves them through the registry.
        (
            'initialize_model(vllm_config=vllm_config.with_hf_config(c, ["LlamaForCausalLM"]))',
            ("initialize_model", ("LlamaForCausalLM",)),
        ),
    ],
)
def test_with_hf_config_architectures_name_the_class_only_for_a_builder(
    source: str, built: tuple[str, tuple[str, ...]]
) -> None:
    import libcst as cst

    from eagle3lint.shapes.submodel import built_model

    found = built_model(cst.parse_expression(source))
    assert (found.callee, found.architectures) == built


def test_0_34_qwen3_vl_language_model_does_not_relay(vllm_release: Callable) -> None:
    # Qwen3-VL builds `Qwen3LLMForCausalLM(vllm_config=...with_hf_config(...,
    # architectures=["Qwen3ForCausalLM"]))`: the class called runs, and its decoder
    # Qwen3LLMModel inherits Qwen2Model's relay flag but overrides forward without relaying.
    # eagle3lint followed the config's architectures to Qwen3Model and said it relays.
    vllm = str(vllm_release("0.34.0"))
    args = ["--arch", "Qwen3VLForConditionalGeneration", "--arch", "MossAudioModel"]
    targets = {t["arch"]: t for t in check(vllm, *args)["targets"]}
    assert targets["Qwen3VLForConditionalGeneration"]["pp_aux_relay"] is False
    assert targets["MossAudioModel"]["pp_aux_relay"] is False
    [eag102] = [f for f in targets["MossAudioModel"]["findings"] if f["code"] == "EAG102"]
    assert "its language model MossQwen3ForCausalLM" in eag102["message"]


def test_0_16_qwen3_omni_taps_are_checked_on_the_decoder_that_runs(
    vllm_release: Callable,
) -> None:
    # Qwen3MoeLLMForCausalLM inherits Qwen3MoeForCausalLM's aux-layer methods and builds
    # Qwen3MoeLLMModel, whose own forward never taps: the inherited taps of Qwen3MoeModel are
    # not on the path that runs.
    report = check(str(vllm_release("0.16.0")), "--arch", "Qwen3OmniMoeForConditionalGeneration")
    [target] = report["targets"]
    eag301 = [f for f in target["findings"] if f["code"] == "EAG301"]
    assert [f["message"].split(".")[0] for f in eag301] == ["Qwen3MoeLLMModel"]
    assert not [f for f in target["findings"] if "Qwen3MoeModel" in f["message"]]
