"""The EAGLE-3 model_type allow-list of vLLM's speculative config, recognised by its shape.

vLLM 0.11-0.21 test `any(x in <...>.model_type for x in LIST)` in a method of
`config/speculative.py` (the list is `eagle3_target_supported`, renamed
`aux_hidden_states_supported` in 0.17), where `LIST` is a list of string literals assigned in
the same function; vLLM 0.10 tests one `"llama" not in <...>.model_type`. The contract reader
reads the accepted model types from this description and `fix` extends the list it points at.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst
import libcst.matchers as m

from eagle3lint.shapes.locate import locate
from eagle3lint.shapes.syntax import code, string_value

_MODEL_TYPE_ATTR = m.Attribute(attr=m.Name("model_type"))
_ANY_IN_LIST = m.Call(
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
_SINGLE_TYPE = m.Comparison(
    left=m.SimpleString() | m.ConcatenatedString(),
    comparisons=[m.ComparisonTarget(operator=m.NotIn(), comparator=_MODEL_TYPE_ATTR)],
)
_STRING_LIST = m.SimpleStatementLine(
    body=[
        m.Assign(
            targets=[m.AssignTarget(target=m.Name())],
            value=m.List(elements=[m.ZeroOrMore(m.Element(m.SimpleString()))]),
        )
    ]
)
_QUOTED_WORD = re.compile(r"\"(\w+)\"")


@dataclass(frozen=True)
class GateShape:
    """The allow-list check found in a module, and whether `fix` can extend it."""

    variable: str | None
    """The list's name; None for vLLM 0.10's single `"llama" not in ...` test."""
    entries: tuple[str, ...] | None
    """The model types the check accepts (by substring); None when the list is not literal."""
    methods: tuple[str, ...]
    """The speculative methods (`"eagle3"`, ...) the enclosing `if` tests besides model_type."""
    function: str | None
    """The function holding the check (None at module level)."""
    assignment: cst.SimpleStatementLine | None
    """The `LIST = [...]` statement `fix` extends, when it can."""
    column: int
    """The column of that statement."""
    refusal: str | None
    """Why `fix` cannot add a model type here (None when it can)."""


def find_gate(module: cst.Module) -> GateShape | None:
    """The EAGLE-3 model_type check of `module`, or None when it has none (vLLM 0.22+)."""
    found = locate(module, _ANY_IN_LIST | _SINGLE_TYPE | _STRING_LIST | m.If())
    checks = [f for f in found if m.matches(f.node, _ANY_IN_LIST)]
    ifs = [f.node for f in found if isinstance(f.node, cst.If)]
    if not checks:
        single = next((f for f in found if m.matches(f.node, _SINGLE_TYPE)), None)
        if single is None:
            return None
        assert isinstance(single.node, cst.Comparison)
        entry = string_value(single.node.left) or ""
        methods = tuple(word for word in _methods(ifs, single.node) if word != entry)
        name = single.function.name.value if single.function else None
        refusal = (
            'the EAGLE-3 gate here is a single `"..." not in ...model_type` test (vLLM 0.10), '
            "not an allow-list; extending it means rewriting the condition by hand"
        )
        return GateShape(None, (entry,), methods, name, None, 0, refusal)
    check = checks[0]
    assert isinstance(check.node, cst.Call) and isinstance(
        check.node.args[0].value, cst.GeneratorExp
    )
    listed = check.node.args[0].value.for_in.iter
    assert isinstance(listed, cst.Name)
    where = check.function
    assignments = [
        f
        for f in found
        if isinstance(f.node, cst.SimpleStatementLine)
        and f.function is where
        and m.matches(f.node, _STRING_LIST)
        and _assigned_list(f.node)[0] == listed.value
    ]
    name = where.name.value if where else None
    methods = _methods(ifs, check.node)
    if not assignments:
        # Computed or defined elsewhere: what it accepts is unknown.
        refusal = (
            f"{listed.value} is assigned a list of strings 0 times in {name or 'the module'}; "
            "expected exactly once"
        )
        return GateShape(listed.value, None, methods, name, None, 0, refusal)
    last = assignments[-1]
    assert isinstance(last.node, cst.SimpleStatementLine)
    entries = tuple(
        s for e in _assigned_list(last.node)[1].elements if (s := string_value(e.value)) is not None
    )
    refusal = None
    if len(checks) > 1:
        refusal = (
            f"{len(checks)} `any(x in ...model_type for x in LIST)` checks found; "
            "cannot tell which one is the EAGLE-3 gate"
        )
    elif len(assignments) != 1:
        refusal = (
            f"{listed.value} is assigned a list of strings {len(assignments)} times in "
            f"{name or 'the module'}; expected exactly once"
        )
    return GateShape(listed.value, entries, methods, name, last.node, last.column, refusal)


def _assigned_list(line: cst.SimpleStatementLine) -> tuple[str, cst.List]:
    assign = line.body[0]
    assert isinstance(assign, cst.Assign) and isinstance(assign.value, cst.List)
    target = assign.targets[0].target
    assert isinstance(target, cst.Name)
    return target.value, assign.value


def _methods(ifs: list[cst.If], check: cst.CSTNode) -> tuple[str, ...]:
    """The quoted words the `if` testing `check` compares before its model_type part: the
    speculative methods it applies to (`self.method == "eagle3"`)."""
    for block in ifs:
        if m.findall(block.test, m.MatchIfTrue(lambda node: node is check)):
            return tuple(_QUOTED_WORD.findall(code(block.test).split("model_type")[0]))
    return ()
