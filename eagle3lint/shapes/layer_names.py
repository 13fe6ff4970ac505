"""Layer names past the decoder's layer count, recognised in an `__init__`.

vLLM names each attention layer by its module prefix (`model.layers.3.self_attn.attn`) and
refuses a second layer of the same name. An EAGLE-3 head built beside a target takes the names
that follow the target's layers (`model.layers.<num_hidden_layers>`), so a target that names
some of its own layers past that count (IQuest-Coder's loop model gives its second loop's
attention `layers.{loop_idx * num_hidden_layers + i}`) collides with the head before anything
runs.
"""

from __future__ import annotations

import re

import libcst as cst

from eagle3lint.shapes.syntax import code

LAYER_COUNT = "num_hidden_layers"
PREFIX = "prefix"
_LAYERS_BEFORE = re.compile(r"(?:^|\.)layers\.$")
"""The text right before the index in an f-string naming a decoder layer (`.layers.{i}`)."""


def may_name_layers_past_count(text: str) -> bool:
    """Whether source `text` can hold what `renamed_layer_indices` looks for: a cheap test, so
    that the visits run on a few files and class bodies, not on every `__init__`."""
    return LAYER_COUNT in text and "layers.{" in text


def renamed_layer_indices(function: cst.FunctionDef) -> list[str]:
    """The layer indices `function` writes into `layers.{...}` that add the layer count (or a
    multiple of it), as written: `unique_layer_idx = loop_idx * total_layers + base_layer_idx`
    when the f-string names a local that the function assigns so."""
    indices = _layer_indices(function)
    if not indices:
        return []
    assigned = _local_assignments(function)
    found: list[str] = []
    for index in indices:
        value = assigned.get(index.value) if isinstance(index, cst.Name) else None
        written = code(index) if value is None else f"{code(index)} = {code(value)}"
        if _adds_layer_count(value or index, assigned) and written not in found:
            found.append(written)
    return found


def _layer_indices(function: cst.FunctionDef) -> list[cst.BaseExpression]:
    """What the f-strings of `function` that name a module put right after `layers.`: those in
    a `prefix=` argument, in `maybe_prefix(...)`, or in a `.replace(...)` that rewrites a
    prefix (not a checkpoint's weight names in a mapper's dict)."""
    found: list[cst.BaseExpression] = []
    naming = 0

    class Strings(cst.CSTVisitor):
        def visit_Arg(self, node: cst.Arg) -> None:
            nonlocal naming
            naming += node.keyword is not None and node.keyword.value == PREFIX

        def leave_Arg(self, node: cst.Arg) -> None:
            nonlocal naming
            naming -= node.keyword is not None and node.keyword.value == PREFIX

        def visit_Call(self, node: cst.Call) -> None:
            nonlocal naming
            naming += _names_a_prefix(node)

        def leave_Call(self, node: cst.Call) -> None:
            nonlocal naming
            naming -= _names_a_prefix(node)

        def visit_FormattedString(self, node: cst.FormattedString) -> None:
            if not naming:
                return
            for before, part in zip(node.parts, node.parts[1:], strict=False):
                if (
                    isinstance(before, cst.FormattedStringText)
                    and _LAYERS_BEFORE.search(before.value)
                    and isinstance(part, cst.FormattedStringExpression)
                ):
                    found.append(part.expression)

    function.body.visit(Strings())
    return found


def _names_a_prefix(call: cst.Call) -> bool:
    func = call.func
    if isinstance(func, cst.Attribute):
        return func.attr.value == "replace"
    return isinstance(func, cst.Name) and func.value == "maybe_prefix"


def _adds_layer_count(node: cst.BaseExpression, assigned: dict[str, cst.BaseExpression]) -> bool:
    """`node` adds the layer count or multiplies by it (directly, or through a local the
    function assigns from it: `total_layers = config.num_hidden_layers`)."""
    if not isinstance(node, cst.BinaryOperation):
        return False
    if isinstance(node.operator, cst.Add | cst.Multiply) and any(
        _is_layer_count(side, assigned) for side in (node.left, node.right)
    ):
        return True
    return _adds_layer_count(node.left, assigned) or _adds_layer_count(node.right, assigned)


def _is_layer_count(node: cst.BaseExpression, assigned: dict[str, cst.BaseExpression]) -> bool:
    if isinstance(node, cst.Name) and node.value in assigned:
        node = assigned[node.value]
    return isinstance(node, cst.Attribute) and node.attr.value == LAYER_COUNT


def _local_assignments(function: cst.FunctionDef) -> dict[str, cst.BaseExpression]:
    """The last value each plain name is assigned in `function` (nested blocks included)."""
    found: dict[str, cst.BaseExpression] = {}

    class Assignments(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    found[target.target.value] = node.value

    function.body.visit(Assignments())
    return found
