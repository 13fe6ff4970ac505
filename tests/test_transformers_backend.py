"""vLLM's Transformers modeling backend: its decoder is transformers' own model (issue 28, item 5).

The backend builds `self.model = AutoModel.from_config(config)`; the EAGLE proposer then needs
that class's `embed_tokens` or `embedding`. A small vLLM tree with such a backend and a small
transformers package beside it (both written here) give the three outcomes; the real ones are in
`tests/runtime/test_transformers_backend_runtime.py` (vLLM 0.33.0 installed with transformers).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner
from vllm_tree import FILES, INTERFACES

from eagle3lint.cli import app

runner = CliRunner()

PROPOSER = """\
class EagleProposer:
    def load_model(self, target_model):
        target_language_model = target_model
        inner_model = getattr(target_language_model, "model", None)
        if inner_model is None:
            raise AttributeError("Target model does not have 'model' attribute")
        if hasattr(inner_model, "embed_tokens"):
            target_embed_tokens = inner_model.embed_tokens
        elif hasattr(inner_model, "embedding"):
            target_embed_tokens = inner_model.embedding
        else:
            raise AttributeError(
                "Target model does not have 'embed_tokens' or 'embedding' attribute"
            )
"""

BACKEND = """\
from torch import nn
from transformers import AutoModel

from .interfaces import SupportsEagle3


class TransformersForCausalLM(nn.Module, SupportsEagle3):
    def __init__(self, *, vllm_config, prefix=""):
        super().__init__()
        self.model = self._create_model(vllm_config.model_config.hf_config)

    def _create_model(self, config):
        return AutoModel.from_config(config)

    def compute_logits(self, hidden_states):
        return hidden_states

    def set_aux_hidden_state_layers(self, layers):
        self._layers = layers

    def get_eagle3_aux_hidden_state_layers(self):
        return (2,)


class TransformersMultiModalForCausalLM(TransformersForCausalLM):
    def get_language_model(self):
        # vLLM's: a class of the backend's whose `model` is the `language_model` or
        # `text_model` of transformers' model, built at run time.
        return self
"""

REGISTRY = """\
_TRANSFORMERS_BACKEND_MODELS = {
    "WordyForCausalLM": ("transformers", "TransformersForCausalLM"),
    "WteForCausalLM": ("transformers", "TransformersForCausalLM"),
    "TransformersForCausalLM": ("transformers", "TransformersForCausalLM"),
    "WordyVLForConditionalGeneration": ("transformers", "TransformersMultiModalForCausalLM"),
}

_VLLM_MODELS = {
    **_TRANSFORMERS_BACKEND_MODELS,
}
"""

AUTO = """\
from collections import OrderedDict

MODEL_MAPPING_NAMES = OrderedDict(
    [
        ("wordy", "WordyModel"),
        ("wte", "WteModel"),
        ("wordy_vl", "WordyVLModel"),
    ]
)

MODEL_FOR_CAUSAL_LM_MAPPING_NAMES = OrderedDict(
    [
        ("wordy", "WordyForCausalLM"),
        ("wte", "WteForCausalLM"),
    ]
)
"""


def modeling(name: str, embedding: str) -> str:
    return f"""\
from torch import nn


class {name}PreTrainedModel(nn.Module):
    pass


class {name}Model({name}PreTrainedModel):
    def __init__(self, config):
        super().__init__()
        self.{embedding} = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(config.num_hidden_layers)])
"""


def write_site(root: Path, *, with_transformers: bool = True) -> Path:
    """A site-packages folder: the vLLM tree, and transformers beside it."""
    files = {
        **{k: v for k, v in FILES.items() if "models/llama.py" not in k},
        "vllm/model_executor/models/interfaces.py": INTERFACES,
        "vllm/model_executor/models/registry.py": REGISTRY,
        "vllm/model_executor/models/transformers.py": BACKEND,
        "vllm/v1/spec_decode/eagle.py": PROPOSER,
    }
    if with_transformers:
        files |= {
            "transformers/__init__.py": "",
            "transformers/models/auto/modeling_auto.py": AUTO,
            "transformers/models/wordy/modeling_wordy.py": modeling("Wordy", "embed_tokens"),
            "transformers/models/wte/modeling_wte.py": modeling("Wte", "wte"),
        }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root / "vllm"


def check(*args: str) -> dict[str, dict]:
    result = runner.invoke(app, ["check", *args, "--format", "json", "--no-cache", "--verbose"])
    assert result.exit_code in (0, 1), result.output
    return {t["arch"]: t for t in json.loads(result.stdout)["targets"]}


def codes(target: dict) -> dict[str, str]:
    return {f["code"]: f["severity"] for f in target["findings"]}


def test_transformers_class_beside_vllm_decides(tmp_path: Path) -> None:
    targets = check(str(write_site(tmp_path)), "--require", "*")
    wordy, wte = targets["WordyForCausalLM"], targets["WteForCausalLM"]
    assert wordy["eagle3_ready"] is True
    # The decoder's taps are transformers' output recorders: a note, not a warning.
    assert codes(wordy) == {"EAG308": "info"}
    assert wte["eagle3_ready"] is False and codes(wte)["EAG412"] == "error"
    [eag412] = [f for f in wte["findings"] if f["code"] == "EAG412"]
    assert "transformers' WteModel (model_type 'wte')" in eag412["message"]
    assert (
        "Target model does not have 'embed_tokens' or 'embedding' attribute" in (eag412["message"])
    )


def test_the_generic_backend_waits_for_the_checkpoints_model_type(tmp_path: Path) -> None:
    tree = str(write_site(tmp_path))
    generic = check(tree, "--arch", "TransformersForCausalLM")["TransformersForCausalLM"]
    assert generic["eagle3_ready"] is None
    assert [u["code"] for u in generic["unverified"]] == ["EAG413"]
    assert generic["unverified"][0]["pass"] == ["--hf-config", "--model-type"]
    decided = check(tree, "--arch", "TransformersForCausalLM", "--model-type", "wte")
    assert decided["TransformersForCausalLM"]["eagle3_ready"] is False


def test_without_transformers_the_backend_targets_are_unverified(tmp_path: Path) -> None:
    """No transformers beside the tree and no requirement on it: not called ready, and the
    report says what would decide (never this interpreter's transformers)."""
    targets = check(str(write_site(tmp_path, with_transformers=False)), "--require", "*")
    # The multimodal wrapper too: its language model is transformers' as well (issue 52, item
    # 1: it was called ready).
    for arch in ("WordyForCausalLM", "WteForCausalLM", "WordyVLForConditionalGeneration"):
        assert targets[arch]["eagle3_ready"] is None
        [unverified] = targets[arch]["unverified"]
        assert unverified["code"] == "EAG413"
        assert "transformers is unknown here" in unverified["why"]


ERA = Path(__file__).resolve().parent.parent / "fixtures" / "eras" / "e3_mixin"
BACKEND_TARGET = """\
from vllm.model_executor.models.transformers import TransformersForCausalLM


class RecordedLmForCausalLM(TransformersForCausalLM):
    pass
"""


def era_with_backend_target(root: Path, transformers_version: str) -> Path:
    """A copy of the e3_mixin era (its backend shaped like 0.18's, transformers beside it) with
    a backend target, and transformers' metadata saying `transformers_version`."""
    tree = root / "e3_mixin"
    shutil.copytree(ERA, tree)
    (tree / "transformers-5.20.0.dist-info").rename(
        tree / f"transformers-{transformers_version}.dist-info"
    )
    model = tree / "vllm" / "model_executor" / "models" / "recorded_lm.py"
    model.write_text(BACKEND_TARGET)
    return model


@pytest.mark.parametrize(("version", "codes"), [("4.57.6", {"EAG421"}), ("5.20.0", set())])
def test_the_backends_version_check_decides_before_the_model(
    tmp_path: Path, version: str, codes: set[str]
) -> None:
    """0.16-0.22 check transformers' version before capturing (vLLM 0.16.0 and 0.18.0 require
    transformers<5, and check for 5.0.0 and 5.2.0): below it nothing else matters."""
    model = era_with_backend_target(tmp_path, version)
    target = check(str(model), "--model-type", "recorded_lm", "--require", "*")[
        "RecordedLmForCausalLM"
    ]
    found = {f["code"] for f in target["findings"] if f["code"].startswith("EAG42")}
    assert found == codes
    if codes:
        assert target["eagle3_ready"] is False
        [eag421] = [f for f in target["findings"] if f["code"] == "EAG421"]
        assert (
            "raises ImportError: Transformers modeling backend requires transformers>=5.2.0 for "
            "Eagle3 support, but got 4.57.6." in eag421["message"]
        )
