"""Syntax helpers the recognisers, the extractor and the codemods share."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

import libcst as cst

_CODE = cst.Module(body=[])
_NAME = re.compile(r"[A-Za-z_]\w*")

HOLDS_NO_BLOCK = (cst.BaseExpression, cst.SimpleStatementLine, cst.SimpleStatementSuite)
"""Nodes no compound statement (`if`, `for`, a `def`) can be inside: a walk that looks for one
skips them, which are most of a file's nodes (libcst's walk rebuilds every node it enters)."""


def code(node: cst.CSTNode) -> str:
    """Source text of a node, whitespace-normalised for comparisons."""
    return " ".join(_CODE.code_for_node(node).split())


def dotted(node: cst.BaseExpression) -> str | None:
    """`a.b.c` for Name/Attribute chains, else None."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        head = dotted(node.value)
        return f"{head}.{node.attr.value}" if head else None
    return None


def string_value(node: cst.BaseExpression) -> str | None:
    """The value of a string literal (plain or implicitly concatenated), else None."""
    if isinstance(node, cst.SimpleString | cst.ConcatenatedString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def names_in(node: cst.CSTNode) -> set[str]:
    """Every identifier in a node's text (attribute names included)."""
    return set(_NAME.findall(code(node)))


def statements(body: cst.BaseSuite) -> Iterator[cst.BaseStatement]:
    """Statements of a function body, descending into if/with/try/for blocks, not into defs."""
    for stmt in body.body if isinstance(body, cst.IndentedBlock) else ():
        yield stmt
        if isinstance(stmt, cst.If):
            yield from statements(stmt.body)
            orelse = stmt.orelse
            while orelse is not None:
                yield from statements(orelse.body)
                orelse = orelse.orelse if isinstance(orelse, cst.If) else None
        elif isinstance(stmt, cst.With | cst.For | cst.While):
            yield from statements(stmt.body)
        elif isinstance(stmt, cst.Try):
            yield from statements(stmt.body)
            for handler in stmt.handlers:
                yield from statements(handler.body)


def statements_of(stmt: cst.BaseStatement) -> Sequence[cst.BaseStatement]:
    """The statements nested in a compound statement (none for a simple one)."""
    if isinstance(stmt, cst.SimpleStatementLine):
        return ()
    return [s for s in statements(cst.IndentedBlock(body=[stmt])) if s is not stmt]


def self_assignments(stmt: cst.BaseStatement) -> Iterator[tuple[str, cst.BaseExpression]]:
    """`self.a.b = value` in a simple statement → ("a.b", value), tuple targets unpacked."""
    if not isinstance(stmt, cst.SimpleStatementLine):
        return
    for small in stmt.body:
        targets: list[cst.BaseExpression] = []
        value: cst.BaseExpression | None = None
        if isinstance(small, cst.Assign):
            value = small.value
            for target in small.targets:
                if isinstance(target.target, cst.Tuple):
                    targets.extend(e.value for e in target.target.elements)
                else:
                    targets.append(target.target)
        elif isinstance(small, cst.AnnAssign) and small.value is not None:
            value = small.value
            targets.append(small.target)
        if value is None:
            continue
        for target in targets:
            text = dotted(target)
            if text and text.startswith("self."):
                yield text.removeprefix("self."), value


def self_calls(stmt: cst.BaseStatement) -> list[str]:
    """`self.name(...)` calls made at statement level (expression or assigned value)."""
    if not isinstance(stmt, cst.SimpleStatementLine):
        return []
    calls = []
    for small in stmt.body:
        value = small.value if isinstance(small, cst.Expr | cst.Assign | cst.Return) else None
        if isinstance(value, cst.Call):
            name = dotted(value.func) or ""
            if name.startswith("self.") and name.count(".") == 1:
                calls.append(name.removeprefix("self."))
    return calls


def assigned_names(stmt: cst.BaseStatement) -> set[str]:
    """Plain names a simple statement binds (`a = ...`, `a, b = ...`, `a: T = ...`, `a += ...`)."""
    if not isinstance(stmt, cst.SimpleStatementLine):
        return set()
    bound: set[str] = set()
    for small in stmt.body:
        targets: list[cst.BaseExpression] = []
        if isinstance(small, cst.Assign):
            targets = [t.target for t in small.targets]
        elif isinstance(small, cst.AnnAssign | cst.AugAssign) and (
            not isinstance(small, cst.AnnAssign) or small.value is not None
        ):
            targets = [small.target]
        for target in targets:
            elements = target.elements if isinstance(target, cst.Tuple | cst.List) else [target]
            for element in elements:
                value = element.value if isinstance(element, cst.BaseElement) else element
                if isinstance(value, cst.Name):
                    bound.add(value.value)
    return bound


def returns_name(stmt: cst.BaseStatement) -> bool:
    """`return <name>`."""
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and isinstance(stmt.body[0], cst.Return)
        and isinstance(stmt.body[0].value, cst.Name)
    )


def super_call(stmt: cst.BaseStatement, method: str, *, returned: bool) -> cst.Call | None:
    """The `super().<method>(...)` call a simple statement makes: returned (`return ...`) or
    as an expression statement; None when it makes none."""
    if not isinstance(stmt, cst.SimpleStatementLine):
        return None
    for small in stmt.body:
        kind = cst.Return if returned else cst.Expr
        value = small.value if isinstance(small, kind) else None
        if (
            isinstance(value, cst.Call)
            and isinstance(value.func, cst.Attribute)
            and value.func.attr.value == method
            and isinstance(value.func.value, cst.Call)
            and dotted(value.func.value.func) == "super"
        ):
            return value
    return None
