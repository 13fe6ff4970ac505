"""Adding a model type to the EAGLE-3 allow-list of vLLM's speculative-decoding config."""

from __future__ import annotations

import re

import libcst as cst

from eagle3lint.shapes.gate import find_gate

from ._layout import (
    bracketed,
    has_magic_comma,
    insert_exploded,
    one_per_line,
    parse_statement,
    refuse_if_commented,
)
from ._nodes import replace
from .errors import CodemodRefused

_MODEL_TYPE = re.compile(r"[A-Za-z0-9_.\-]+")


def add_gate_entry(module: cst.Module, model_type: str) -> cst.Module:
    """Append `model_type` to the list of model types allowed as EAGLE-3 targets.

    The list is found by its shape, not its name (`eagle3_target_supported` in vLLM 0.11-0.16,
    `aux_hidden_states_supported` from 0.17): a list of string literals assigned in the function
    that checks `any(x in <...>.model_type for x in LIST)`. The check matches by substring, so
    nothing changes when an entry is already a substring of `model_type`. A list written one
    per line gets a new line; a one-line list stays on one line if it fits, else goes one per
    line, as ruff-format would.

    Refuses when there is no such check or more than one, when the gate is vLLM 0.10's single
    `"llama" not in ...model_type` test (there is no list to extend), when the checked list is
    not assigned exactly once as a list of strings in that function, and when `model_type` is
    not a plain model-type string.
    """
    if not _MODEL_TYPE.fullmatch(model_type):
        raise CodemodRefused(f"{model_type!r} does not look like a Hugging Face model_type")
    gate = find_gate(module)
    if gate is None:
        raise CodemodRefused(
            "no EAGLE-3 model_type allow-list (`any(x in ...model_type for x in LIST)`) found"
        )
    if gate.refusal is not None or gate.assignment is None:
        raise CodemodRefused(gate.refusal or "the allow-list cannot be extended")
    line, column = gate.assignment, gate.column
    original = _list_of(line)
    entries = [element.value for element in original.elements]
    if any(
        isinstance(entry, cst.SimpleString) and str(entry.evaluated_value) in model_type
        for entry in entries
    ):
        return module
    new_entry = f'"{model_type}"'
    allowed = _closing_line_on_last_comma(original)
    opening = allowed.lbracket.whitespace_after
    if one_per_line(opening, allowed.elements):
        element = cst.Element(value=cst.SimpleString(new_entry))
        elements = insert_exploded(allowed.elements, len(entries), element, opening)
        return replace(module, original, allowed.with_changes(elements=elements))
    refuse_if_commented("the EAGLE-3 model_type list", original)
    assign = line.body[0]
    assert isinstance(assign, cst.Assign)
    code = bracketed(
        f"{module.code_for_node(assign.targets[0].target)} = [",
        [*(module.code_for_node(entry) for entry in entries), new_entry],
        "]",
        column=column,
        hug=False,
        magic_comma=has_magic_comma(original.elements),
    )
    parsed = parse_statement(module, code)
    assert isinstance(parsed, cst.SimpleStatementLine) and isinstance(parsed.body[0], cst.Assign)
    return replace(module, original, parsed.body[0].value)


def _closing_line_on_last_comma(allowed: cst.List) -> cst.List:
    """The same list, with the line break before `]` held by the trailing comma.

    libcst keeps it on the bracket for lists but on the comma for imports and class bases;
    both print the same, and `insert_exploded` expects the latter.
    """
    if not allowed.elements or not isinstance(allowed.elements[-1].comma, cst.Comma):
        return allowed
    last = allowed.elements[-1]
    assert isinstance(last.comma, cst.Comma)
    return allowed.with_changes(
        elements=[
            *allowed.elements[:-1],
            last.with_changes(
                comma=last.comma.with_changes(whitespace_after=allowed.rbracket.whitespace_before)
            ),
        ],
        rbracket=allowed.rbracket.with_changes(whitespace_before=cst.SimpleWhitespace("")),
    )


def _list_of(line: cst.SimpleStatementLine) -> cst.List:
    assign = line.body[0]
    assert isinstance(assign, cst.Assign) and isinstance(assign.value, cst.List)
    return assign.value
