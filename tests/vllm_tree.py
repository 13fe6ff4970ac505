"""A small vLLM-shaped source tree for tests that need a whole tree rather than one file.

One registered Llama-like architecture that is not yet EAGLE-3 ready (so `fix` has work to do),
under the stub-protocol contract of vLLM 0.16.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

ARCH = "LlamaForCausalLM"
MODEL_FILE = "vllm/model_executor/models/llama.py"

INTERFACES = """\
from typing import ClassVar, Literal, Protocol, runtime_checkable


@runtime_checkable
class SupportsEagle3(Protocol):
    supports_eagle3: ClassVar[Literal[True]] = True

    def set_aux_hidden_state_layers(self, layers: tuple[int, ...]) -> None: ...

    def get_eagle3_aux_hidden_state_layers(self) -> tuple[int, ...]: ...


def supports_eagle3(model: object) -> bool:
    return isinstance(model, SupportsEagle3)
"""

REGISTRY = f'''\
_TEXT_GENERATION_MODELS = {{
    "{ARCH}": ("llama", "{ARCH}"),
}}

_VLLM_MODELS = {{
    **_TEXT_GENERATION_MODELS,
}}
'''

LLAMA = f"""\
import torch
from torch import nn


class LlamaModel(nn.Module):
    def __init__(self, *, vllm_config, prefix: str = "") -> None:
        super().__init__()
        config = vllm_config.model_config.hf_config
        self.embed_tokens = nn.Embedding(8, 4)
        self.layers = nn.ModuleList(LlamaDecoderLayer() for _ in range(config.num_hidden_layers))
        self.norm = nn.LayerNorm(4)

    def forward(self, input_ids, positions, intermediate_tensors=None, inputs_embeds=None):
        hidden_states = inputs_embeds
        residual = None
        for layer in self.layers:
            hidden_states, residual = layer(positions, hidden_states, residual)
        hidden_states, _ = self.norm(hidden_states, residual)
        return hidden_states


class {ARCH}(nn.Module):
    def __init__(self, *, vllm_config, prefix: str = "") -> None:
        super().__init__()
        self.model = LlamaModel(vllm_config=vllm_config, prefix=prefix)

    def forward(self, input_ids, positions, intermediate_tensors=None, inputs_embeds=None):
        return self.model(input_ids, positions, intermediate_tensors, inputs_embeds)


class LlamaDecoderLayer(nn.Module):
    def forward(self, positions, hidden_states, residual):
        if residual is None:
            residual = hidden_states
        hidden_states = self.mlp(hidden_states)
        return hidden_states, residual
"""

FILES = {
    "vllm/__init__.py": "",
    "vllm/_version.py": '__version__ = version = "0.16.0"\n',
    "vllm/model_executor/__init__.py": "",
    "vllm/model_executor/models/__init__.py": "",
    "vllm/model_executor/models/interfaces.py": INTERFACES,
    "vllm/model_executor/models/registry.py": REGISTRY,
    MODEL_FILE: LLAMA,
}


def write_vllm_tree(root: Path, prelude: Callable[[str], str] | None = None) -> Path:
    """Write the tree under `root`, each file starting with `prelude(relpath)`; returns the
    `vllm` package folder."""
    for relpath, text in FILES.items():
        path = root / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text((prelude(relpath) if prelude else "") + text, encoding="utf-8")
    return root / "vllm"
