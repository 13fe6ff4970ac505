"""A sub-model built in `__init__`, recognised by its shape.

A `*ForCausalLM` builds its decoder as `self.model = DeepseekV2Model(...)` (or through a class
attribute, `self.model_cls(...)`); a multimodal wrapper builds its language model either the
same way or by architecture name, `self.language_model = init_vllm_registered_model(...,
architectures=["DeepseekV3ForCausalLM"])`, which the registry resolves. Target resolution
follows these descriptions from a wrapper to the decoder whose layer loop `fix` taps.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from eagle3lint.shapes.syntax import dotted, string_value


@dataclass(frozen=True)
class BuiltModel:
    """What the value assigned to a sub-model attribute builds."""

    callee: str | None
    """Dotted text of the callee when the value is a call: `DeepseekV2Model`, `self.model_cls`."""
    architectures: tuple[str, ...]
    """String literals given as `architectures=[...]` (the registry builds the first)."""
    config_part: str | None = None
    """The checkpoint's sub-config given as `hf_config=config.text_config` (without literal
    architectures: the registry builds what that sub-config names, BLIP-2's OPT or T5)."""


def built_model(value: cst.BaseExpression) -> BuiltModel:
    """What `value`, assigned to `self.<attr>` in `__init__`, builds."""
    if not isinstance(value, cst.Call):
        return BuiltModel(None, ())
    architectures: tuple[str, ...] = ()
    config_part = None
    callee = dotted(value.func)
    called_class = (callee or "").rpartition(".")[2][:1].isupper()
    for arg in value.args:
        named = arg.keyword is not None and arg.keyword.value == "architectures"
        if named and isinstance(arg.value, cst.List | cst.Tuple):
            architectures = _strings(arg.value)
        elif arg.keyword is not None and arg.keyword.value == "hf_config":
            config_part = _sub_config(arg.value)
        elif arg.keyword is not None and arg.keyword.value == "vllm_config" and not called_class:
            # Only a builder (`initialize_model`) resolves the config's architectures; a class
            # called directly is built whatever they say (vLLM 0.34's MossAudioModel builds
            # MossQwen3ForCausalLM with a config naming Qwen3ForCausalLM).
            architectures = architectures or _with_hf_config(arg.value)
        elif arg.keyword is not None and arg.keyword.value == "model_class":
            # `initialize_model(..., model_class=Llama4ForCausalLM)` builds that class, whatever
            # architectures the config names.
            chosen = dotted(arg.value)
            if chosen:
                return BuiltModel(chosen, ())
    return BuiltModel(callee, architectures, config_part)


def _sub_config(value: cst.BaseExpression) -> str | None:
    """`config.text_config` (or `self.config.text_config`, `config.get_text_config()`): the
    sub-config's key in config.json."""
    if isinstance(value, cst.Call) and (dotted(value.func) or "").endswith(".get_text_config"):
        return "text_config"
    owner, _, part = (dotted(value) or "").rpartition(".")
    return part if owner and part.endswith("_config") else None


def _strings(value: cst.List | cst.Tuple) -> tuple[str, ...]:
    return tuple(s for e in value.elements if (s := string_value(e.value)) is not None)


def _with_hf_config(value: cst.BaseExpression) -> tuple[str, ...]:
    """`vllm_config.with_hf_config(config.text_config, ["LlamaForCausalLM"])` (Llama 4): the
    architectures the config is built with, as `initialize_model` then resolves them."""
    if not (
        isinstance(value, cst.Call)
        and isinstance(value.func, cst.Attribute)
        and value.func.attr.value == "with_hf_config"
    ):
        return ()
    for position, arg in enumerate(value.args):
        is_architectures = (
            arg.keyword.value == "architectures" if arg.keyword is not None else position == 1
        )
        if is_architectures and isinstance(arg.value, cst.List | cst.Tuple):
            return _strings(arg.value)
    return ()
