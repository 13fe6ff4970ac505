"""Golden tests on whole fixture files of each era: `<name>.py` becomes `<name>.<case>.py`."""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst
import pytest

from eagle3lint.codemod import add_aux_methods, add_base, add_forward_taps, add_mixin_taps

# `assert_rewrites(transform, before, after, *, formatted=True)`, see conftest.py.
RewriteCheck = Callable[..., None]

Transform = Callable[[cst.Module], cst.Module]


def deepseek_v2_stub(module: cst.Module) -> cst.Module:
    """What vLLM 0.18 did to deepseek_v2.py by hand (with a None-safe tap)."""
    module = add_forward_taps(module, "DeepseekV2Model")
    module = add_base(module, "DeepseekV2ForCausalLM")
    return add_aux_methods(
        module, "DeepseekV2ForCausalLM", getter_name="get_eagle3_aux_hidden_state_layers"
    )


def deepseek_v2_mixin(module: cst.Module) -> cst.Module:
    module = add_mixin_taps(module, "DeepseekV2Model")
    return add_base(module, "DeepseekV2ForCausalLM")


def mixtral_mixin(module: cst.Module) -> cst.Module:
    # From 0.18 the SupportsEagle3 defaults reach the decoder through the mixin: no methods.
    module = add_mixin_taps(module, "MixtralModel")
    return add_base(module, "MixtralForCausalLM")


@pytest.mark.parametrize(
    ("before", "after", "transform"),
    [
        ("deepseek_v2_016.py", "deepseek_v2_016.stub_taps.py", deepseek_v2_stub),
        ("deepseek_v2_016.py", "deepseek_v2_016.mixin_taps.py", deepseek_v2_mixin),
        ("mixtral_022.py", "mixtral_022.mixin_taps.py", mixtral_mixin),
    ],
)
def test_fixture_golden(
    assert_rewrites: RewriteCheck,
    fixture_source: Callable[[str], str],
    before: str,
    after: str,
    transform: Transform,
) -> None:
    assert_rewrites(transform, fixture_source(before), fixture_source(after))
