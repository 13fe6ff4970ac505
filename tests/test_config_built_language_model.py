"""A wrapper whose language model is whatever the checkpoint's text config names.

BLIP-2 builds `self.language_model = init_vllm_registered_model(vllm_config=...,
hf_config=config.text_config)`: the class is the one that sub-config's `architectures` names,
else (vLLM's `VllmConfig.with_hf_config`) transformers' causal LM of its model_type, OPT by
default. vLLM 0.25.0's CPU build then raised the proposer's `AttributeError: Target model does
not have 'embed_tokens' or 'embedding' attribute` where eagle3lint named only EAG101 (found by
the end-to-end sweep). With `--hf-config`, EAG412 follows the config to that class.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_transformers_backend import PROPOSER, check, codes
from vllm_tree import FILES, INTERFACES

WRAPPER = """\
from torch import nn

from .utils import init_vllm_registered_model


class WrapForConditionalGeneration(nn.Module):
    def __init__(self, *, vllm_config, prefix=""):
        super().__init__()
        config = vllm_config.model_config.hf_config
        self.language_model = init_vllm_registered_model(
            vllm_config=vllm_config, hf_config=config.text_config, prefix="language_model"
        )

    def get_language_model(self):
        return self.language_model
"""

OPT_LIKE = """\
from torch import nn


class OptLikeDecoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)


class OptLikeModel(nn.Module):
    def __init__(self, *, vllm_config, prefix=""):
        super().__init__()
        self.decoder = OptLikeDecoder(vllm_config.model_config.hf_config)


class OptLikeForCausalLM(nn.Module):
    def __init__(self, *, vllm_config, prefix=""):
        super().__init__()
        self.model = OptLikeModel(vllm_config=vllm_config, prefix=prefix)
"""

REGISTRY = """\
_TEXT_GENERATION_MODELS = {
    "LlamaForCausalLM": ("llama", "LlamaForCausalLM"),
    "OptLikeForCausalLM": ("optlike", "OptLikeForCausalLM"),
}

_MULTIMODAL_MODELS = {
    "WrapForConditionalGeneration": ("wrap", "WrapForConditionalGeneration"),
}

_VLLM_MODELS = {
    **_TEXT_GENERATION_MODELS,
    **_MULTIMODAL_MODELS,
}
"""

AUTO = """\
from collections import OrderedDict

MODEL_FOR_CAUSAL_LM_MAPPING_NAMES = OrderedDict(
    [
        ("llama", "LlamaForCausalLM"),
        ("optlike", "OptLikeForCausalLM"),
    ]
)
"""


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    files = {
        **FILES,
        "vllm/model_executor/models/interfaces.py": INTERFACES,
        "vllm/model_executor/models/registry.py": REGISTRY,
        "vllm/model_executor/models/wrap.py": WRAPPER,
        "vllm/model_executor/models/optlike.py": OPT_LIKE,
        "vllm/model_executor/models/utils.py": "def init_vllm_registered_model(**kw): ...\n",
        "vllm/v1/spec_decode/eagle.py": PROPOSER,
        "transformers/__init__.py": "",
        "transformers/models/auto/modeling_auto.py": AUTO,
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path / "vllm"


def wrapper_verdict(tree: Path, text_config: dict[str, object] | None) -> dict:
    args = [str(tree), "--arch", "WrapForConditionalGeneration"]
    if text_config is not None:
        config = tree.parent / "config.json"
        architectures = ["WrapForConditionalGeneration"]
        config.write_text(json.dumps({"architectures": architectures, "text_config": text_config}))
        args += ["--hf-config", str(config)]
    return check(*args)["WrapForConditionalGeneration"]


@pytest.mark.parametrize(
    "text_config",
    [
        {"architectures": ["OptLikeForCausalLM"], "model_type": "whatever"},
        # No architectures: transformers' causal LM of the model_type, as vLLM chooses it.
        {"architectures": None, "model_type": "optlike"},
    ],
    ids=["named", "by-model-type"],
)
def test_the_language_model_the_text_config_names_is_followed(
    tree: Path, text_config: dict[str, object]
) -> None:
    target = wrapper_verdict(tree, text_config)
    (eag412,) = [f for f in target["findings"] if f["code"] == "EAG412"]
    assert (
        "(its language model, OptLikeForCausalLM) builds `model` as OptLikeModel"
        in (eag412["message"])
    )


@pytest.mark.parametrize(
    "text_config",
    [None, {"model_type": "llama"}, {"model_type": "unknown"}],
    ids=["no-config", "llama", "unknown-type"],
)
def test_a_language_model_with_an_embedding_or_unknown_is_not_blamed(
    tree: Path, text_config: dict[str, object] | None
) -> None:
    assert "EAG412" not in codes(wrapper_verdict(tree, text_config))
