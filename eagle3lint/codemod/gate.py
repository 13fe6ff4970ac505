"""Adding a model type to the EAGLE-3 allow-list of vLLM's speculative-decoding config."""

from __future__ import annotations

import re

import libcst as cst
import libcst.matchers as m

from ._layout import (
    bracketed,
    columns,
    has_magic_comma,
    insert_exploded,
    is_exploded,
    parse_statement,
    refuse_if_commented,
    source,
)
from ._nodes import replace
from .errors import CodemodRefused

_MODEL_TYPE = re.compile(r"[A-Za-z0-9_.\-]+")
_MODEL_TYPE_ATTR = m.Attribute(attr=m.Name("model_type"))
# `any(x in <...>.model_type for x in LIST)`
_GATE = m.Call(
    func=m.Name("any"),
    args=[
        m.Arg(
            m.GeneratorExp(
                elt=m.Comparison(
                    left=m.Name(),
                    comparisons=[m.ComparisonTarget(operator=m.In(), comparator=_MODEL_TYPE_ATTR)],
                ),
                for_in=m.CompFor(target=m.Name(), iter=m.Name(), inner_for_in=None, ifs=[]),
            )
        )
    ],
)
# vLLM 0.10: `"llama" not in ...model_type`
_SINGLE_GATE = m.Comparison(
    left=m.SimpleString(),
    comparisons=[m.ComparisonTarget(operator=m.NotIn(), comparator=_MODEL_TYPE_ATTR)],
)


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
    line, allowed = _allow_list(module)
    entries = [element.value for element in allowed.elements]
    if any(
        isinstance(entry, cst.SimpleString) and str(entry.evaluated_value) in model_type
        for entry in entries
    ):
        return module
    new_entry = f'"{model_type}"'
    opening = allowed.lbracket.whitespace_after
    if has_magic_comma(allowed.elements) and is_exploded(opening):
        assert isinstance(opening, cst.ParenthesizedWhitespace)
        element = cst.Element(value=cst.SimpleString(new_entry))
        elements = insert_exploded(allowed.elements, len(entries), element, opening)
        return replace(module, allowed, allowed.with_changes(elements=elements))
    refuse_if_commented("the EAGLE-3 model_type list", allowed)
    assign = line.body[0]
    assert isinstance(assign, cst.Assign)
    code = bracketed(
        f"{source(module, assign.targets[0].target)} = [",
        [*(source(module, entry) for entry in entries), new_entry],
        "]",
        column=columns(module)(line),
        hug=False,
        magic_comma=has_magic_comma(allowed.elements),
    )
    parsed = parse_statement(module, code)
    assert isinstance(parsed, cst.SimpleStatementLine) and isinstance(parsed.body[0], cst.Assign)
    return replace(module, allowed, parsed.body[0].value)


def _allow_list(module: cst.Module) -> tuple[cst.SimpleStatementLine, cst.List]:
    """The `NAME = [...]` statement of the EAGLE-3 gate, and its list."""
    # findall lists outer functions before inner ones, so each check ends up with the innermost.
    checking: dict[cst.CSTNode, cst.FunctionDef] = {}
    for function in m.findall(module, m.FunctionDef()):
        assert isinstance(function, cst.FunctionDef)
        for gate in m.findall(function, _GATE):
            checking[gate] = function
    if not checking:
        if m.findall(module, _SINGLE_GATE):
            raise CodemodRefused(
                'the EAGLE-3 gate here is a single `"..." not in ...model_type` test (vLLM '
                "0.10), not an allow-list; extending it means rewriting the condition by hand"
            )
        raise CodemodRefused(
            "no EAGLE-3 model_type allow-list (`any(x in ...model_type for x in LIST)`) found"
        )
    if len(checking) > 1:
        raise CodemodRefused(
            f"{len(checking)} `any(x in ...model_type for x in LIST)` checks found; "
            "cannot tell which one is the EAGLE-3 gate"
        )
    [(gate, function)] = checking.items()
    assert isinstance(gate, cst.Call) and isinstance(gate.args[0].value, cst.GeneratorExp)
    listed = gate.args[0].value.for_in.iter
    assert isinstance(listed, cst.Name)
    assignment = m.SimpleStatementLine(
        body=[
            m.Assign(
                targets=[m.AssignTarget(target=m.Name(listed.value))],
                value=m.List(elements=[m.ZeroOrMore(m.Element(m.SimpleString()))]),
            )
        ]
    )
    lines = m.findall(function, assignment)
    if len(lines) != 1:
        raise CodemodRefused(
            f"{listed.value} is assigned a list of strings {len(lines)} times in "
            f"{function.name.value}; expected exactly once"
        )
    line = lines[0]
    assert isinstance(line, cst.SimpleStatementLine) and isinstance(line.body[0], cst.Assign)
    allowed = line.body[0].value
    assert isinstance(allowed, cst.List)
    return line, allowed
