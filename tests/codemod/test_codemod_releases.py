"""Every transformation applied to real vLLM files, compared with what upstream did next.

vLLM 0.18 made DeepSeek-V2 and Kimi-K2.5 EAGLE-3 targets by hand. Applying the codemod to the
0.16 and 0.17 files must give the same EAGLE-3 parts as 0.18, apart from one deliberate
difference: our tap is None-safe for the residual of the first layer. The files come from the
`release_root` fixture (see conftest.py), so these tests skip when the sources are missing.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import libcst as cst
import pytest

from eagle3lint.codemod import (
    add_aux_methods,
    add_base,
    add_delegating_methods,
    add_forward_taps,
    add_gate_entry,
    add_mixin_taps,
    add_proposer_branch,
    render_checked,
)

Transform = Callable[[cst.Module], cst.Module]
Release = Callable[[str], Path]
BEFORE = ["0.16.0", "0.17.0"]
AFTER = "0.18.0"
GETTER = "get_eagle3_aux_hidden_state_layers"
# As in the code of the forward method alone, which libcst prints from indentation zero.
OUR_TAP = """\
            aux_hidden_states.append(
                hidden_states + residual if residual is not None else hidden_states
            )
"""
UPSTREAM_TAP = "            aux_hidden_states.append(hidden_states + residual)\n"


def read(release_root: Release, version: str, path: str) -> cst.Module:
    return cst.parse_module((release_root(version) / path).read_text())


def apply(module: cst.Module, path: str, *transforms: Transform) -> cst.Module:
    """Apply the transforms in turn, checking that the result compiles and is a fixed point."""
    original = module.code
    for transform in transforms:
        module = transform(module)
    code = render_checked(original, module, path)
    again = module
    for transform in transforms:
        again = transform(again)
    assert again.code == code
    return module


def find_class(module: cst.Module, name: str) -> cst.ClassDef:
    [found] = [s for s in module.body if isinstance(s, cst.ClassDef) and s.name.value == name]
    return found


def header(module: cst.Module, class_name: str) -> str:
    """`class Name(bases): ...` without decorators and body."""
    cls = find_class(module, class_name).with_changes(
        leading_lines=[], decorators=[], body=cst.SimpleStatementSuite([cst.Expr(cst.Ellipsis())])
    )
    return module.code_for_node(cls)


def methods(module: cst.Module, class_name: str) -> dict[str, str]:
    """Code of each method of the class, in order."""
    body = find_class(module, class_name).body.body
    return {s.name.value: module.code_for_node(s) for s in body if isinstance(s, cst.FunctionDef)}


def interfaces_import(module: cst.Module) -> str:
    [line] = [
        s
        for s in module.body
        if isinstance(s, cst.SimpleStatementLine)
        and isinstance(s.body[0], cst.ImportFrom)
        and module.code_for_node(s.body[0]).startswith(
            ("from .interfaces ", "from vllm.model_executor.models.interfaces ")
        )
    ]
    return module.code_for_node(line)


def follows(names: list[str], first: str, second: str, then: str) -> bool:
    return names.index(second) == names.index(first) + 1 and names.index(then) > names.index(second)


@pytest.mark.parametrize("version", BEFORE)
def test_deepseek_v2_matches_upstream_0_18(release_root: Release, version: str) -> None:
    path = "model_executor/models/deepseek_v2.py"
    ours = apply(
        read(release_root, version, path),
        path,
        lambda module: add_forward_taps(
            module,
            "DeepseekV2Model",
        ),
        lambda module: add_base(module, "DeepseekV2ForCausalLM"),
        lambda module: add_aux_methods(module, "DeepseekV2ForCausalLM", getter_name=GETTER),
    )
    upstream = read(release_root, AFTER, path)
    assert interfaces_import(ours) == interfaces_import(upstream)
    assert header(ours, "DeepseekV2ForCausalLM") == header(upstream, "DeepseekV2ForCausalLM")

    our_model, upstream_model = (
        methods(ours, "DeepseekV2Model"),
        methods(upstream, "DeepseekV2Model"),
    )
    tail = "    self.aux_hidden_state_layers = tuple[int, ...]()\n"
    assert our_model["__init__"].endswith("\n\n" + tail)
    assert upstream_model["__init__"].endswith("\n\n" + tail)
    start = "    aux_hidden_states = []\n"
    our_forward = our_model["forward"]
    assert OUR_TAP in our_forward
    upstream_forward = upstream_model["forward"]
    assert (
        our_forward[our_forward.index(start) :].replace(OUR_TAP, UPSTREAM_TAP)
        == upstream_forward[upstream_forward.index(start) :]
    )

    our_lm, upstream_lm = (
        methods(ours, "DeepseekV2ForCausalLM"),
        methods(upstream, "DeepseekV2ForCausalLM"),
    )
    for name in ("set_aux_hidden_state_layers", GETTER):
        assert our_lm[name] == upstream_lm[name]
    for names in (list(our_lm), list(upstream_lm)):
        assert names.index("set_moe_parameters") + 1 == names.index("set_aux_hidden_state_layers")
        assert names.index(GETTER) + 1 == names.index("embed_input_ids")


@pytest.mark.parametrize("version", BEFORE)
def test_deepseek_v2_mixin_taps_compile(release_root: Release, version: str) -> None:
    path = "model_executor/models/deepseek_v2.py"
    ours = apply(
        read(release_root, version, path),
        path,
        lambda module: add_mixin_taps(
            module,
            "DeepseekV2Model",
        ),
    )
    assert "class DeepseekV2Model(nn.Module, EagleModelMixin):" in ours.code


@pytest.mark.parametrize("version", BEFORE)
def test_kimi_k25_matches_upstream_0_18(release_root: Release, version: str) -> None:
    path = "model_executor/models/kimi_k25.py"
    wrapper = "KimiK25ForConditionalGeneration"
    ours = apply(
        read(release_root, version, path),
        path,
        lambda module: add_base(module, wrapper, "SupportsEagle", relative=False),
        lambda module: add_base(module, wrapper, relative=False),
        lambda module: add_delegating_methods(module, wrapper, getter_name=GETTER),
    )
    upstream = read(release_root, AFTER, path)
    assert interfaces_import(ours) == interfaces_import(upstream)
    assert header(ours, wrapper) == header(upstream, wrapper)
    our_methods, upstream_methods = methods(ours, wrapper), methods(upstream, wrapper)
    for name in ("set_aux_hidden_state_layers", GETTER):
        assert our_methods[name] == upstream_methods[name]
    for names in (list(our_methods), list(upstream_methods)):
        assert follows(names, "compute_logits", "set_aux_hidden_state_layers", GETTER)
        assert names.index(GETTER) + 1 == names.index("load_weights")


def allow_list(module: cst.Module) -> str:
    code = module.code
    start = code.index("_supported = [\n")
    return code[start : code.index("]\n", start) + 2]


@pytest.mark.parametrize("version", BEFORE)
def test_gate_matches_upstream_0_18(release_root: Release, version: str) -> None:
    path = "config/speculative.py"
    added = ["deepseek_v2", "deepseek_v3", "kimi_k2", "kimi_k25"]
    ours = apply(
        read(release_root, version, path),
        path,
        *(
            lambda module, model_type=model_type: add_gate_entry(module, model_type)
            for model_type in added
        ),
    )
    upstream = allow_list(read(release_root, AFTER, path))
    # "kimi_k2" already admits "kimi_k25" (the gate matches substrings), which upstream
    # listed all the same; 0.17 also added "nemotron_h", unrelated to these models.
    expected = upstream.replace('            "kimi_k25",\n', "")
    if version == "0.16.0":
        expected = expected.replace('            "nemotron_h",\n', "")
    assert allow_list(ours).split("= [", 1)[1] == expected.split("= [", 1)[1]


@pytest.mark.parametrize("version", BEFORE)
def test_proposer_matches_upstream_0_18(release_root: Release, version: str) -> None:
    path = "v1/spec_decode/eagle.py"
    ours = apply(
        read(release_root, version, path),
        path,
        lambda module: add_proposer_branch(
            module, "KimiK25ForConditionalGeneration", "media_placeholder_token_id"
        ),
    )
    upstream = read(release_root, AFTER, path).code
    start = '            elif self.get_model_name(target_model) == "KimiK25'
    branch = upstream[
        upstream.index(start) : upstream.index("            else:\n", upstream.index(start))
    ]
    assert branch in ours.code
    assert ours.code.index(branch) + len(branch) == ours.code.index(
        "            else:\n", ours.code.index(branch)
    )
