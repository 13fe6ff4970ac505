"""Teaching vLLM's EAGLE proposer the image-token attribute of a multimodal target."""

from __future__ import annotations

import re

import libcst as cst
import libcst.matchers as m

from ._layout import (
    INDENT,
    bracketed,
    first_fitting,
    indented,
    insert_exploded,
    one_per_line,
    parse_statement,
)
from ._nodes import block_indent, locate, replace
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
    attribute for every model), when its fallback (or last) branch does not start with the
    assignment to copy, or when `class_name` / `attr` are not identifiers.
    """
    if not _IDENTIFIER.fullmatch(class_name) or not _ATTRIBUTE_PATH.fullmatch(attr):
        raise CodemodRefused(f"{class_name!r} / {attr!r} are not a class name and an attribute")
    chain, column = _dispatch_chain(module)
    branches = _branches(chain)
    if any(class_name in _strings(branch.test) for branch in branches):
        return module
    last = branches[-1]
    assigned = _assigned_target(module, last.orelse if isinstance(last.orelse, cst.Else) else last)
    assert isinstance(chain.test, cst.Comparison) and isinstance(chain.test.left, cst.Call)
    model_name = module.code_for_node(chain.test.left)
    target_model = module.code_for_node(chain.test.left.args[0].value)
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


def _dispatch_chain(module: cst.Module) -> tuple[cst.If, int]:
    """The `if self.get_model_name(...) ...` chain inside `if supports_multimodal(...):`.

    Returned with its column.
    """
    blocks = locate(
        module, m.If(test=m.Call(func=m.Name("supports_multimodal"), args=[m.Arg(m.Name())]))
    )
    if not blocks:
        raise CodemodRefused("no `if supports_multimodal(target_model):` block in this file")
    if len(blocks) > 1:
        raise CodemodRefused(
            f"{len(blocks)} `if supports_multimodal(...):` blocks; cannot tell which one to extend"
        )
    block = blocks[0].node
    assert isinstance(block, cst.If)
    chains = [s for s in block.body.body if m.matches(s, _DISPATCH)]
    if len(chains) != 1:
        raise CodemodRefused(
            "the `if supports_multimodal(...):` block does not dispatch on "
            "`self.get_model_name(...)` with one if/elif chain; it sets the image token the "
            "same way for every model"
        )
    chain = chains[0]
    assert isinstance(chain, cst.If)
    return chain, blocks[0].column + block_indent(module, block.body)


def _branches(chain: cst.If) -> list[cst.If]:
    branches = [chain]
    while isinstance(branches[-1].orelse, cst.If):
        branches.append(branches[-1].orelse)
    return branches


def _strings(test: cst.BaseExpression) -> set[str]:
    return {
        str(string.evaluated_value)
        for string in m.findall(test, m.SimpleString())
        if isinstance(string, cst.SimpleString)
    }


def _assigned_target(module: cst.Module, block: cst.If | cst.Else) -> str:
    """What the fallback (or last) branch assigns the image token to."""
    assignment = m.SimpleStatementLine(body=[m.Assign(targets=[m.AssignTarget()])])
    first = block.body.body[0]
    if not (isinstance(block.body, cst.IndentedBlock) and m.matches(first, assignment)):
        raise CodemodRefused(
            "the last branch of the get_model_name chain does not start with an assignment; "
            "cannot tell which attribute receives the image token id"
        )
    assert isinstance(first, cst.SimpleStatementLine) and isinstance(first.body[0], cst.Assign)
    return module.code_for_node(first.body[0].targets[0].target)
