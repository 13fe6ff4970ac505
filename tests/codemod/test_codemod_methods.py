"""Golden tests for `add_aux_methods`, `add_delegating_methods` and `rename_method`."""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst
import pytest

from eagle3lint.codemod import (
    CodemodRefused,
    add_aux_methods,
    add_delegating_methods,
    rename_method,
)

# `assert_rewrites(transform, before, after, *, formatted=True)`, see conftest.py.
RewriteCheck = Callable[..., None]

Transform = Callable[[cst.Module], cst.Module]
OLD_GETTER = "get_eagle3_aux_hidden_state_layers"
NEW_GETTER = "get_eagle3_default_aux_hidden_state_layers"


def aux_methods(getter_name: str = OLD_GETTER, inner_attr: str = "model") -> Transform:
    return lambda module: add_aux_methods(
        module, "DeepseekV2ForCausalLM", getter_name=getter_name, inner_attr=inner_attr
    )


def delegating(getter_name: str = OLD_GETTER) -> Transform:
    return lambda module: add_delegating_methods(
        module, "KimiK25ForConditionalGeneration", getter_name=getter_name
    )


CAUSAL_LM = """\
class DeepseekV2ForCausalLM(nn.Module, SupportsPP):
    def __init__(self, *, vllm_config: VllmConfig, prefix: str = ""):
        super().__init__()
        self.model = DeepseekV2Model(vllm_config=vllm_config, prefix=prefix)
        self.set_moe_parameters()

    def set_moe_parameters(self):
        self.moe_layers = []
{methods}
    def embed_input_ids(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.model.embed_input_ids(input_ids)
"""
SETTER = """
    def set_aux_hidden_state_layers(self, layers: tuple[int, ...]) -> None:
        self.model.aux_hidden_state_layers = layers
"""
GETTER = """
    def {name}(self) -> tuple[int, ...]:
        num_layers = len(self.model.layers)
        return (2, num_layers // 2, num_layers - 3)
"""


def causal_lm(*methods: str) -> str:
    return CAUSAL_LM.format(methods="".join(methods))


def test_aux_methods_go_after_the_helpers_init_calls(assert_rewrites: RewriteCheck) -> None:
    # Where vLLM 0.18 put them in deepseek_v2.py.
    assert_rewrites(aux_methods(), causal_lm(), causal_lm(SETTER, GETTER.format(name=OLD_GETTER)))


def test_aux_methods_with_the_0_18_getter_name(assert_rewrites: RewriteCheck) -> None:
    assert_rewrites(
        aux_methods(NEW_GETTER), causal_lm(), causal_lm(SETTER, GETTER.format(name=NEW_GETTER))
    )


def test_aux_methods_through_another_inner_attribute(assert_rewrites: RewriteCheck) -> None:
    after = causal_lm(SETTER, GETTER.format(name=OLD_GETTER))
    after = after.replace("self.model.aux_hidden", "self.decoder.aux_hidden").replace(
        "len(self.model.layers)", "len(self.decoder.layers)"
    )
    assert_rewrites(aux_methods(inner_attr="decoder"), causal_lm(), after)


def test_only_the_missing_method_is_added_next_to_the_other(assert_rewrites: RewriteCheck) -> None:
    getter = GETTER.format(name=OLD_GETTER)
    assert_rewrites(aux_methods(), causal_lm(getter), causal_lm(SETTER, getter))
    assert_rewrites(aux_methods(), causal_lm(SETTER), causal_lm(SETTER, getter))


def test_without_init_methods_go_last(assert_rewrites: RewriteCheck) -> None:
    assert_rewrites(
        aux_methods(),
        "class DeepseekV2ForCausalLM(nn.Module):\n    model_cls = DeepseekV2Model\n",
        "class DeepseekV2ForCausalLM(nn.Module):\n    model_cls = DeepseekV2Model\n"
        + SETTER
        + GETTER.format(name=OLD_GETTER),
    )


def test_methods_first_in_the_class_keep_methods_apart(assert_rewrites: RewriteCheck) -> None:
    before = """\
    class KimiK25ForConditionalGeneration(nn.Module):
        def load_weights(self, weights: Iterable[tuple[str, torch.Tensor]]):
            pass
    """
    after = """\
    class KimiK25ForConditionalGeneration(nn.Module):
        def set_aux_hidden_state_layers(self, layers: tuple[int, ...]) -> None:
            self.language_model.set_aux_hidden_state_layers(layers)

        def get_eagle3_aux_hidden_state_layers(self) -> tuple[int, ...]:
            return self.language_model.get_eagle3_aux_hidden_state_layers()

        def load_weights(self, weights: Iterable[tuple[str, torch.Tensor]]):
            pass
    """
    assert_rewrites(delegating(), before, after)


WRAPPER = """\
class KimiK25ForConditionalGeneration(nn.Module, SupportsMultiModal):
    def compute_logits(self, hidden_states: torch.Tensor, **kwargs) -> torch.Tensor:
        logits = self.language_model.compute_logits(hidden_states)
        return logits
{methods}
    def load_weights(self, weights: Iterable[tuple[str, torch.Tensor]]):
        loader = AutoWeightsLoader(self)
        return loader.load_weights(weights, mapper=self.hf_to_vllm_mapper)
"""
DELEGATING = """
    def set_aux_hidden_state_layers(self, layers: tuple[int, ...]) -> None:
        self.language_model.set_aux_hidden_state_layers(layers)

    def {name}(self) -> tuple[int, ...]:
        return self.language_model.{name}()
"""


def test_delegating_methods_go_before_load_weights_like_kimi_k25_0_18(
    assert_rewrites: RewriteCheck,
) -> None:
    assert_rewrites(
        delegating(),
        WRAPPER.format(methods=""),
        WRAPPER.format(methods=DELEGATING.format(name=OLD_GETTER)),
    )


def test_delegating_methods_with_the_0_18_getter_name(assert_rewrites: RewriteCheck) -> None:
    assert_rewrites(
        delegating(NEW_GETTER),
        WRAPPER.format(methods=""),
        WRAPPER.format(methods=DELEGATING.format(name=NEW_GETTER)),
    )


def test_rename_method_and_its_self_calls(assert_rewrites: RewriteCheck) -> None:
    before = """\
    class M(nn.Module):
        def get_eagle3_aux_hidden_state_layers(self) -> tuple[int, ...]:
            return self.language_model.get_eagle3_aux_hidden_state_layers()

        def layers_for_logging(self) -> str:
            return str(self.get_eagle3_aux_hidden_state_layers())
    """
    # The old name stays as an alias for any caller elsewhere; the renamed method's delegation
    # calls the new name, which every language model the runner accepts defines (issue 24).
    after = """\
    class M(nn.Module):
        def get_eagle3_default_aux_hidden_state_layers(self) -> tuple[int, ...]:
            return self.language_model.get_eagle3_default_aux_hidden_state_layers()

        # Callers of the old name (a wrapper delegating to this model) keep working.
        get_eagle3_aux_hidden_state_layers = get_eagle3_default_aux_hidden_state_layers

        def layers_for_logging(self) -> str:
            return str(self.get_eagle3_default_aux_hidden_state_layers())
    """
    assert_rewrites(
        lambda module: rename_method(module, "M", OLD_GETTER, NEW_GETTER), before, after
    )


def test_rename_refusals() -> None:
    both = cst.parse_module(
        "class M:\n"
        f"    def {OLD_GETTER}(self):\n        pass\n\n"
        f"    def {NEW_GETTER}(self):\n        pass\n"
    )
    with pytest.raises(CodemodRefused, match="already defines"):
        rename_method(both, "M", OLD_GETTER, NEW_GETTER)
    neither = cst.parse_module("class M:\n    pass\n")
    with pytest.raises(CodemodRefused, match="defines no method"):
        rename_method(neither, "M", OLD_GETTER, NEW_GETTER)


def test_missing_class_is_refused() -> None:
    module = cst.parse_module("class Other:\n    pass\n")
    with pytest.raises(CodemodRefused, match="no module-level class"):
        add_aux_methods(module, "DeepseekV2ForCausalLM", getter_name=OLD_GETTER)
    with pytest.raises(CodemodRefused, match="no module-level class"):
        add_delegating_methods(module, "KimiK25ForConditionalGeneration", getter_name=OLD_GETTER)
