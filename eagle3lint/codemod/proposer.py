"""Teaching vLLM's EAGLE proposer the image-token attribute of a multimodal target."""

from __future__ import annotations

import re

import libcst as cst
import libcst.matchers as m

from ._layout import INDENT, columns, first_fitting, parse_statement, source
from ._nodes import replace
from .errors import CodemodRefused

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ATTRIBUTE_PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
# `self.get_model_name(target_model)`
_MODEL_NAME = m.Call(func=m.Attribute(attr=m.Name("get_model_name")), args=[m.Arg(m.Name())])
_DISPATCH = m.If(test=m.Comparison(left=_MODEL_NAME))


def add_proposer_branch(module: cst.Module, class_name: str, attr: str) -> cst.Module:
    """Make the proposer read the image token id of `class_name` from `config.<attr>`.

    In `if supports_multimodal(target_model):`, the chain of
    `if self.get_model_name(target_model) in [...]` / `elif ... == "X"` branches gains, before
    its fallback `else`, the branch vLLM 0.18 has for Kimi-K2.5::

        elif self.get_model_name(target_model) == "KimiK25ForConditionalGeneration":
            self.model.config.image_token_index = (
                target_model.config.media_placeholder_token_id
            )

    laid out as ruff-format would, with the dispatch call and the assigned attribute copied
    from the existing branches. `attr` may be dotted (`vision_config.image_token_id`). Nothing
    changes when any branch already names `class_name`.

    Refuses when there is no `if supports_multimodal(...)` block or more than one, when the
    block does not dispatch on `self.get_model_name(...)` (vLLM 0.10 and 0.11 assign one
    attribute for every model), or when `class_name` / `attr` are not identifiers.
    """
    if not _IDENTIFIER.fullmatch(class_name) or not _ATTRIBUTE_PATH.fullmatch(attr):
        raise CodemodRefused(f"{class_name!r} / {attr!r} are not a class name and an attribute")
    chain = _dispatch_chain(module)
    branches = _branches(chain)
    if any(
        m.findall(branch.test, m.SimpleString(value=m.MatchIfTrue(lambda v: class_name in v)))
        and class_name in _strings(branch.test)
        for branch in branches
    ):
        return module
    last = branches[-1]
    assigned = _assigned(module, last.orelse if isinstance(last.orelse, cst.Else) else last)
    test = chain.test
    assert isinstance(test, cst.Comparison)
    model_name = source(module, test.left)
    target_model = source(module, test.left.args[0].value)  # type: ignore[attr-defined]
    column = columns(module)(chain)
    comparison = f'{model_name} == "{class_name}"'
    header = first_fitting(
        column,
        [
            f"elif {comparison}:",
            f"elif (\n{INDENT}{comparison}\n):",
            f'elif (\n{INDENT}{model_name}\n{INDENT}== "{class_name}"\n):',
        ],
    )
    value = f"{target_model}.config.{attr}"
    assignment = first_fitting(
        column + len(INDENT),
        [f"{assigned} = {value}", f"{assigned} = (\n{INDENT}{value}\n)"],
    )
    # Parsed as an `if` at indentation zero; as `orelse` of another `if` it prints as `elif`.
    code = header.removeprefix("el") + "\n" + "".join(
        f"{module.default_indent}{line}\n" for line in assignment.splitlines()
    )
    branch = parse_statement(module, code)
    assert isinstance(branch, cst.If)
    new_last = last.with_changes(orelse=branch.with_changes(orelse=last.orelse))
    return replace(module, last, new_last)
