"""Golden tests for `add_gate_entry`."""

from __future__ import annotations

import textwrap
from collections.abc import Callable

import libcst as cst
import pytest

from eagle3lint.codemod import CodemodRefused, add_gate_entry

# `assert_rewrites(transform, before, after, *, formatted=True)`, see conftest.py.
RewriteCheck = Callable[..., None]

CONFIG = """\
class SpeculativeConfig:
    def _verify_args(self) -> Self:
{gate}        if (
            self.method == "eagle3"
            and self.target_model_config
            and not any(
                supported_model in self.target_model_config.hf_text_config.model_type
                for supported_model in {name}
            )
        ):
            raise ValueError(f"EAGLE-3 needs one of {{{name}}}")
        return self
"""


def config(gate: str, name: str = "aux_hidden_states_supported") -> str:
    return CONFIG.format(gate=textwrap.indent(textwrap.dedent(gate), " " * 8), name=name)


def adding(model_type: str) -> Callable[[cst.Module], cst.Module]:
    return lambda module: add_gate_entry(module, model_type)


def test_one_per_line_list_gets_a_line(assert_rewrites: RewriteCheck) -> None:
    # vLLM 0.17 names the list aux_hidden_states_supported.
    assert_rewrites(
        adding("deepseek_v2"),
        config(
            """\
            aux_hidden_states_supported = [
                "llama",
                "qwen",  # also matches qwen2, qwen3
            ]
            """
        ),
        config(
            """\
            aux_hidden_states_supported = [
                "llama",
                "qwen",  # also matches qwen2, qwen3
                "deepseek_v2",
            ]
            """
        ),
    )


def test_one_line_list_that_fits_stays_on_one_line(assert_rewrites: RewriteCheck) -> None:
    # vLLM 0.12-0.15 name it eagle3_target_supported.
    name = "eagle3_target_supported"
    assert_rewrites(
        adding("deepseek_v2"),
        config('eagle3_target_supported = ["llama", "qwen", "minicpm", "gpt_oss"]\n', name),
        config(
            'eagle3_target_supported = ["llama", "qwen", "minicpm", "gpt_oss", "deepseek_v2"]\n',
            name,
        ),
    )


def test_one_line_list_that_overflows_goes_one_per_line(assert_rewrites: RewriteCheck) -> None:
    name = "eagle3_target_supported"
    assert_rewrites(
        adding("hunyuan_v1_dense"),
        config(
            'eagle3_target_supported = ["llama", "qwen", "minicpm", "gpt_oss", "afmoe"]\n', name
        ),
        config(
            """\
            eagle3_target_supported = [
                "llama",
                "qwen",
                "minicpm",
                "gpt_oss",
                "afmoe",
                "hunyuan_v1_dense",
            ]
            """,
            name,
        ),
    )


def test_model_type_covered_by_a_substring_is_unchanged(assert_rewrites: RewriteCheck) -> None:
    code = config('aux_hidden_states_supported = ["llama", "qwen"]\n')
    assert_rewrites(adding("qwen3_next"), code, code)


def test_refuses_the_single_llama_check_of_0_10() -> None:
    code = """\
    class SpeculativeConfig:
        def _verify_args(self) -> Self:
            if self.method == "eagle3" and self.target_model_config and \\
                "llama" not in self.target_model_config.hf_text_config.model_type:
                raise ValueError("Eagle3 is only supported for Llama models.")
    """
    with pytest.raises(CodemodRefused, match=r"a single `\"\.\.\.\" not in \.\.\.model_type` test"):
        add_gate_entry(cst.parse_module(textwrap.dedent(code)), "deepseek_v2")


def test_refuses_without_a_gate() -> None:
    with pytest.raises(CodemodRefused, match="no EAGLE-3 model_type allow-list"):
        add_gate_entry(cst.parse_module("SUPPORTED = ['llama']\n"), "deepseek_v2")


def test_refuses_a_list_assigned_twice_or_not_a_literal() -> None:
    twice = config('aux_hidden_states_supported = ["llama"]\naux_hidden_states_supported = []\n')
    with pytest.raises(CodemodRefused, match="assigned a list of strings 2 times"):
        add_gate_entry(cst.parse_module(twice), "deepseek_v2")
    computed = config("aux_hidden_states_supported = list(SUPPORTED)\n")
    with pytest.raises(CodemodRefused, match="assigned a list of strings 0 times"):
        add_gate_entry(cst.parse_module(computed), "deepseek_v2")


def test_refuses_two_gates() -> None:
    gate = 'aux_hidden_states_supported = ["llama"]\n'
    code = config(gate) + "\n\n" + config(gate).replace("SpeculativeConfig", "Other")
    with pytest.raises(CodemodRefused, match="2 `any"):
        add_gate_entry(cst.parse_module(code), "deepseek_v2")


def test_refuses_a_model_type_that_is_not_plain() -> None:
    with pytest.raises(CodemodRefused, match="does not look like"):
        add_gate_entry(cst.parse_module(config('x = ["llama"]\n', "x")), 'a"b')
