"""Teaching vLLM's EAGLE proposer the image-token attribute of a multimodal target."""

from __future__ import annotations

import re

import libcst as cst
import libcst.matchers as m

from eagle3lint.shapes.image_tokens import MULTIMODAL_CHECK, find_image_token_map

from ._layout import (
    INDENT,
    bracketed,
    first_fitting,
    indented,
    insert_exploded,
    one_per_line,
    parse_statement,
)
from ._nodes import replace
from .errors import CodemodRefused

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ATTRIBUTE_PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


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
    attribute for every model), when its fallback (or last) branch does not start with the
    assignment to copy, or when `class_name` / `attr` are not identifiers.
    """
    if not _IDENTIFIER.fullmatch(class_name) or not _ATTRIBUTE_PATH.fullmatch(attr):
        raise CodemodRefused(f"{class_name!r} / {attr!r} are not a class name and an attribute")
    shape = find_image_token_map(module)
    if shape is None:
        raise CodemodRefused(f"no `if {MULTIMODAL_CHECK}(target_model):` block in this file")
    if shape.refusal is not None or shape.assigned is None:
        raise CodemodRefused(shape.refusal or "no assignment of the image token to copy")
    if any(class_name in branch.classes for branch in shape.branches):
        return module
    branches = [branch.node for branch in shape.branches]
    chain, column, last, assigned = branches[0], shape.column, branches[-1], shape.assigned
    assert isinstance(chain.test, cst.Comparison)
    model_name = module.code_for_node(chain.test.left)
    target_model = shape.target_model
    value = f"{target_model}.config.{attr}"
    for branch in branches:
        if _reads(module, branch, value):
            # One branch per attribute, as vLLM writes it: the class joins its list.
            at = column if branch is chain else column + len("el")
            return replace(module, branch, _with_class(module, branch, class_name, at))
    comparison = f'{model_name} == "{class_name}"'
    header = first_fitting(
        column,
        [
            f"elif {comparison}:",
            f"elif (\n{INDENT}{comparison}\n):",
            f'elif (\n{INDENT}{model_name}\n{INDENT}== "{class_name}"\n):',
        ],
    )
    assignment = first_fitting(
        column + len(INDENT),
        [f"{assigned} = {value}", f"{assigned} = (\n{INDENT}{value}\n)"],
    )
    # Parsed as an `if`: as the `orelse` of another `if`, libcst prints it as `elif`.
    branch = parse_statement(module, f"{header.removeprefix('el')}\n{indented(module, assignment)}")
    assert isinstance(branch, cst.If)
    return replace(module, last, last.with_changes(orelse=branch.with_changes(orelse=last.orelse)))


def _reads(module: cst.Module, branch: cst.If, value: str) -> bool:
    """Whether `branch` only assigns `value` (whatever its layout), for classes it names with
    `== "X"` or `in [...]`."""
    body = branch.body.body
    if len(body) != 1 or not m.matches(
        body[0], m.SimpleStatementLine(body=[m.Assign(targets=[m.AssignTarget()])])
    ):
        return False
    assert isinstance(body[0], cst.SimpleStatementLine) and isinstance(body[0].body[0], cst.Assign)
    written = module.code_for_node(body[0].body[0].value.with_changes(lpar=[], rpar=[]))
    test = branch.test
    named = isinstance(test, cst.Comparison) and len(test.comparisons) == 1
    return named and "".join(written.split()) == value


def _with_class(module: cst.Module, branch: cst.If, class_name: str, column: int) -> cst.If:
    """`branch` testing for `class_name` as well: `== "X"` becomes `in ["X", "Y"]`, an existing
    list gains the name at its end (one per line if it was)."""
    test = branch.test
    assert isinstance(test, cst.Comparison)
    target = test.comparisons[0].comparator
    if isinstance(target, cst.List):
        new = cst.Element(cst.SimpleString(f'"{class_name}"'))
        if one_per_line(target.lbracket.whitespace_after, target.elements):
            elements = insert_exploded(
                target.elements, len(target.elements), new, target.lbracket.whitespace_after
            )
            return branch.with_changes(
                test=test.with_changes(
                    comparisons=[
                        test.comparisons[0].with_changes(
                            comparator=target.with_changes(elements=elements)
                        )
                    ]
                )
            )
    names = [module.code_for_node(s) for s in m.findall(target, m.SimpleString())]
    model_name = module.code_for_node(test.left)
    header = bracketed(
        f"if {model_name} in [",
        [*names, f'"{class_name}"'],
        "]:",
        column=column,
        hug=False,
        magic_comma=False,
    )
    listed = cst.parse_expression(header[len("if ") : -len(":")], module.config_for_parsing)
    return branch.with_changes(test=listed)
