"""Golden tests for `add_proposer_branch`."""

from __future__ import annotations

import textwrap
from collections.abc import Callable

import libcst as cst
import pytest

from eagle3lint.codemod import CodemodRefused, add_proposer_branch

# `assert_rewrites(transform, before, after, *, formatted=True)`, see conftest.py.
RewriteCheck = Callable[..., None]

# The multimodal part of EagleProposer.load_model in vLLM 0.16's v1/spec_decode/eagle.py.
PROPOSER = """\
class EagleProposer:
    def load_model(self, target_model: nn.Module) -> None:
        if supports_multimodal(target_model):
            # handle multimodality
            assert hasattr(target_model, "config")
            if self.get_model_name(target_model) in [
                "Qwen2_5_VLForConditionalGeneration",
                "Qwen3VLForConditionalGeneration",
            ]:
                self.model.config.image_token_index = target_model.config.image_token_id
            elif self.get_model_name(target_model) == "PixtralForConditionalGeneration":
                self.model.config.image_token_index = (
                    target_model.config.vision_config.image_token_id
                )
{branches}            else:
                self.model.config.image_token_index = (
                    target_model.config.image_token_index
                )
            target_language_model = target_model.get_language_model()
        else:
            target_language_model = target_model
"""
KIMI_BRANCH = """\
elif self.get_model_name(target_model) == "KimiK25ForConditionalGeneration":
    self.model.config.image_token_index = (
        target_model.config.media_placeholder_token_id
    )
"""


def proposer(*branches: str) -> str:
    code = "".join(textwrap.dedent(branch) for branch in branches)
    return PROPOSER.format(branches=textwrap.indent(code, " " * 12))


def adding(class_name: str, attr: str) -> Callable[[cst.Module], cst.Module]:
    return lambda module: add_proposer_branch(module, class_name, attr)


def test_adds_the_branch_vllm_0_18_has_for_kimi_k25(assert_rewrites: RewriteCheck) -> None:
    assert_rewrites(
        adding("KimiK25ForConditionalGeneration", "media_placeholder_token_id"),
        proposer(),
        proposer(KIMI_BRANCH),
    )


def test_short_attribute_stays_on_the_assignment_line(assert_rewrites: RewriteCheck) -> None:
    assert_rewrites(
        adding("Gemma3ForConditionalGeneration", "media_token_id"),
        proposer(),
        proposer(
            """\
            elif self.get_model_name(target_model) == "Gemma3ForConditionalGeneration":
                self.model.config.image_token_index = target_model.config.media_token_id
            """
        ),
    )


@pytest.mark.parametrize(
    ("class_name", "header"),
    [
        pytest.param(
            "MiniCPMVForConditionalGeneration",
            """\
            elif (
                self.get_model_name(target_model) == "MiniCPMVForConditionalGeneration"
            ):
            """,
            id="comparison-fits-in-parentheses",
        ),
        pytest.param(
            "Qwen2_5OmniThinkerForConditionalGeneration",
            """\
            elif (
                self.get_model_name(target_model)
                == "Qwen2_5OmniThinkerForConditionalGeneration"
            ):
            """,
            id="comparison-split",
        ),
    ],
)
def test_long_class_names_are_wrapped_like_ruff(
    assert_rewrites: RewriteCheck, class_name: str, header: str
) -> None:
    body = "    self.model.config.image_token_index = target_model.config.media_token_id\n"
    assert_rewrites(
        adding(class_name, "media_token_id"),
        proposer(),
        proposer(textwrap.dedent(header) + body),
    )


def test_dotted_attribute(assert_rewrites: RewriteCheck) -> None:
    assert_rewrites(
        adding("LlavaForConditionalGeneration", "text_config.image_token_id"),
        proposer(),
        proposer(
            """\
            elif self.get_model_name(target_model) == "LlavaForConditionalGeneration":
                self.model.config.image_token_index = (
                    target_model.config.text_config.image_token_id
                )
            """
        ),
    )


@pytest.mark.parametrize(
    "class_name", ["Qwen3VLForConditionalGeneration", "PixtralForConditionalGeneration"]
)
def test_class_named_in_any_branch_is_unchanged(
    assert_rewrites: RewriteCheck, class_name: str
) -> None:
    assert_rewrites(adding(class_name, "image_token_id"), proposer(), proposer())


def test_chain_without_else_gets_a_last_elif(assert_rewrites: RewriteCheck) -> None:
    before = proposer().replace(
        """\
            else:
                self.model.config.image_token_index = (
                    target_model.config.image_token_index
                )
""",
        "",
    )
    after = before.replace(
        "            target_language_model = target_model.get_language_model()\n",
        textwrap.indent(KIMI_BRANCH, " " * 12)
        + "            target_language_model = target_model.get_language_model()\n",
    )
    assert_rewrites(
        adding("KimiK25ForConditionalGeneration", "media_placeholder_token_id"), before, after
    )


def test_refuses_the_undispatched_block_of_0_10_and_0_11() -> None:
    code = """\
    class EagleProposer:
        def load_model(self, target_model: nn.Module) -> None:
            if supports_multimodal(target_model):
                # handle multimodality
                self.model.config.image_token_index = (
                    target_model.config.image_token_index)
                target_language_model = target_model.get_language_model()
    """
    with pytest.raises(CodemodRefused, match=r"does not dispatch on `self.get_model_name"):
        add_proposer_branch(cst.parse_module(textwrap.dedent(code)), "X", "image_token_id")


def test_refuses_when_the_fallback_does_not_assign() -> None:
    fallback = "            else:\n"
    code = proposer().replace(fallback, f"{fallback}                logger.warning('guessing')\n")
    with pytest.raises(CodemodRefused, match="does not start with an assignment"):
        add_proposer_branch(cst.parse_module(code), "X", "image_token_id")


def test_refuses_without_a_multimodal_block() -> None:
    with pytest.raises(CodemodRefused, match="no `if supports_multimodal"):
        add_proposer_branch(cst.parse_module("x = 1\n"), "X", "image_token_id")


def test_refuses_two_multimodal_blocks() -> None:
    code = proposer() + "\n\n" + proposer().replace("EagleProposer", "DraftModelProposer")
    with pytest.raises(CodemodRefused, match="2 `if supports_multimodal"):
        add_proposer_branch(cst.parse_module(code), "X", "image_token_id")


def test_refuses_names_that_are_not_identifiers() -> None:
    with pytest.raises(CodemodRefused, match="not a class name and an attribute"):
        add_proposer_branch(cst.parse_module(proposer()), 'X"', "image_token_id")
    with pytest.raises(CodemodRefused, match="not a class name and an attribute"):
        add_proposer_branch(cst.parse_module(proposer()), "X", "config..x")


def test_a_second_class_reading_the_same_attribute_joins_its_branch(
    assert_rewrites: RewriteCheck,
) -> None:
    """Fix-all on 0.16.0 added two identical adjacent branches for the two Kimi classes."""

    def both(module: cst.Module) -> cst.Module:
        module = adding("KimiK25ForConditionalGeneration", "media_placeholder_token_id")(module)
        return adding("KimiVLForConditionalGeneration", "media_placeholder_token_id")(module)

    assert_rewrites(
        both,
        proposer(),
        proposer(
            """\
            elif self.get_model_name(target_model) in [
                "KimiK25ForConditionalGeneration",
                "KimiVLForConditionalGeneration",
            ]:
                self.model.config.image_token_index = (
                    target_model.config.media_placeholder_token_id
                )
            """
        ),
    )


def test_a_class_reading_a_listed_attribute_joins_the_list(
    assert_rewrites: RewriteCheck,
) -> None:
    expected = proposer().replace(
        '"Qwen3VLForConditionalGeneration",\n',
        '"Qwen3VLForConditionalGeneration",\n                "Gemma3ForConditionalGeneration",\n',
    )
    assert_rewrites(
        adding("Gemma3ForConditionalGeneration", "image_token_id"), proposer(), expected
    )
