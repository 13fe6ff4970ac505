"""Messages quote the model runner that runs the target (issue 52 item 4).

V1 and V2 refuse a target that is not a SupportsEagle3 with different texts, in different
orders: V1 after its proposer has read the target's decoder, V2 before. Both are read from the
tree; small trees of our own hold each shape, the real releases hold the texts.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from eagle3lint.cli import app
from eagle3lint.engines.vllm.contract.model import V1, V2, Runners
from eagle3lint.engines.vllm.contract.refusals import read_refusals
from eagle3lint.engines.vllm.contract.runners import V1_RUNNER, V2_EAGLE3, V2_RUNNER

V1_LOAD = """
class GPUModelRunner:
    def load_model(self) -> None:
        self.model = load()
        self.drafter.load_model(self.model)
        if self.use_aux_hidden_state_outputs:
            if not supports_eagle3(self.get_model()):
                raise RuntimeError(
                    "Model does not support EAGLE3 interface but "
                    "aux_hidden_state_outputs was requested"
                )
"""
V2_LOAD = """
class GPUModelRunner:
    def load_model(
        self,
        model=None,
    ) -> None:
        self.model = load()
        if self.use_aux_hidden_state_outputs:
            set_eagle3_aux_hidden_state_layers(
                self.model, self.speculative_config
            )
        self.speculator.load_model(self.model)
"""
V2_CHECK = """
def set_eagle3_aux_hidden_state_layers(model, spec_config):
    if not supports_eagle3(model):
        raise RuntimeError("Model refuses EAGLE3 here")
"""


def test_each_runner_refusal_and_its_order(tmp_path: Path) -> None:
    """V1 checks after its proposer loaded the drafter; V2 calls the helper holding its check
    before (over a signature written on several lines, as 0.33's)."""
    for rel, text in ((V1_RUNNER, V1_LOAD), (V2_RUNNER, V2_LOAD), (V2_EAGLE3, V2_CHECK)):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    v1, v2 = read_refusals(tmp_path, Runners((V1, V2), V2), _read)
    assert (v1.runner, v1.exception, v1.before_proposer) == (V1, "RuntimeError", False)
    assert v1.message.endswith("but aux_hidden_state_outputs was requested")
    assert (v2.runner, v2.message, v2.before_proposer) == (V2, "Model refuses EAGLE3 here", True)
    assert v2.path.endswith(V2_EAGLE3) and v2.line == 4


def test_no_runner_no_refusal(tmp_path: Path) -> None:
    assert read_refusals(tmp_path, None, _read) == ()


def _read(path: Path) -> str | None:
    return path.read_text() if path.is_file() else None


def findings(version: str, *archs: str) -> dict[tuple[str, str], str]:
    """`(arch, code)` → message, for the architectures asked about."""
    asked = [a for arch in archs for a in ("--arch", arch)]
    result = CliRunner().invoke(app, ["check", "--vllm", version, *asked, "--format", "json"])
    assert result.exit_code in (0, 1), result.output
    report = json.loads(result.stdout)
    return {(t["arch"], f["code"]): f["message"] for t in report["targets"] for f in t["findings"]}


def release_text(root: Path, rel: str, start: str) -> str:
    """The message of the `raise` after `start` in a release file, as its code writes it."""
    text = (root / rel).read_text()
    raised = text[text.index(start) :]
    raised = raised[raised.index("raise RuntimeError(") : raised.index(")\n")]
    return "".join(part.split('"')[1] for part in raised.split("\n") if '"' in part)


@pytest.mark.parametrize("version", ["0.33.0", "0.34.0"])
def test_v2_default_quotes_v2s_refusal(version: str, vllm_release: Callable) -> None:
    """Where V2 runs the target by default (all of 0.33's, 0.34 has no V1), EAG101 and EAG102
    quote V2's error, not V1's."""
    v2_text = release_text(vllm_release(version), V2_EAGLE3, "if not supports_eagle3(")
    found = findings(version, "BloomForCausalLM", "Qwen2AudioForConditionalGeneration")
    for key in (("BloomForCausalLM", "EAG101"), ("Qwen2AudioForConditionalGeneration", "EAG102")):
        assert f"raises '{v2_text}' after loading the weights" in found[key], found[key]
        assert "aux_hidden_state_outputs was requested" not in found[key]


@pytest.mark.parametrize("version", ["0.33.0", "0.34.0"])
def test_v2_stops_before_the_proposer_on_a_class_never_opted_in(
    version: str, vllm_release: Callable
) -> None:
    """V2 refuses a class that is not a SupportsEagle3 before its speculator reads the
    target's decoder: EAG411/EAG412 say so, and what remains once it is one; EAG412's V2 error
    depends on the head lacking its own embedding."""
    found = findings(version, "BloomForCausalLM", "OPTForCausalLM")
    for key in (("BloomForCausalLM", "EAG411"), ("OPTForCausalLM", "EAG412")):
        assert "vLLM stops earlier, as" in found[key], found[key]
        assert "(EAG101); once it is one, the proposer raises" in found[key]
    assert (
        "AttributeError: 'BloomForCausalLM' object has no attribute 'model'"
        in (found["BloomForCausalLM", "EAG411"])
    )
    assert (
        "if the EAGLE-3 head has no embedding of its own (`has_own_embed_tokens` false)"
        in (found["OPTForCausalLM", "EAG412"])
    )


def test_v1_quotes_v1s_refusal_and_its_proposer_first(vllm_release: Callable) -> None:
    """0.16 runs V1, whose proposer reads the decoder before the runner's check: EAG101 quotes
    V1's text, EAG411 the proposer's own error, with no earlier stop."""
    v1_text = release_text(vllm_release("0.16.0"), V1_RUNNER, "if not supports_eagle3(")
    found = findings("0.16.0", "BloomForCausalLM")
    assert f"raises '{v1_text}' after loading" in found["BloomForCausalLM", "EAG101"]
    assert v1_text.endswith("but aux_hidden_state_outputs was requested")
    eag411 = found["BloomForCausalLM", "EAG411"]
    assert "stops earlier" not in eag411 and "raises AttributeError" in eag411
