"""Golden tests for `add_base`."""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst
import pytest

from eagle3lint.codemod import CodemodRefused, add_base

# `assert_rewrites(transform, before, after, *, formatted=True)`, see conftest.py.
RewriteCheck = Callable[..., None]


def adding(
    class_name: str, base: str = "SupportsEagle3", *, relative: bool = True
) -> Callable[[cst.Module], cst.Module]:
    return lambda module: add_base(module, class_name, base, relative=relative)


def test_hugged_bases_that_overflow_go_one_per_line(assert_rewrites: RewriteCheck) -> None:
    # vLLM 0.16 -> 0.18 deepseek_v2.py.
    assert_rewrites(
        adding("DeepseekV2ForCausalLM"),
        """\
        from .interfaces import SupportsEagle, SupportsLoRA, SupportsPP


        class DeepseekV2ForCausalLM(
            nn.Module, SupportsPP, DeepseekV2MixtureOfExperts, SupportsLoRA, SupportsEagle
        ):
            model_cls = DeepseekV2Model
        """,
        """\
        from .interfaces import SupportsEagle, SupportsEagle3, SupportsLoRA, SupportsPP


        class DeepseekV2ForCausalLM(
            nn.Module,
            SupportsPP,
            DeepseekV2MixtureOfExperts,
            SupportsLoRA,
            SupportsEagle,
            SupportsEagle3,
        ):
            model_cls = DeepseekV2Model
        """,
    )


def test_bases_on_the_class_line_become_hugged_when_too_long(assert_rewrites: RewriteCheck) -> None:
    # vLLM's llama.py shape.
    assert_rewrites(
        adding("LlamaForCausalLM"),
        """\
        from .interfaces import SupportsEagle, SupportsLoRA, SupportsPP


        class LlamaForCausalLM(nn.Module, SupportsLoRA, SupportsPP, SupportsEagle):
            pass
        """,
        """\
        from .interfaces import SupportsEagle, SupportsEagle3, SupportsLoRA, SupportsPP


        class LlamaForCausalLM(
            nn.Module, SupportsLoRA, SupportsPP, SupportsEagle, SupportsEagle3
        ):
            pass
        """,
    )


def test_without_supports_eagle_the_base_goes_last_before_keywords(
    assert_rewrites: RewriteCheck,
) -> None:
    assert_rewrites(
        adding("Qwen3Model", "EagleModelMixin"),
        """\
        from .interfaces import SupportsPP


        class Qwen3Model(nn.Module, metaclass=ModelMeta):
            pass
        """,
        """\
        from .interfaces import EagleModelMixin, SupportsPP


        class Qwen3Model(nn.Module, EagleModelMixin, metaclass=ModelMeta):
            pass
        """,
    )


def test_one_per_line_bases_keep_layout_and_comments(assert_rewrites: RewriteCheck) -> None:
    assert_rewrites(
        adding("KimiK25ForConditionalGeneration", relative=False),
        """\
        from vllm.model_executor.models.interfaces import SupportsEagle, SupportsPP


        @MULTIMODAL_REGISTRY.register_processor(KimiK25MultiModalProcessor)
        class KimiK25ForConditionalGeneration(
            nn.Module,
            SupportsPP,  # pipeline parallel
            SupportsEagle,
            SupportsQuant,
        ):
            pass
        """,
        """\
        from vllm.model_executor.models.interfaces import (
            SupportsEagle,
            SupportsEagle3,
            SupportsPP,
        )


        @MULTIMODAL_REGISTRY.register_processor(KimiK25MultiModalProcessor)
        class KimiK25ForConditionalGeneration(
            nn.Module,
            SupportsPP,  # pipeline parallel
            SupportsEagle,
            SupportsEagle3,
            SupportsQuant,
        ):
            pass
        """,
    )


def test_base_appended_to_one_per_line_bases_leaves_the_last_comment(
    assert_rewrites: RewriteCheck,
) -> None:
    assert_rewrites(
        adding("Qwen3Model", "EagleModelMixin"),
        """\
        from .interfaces import EagleModelMixin


        class Qwen3Model(
            nn.Module,
            SupportsPP,  # pipeline parallel
        ):
            pass
        """,
        """\
        from .interfaces import EagleModelMixin


        class Qwen3Model(
            nn.Module,
            SupportsPP,  # pipeline parallel
            EagleModelMixin,
        ):
            pass
        """,
    )


def test_class_without_bases_gets_parentheses(assert_rewrites: RewriteCheck) -> None:
    assert_rewrites(
        adding("TinyModel"),
        "from .interfaces import SupportsPP\n\n\nclass TinyModel:\n    pass\n",
        "from .interfaces import SupportsEagle3, SupportsPP\n\n\n"
        "class TinyModel(SupportsEagle3):\n    pass\n",
    )


def test_qualified_base_counts_as_present(assert_rewrites: RewriteCheck) -> None:
    code = "class M(nn.Module, interfaces.SupportsEagle3):\n    pass\n"
    assert_rewrites(adding("M"), code, code)


def test_refuses_missing_class() -> None:
    with pytest.raises(CodemodRefused, match="no module-level class 'Missing'"):
        add_base(cst.parse_module("class Other:\n    pass\n"), "Missing")


def test_refuses_to_reflow_bases_with_comments() -> None:
    code = "class M(  # the usual\n    nn.Module, SupportsPP\n):\n    pass\n"
    with pytest.raises(CodemodRefused, match="contains comments"):
        add_base(cst.parse_module(code), "M")
