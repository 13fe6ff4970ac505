"""Finding the classes, methods and other nodes a rewrite applies to."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import libcst as cst
import libcst.matchers as m
from libcst.helpers import get_full_name_for_node

from .errors import CodemodRefused


def find_class(module: cst.Module, name: str) -> cst.ClassDef:
    """The module-level class `name`; model classes in vLLM are never nested."""
    found = [
        statement
        for statement in module.body
        if isinstance(statement, cst.ClassDef) and statement.name.value == name
    ]
    if not found:
        raise CodemodRefused(f"no module-level class {name!r} in this file")
    if len(found) > 1:
        raise CodemodRefused(f"class {name!r} is defined {len(found)} times in this file")
    return found[0]


def class_body(cls: cst.ClassDef) -> list[cst.BaseStatement]:
    """The statements of a class body; a one-line `class X: ...` cannot take new methods."""
    if not isinstance(cls.body, cst.IndentedBlock):
        raise CodemodRefused(f"class {cls.name.value!r} has a one-line body")
    return list(cls.body.body)


def method_name(statement: cst.BaseStatement) -> str | None:
    """The name of a `def` statement, None for any other statement."""
    return statement.name.value if isinstance(statement, cst.FunctionDef) else None


def method_index(body: Sequence[cst.BaseStatement], name: str) -> int | None:
    """Where the method `name` is among a class's body statements, if it is there."""
    return next((i for i, statement in enumerate(body) if method_name(statement) == name), None)


def find_method(cls: cst.ClassDef, name: str) -> cst.FunctionDef | None:
    """The method `name` defined directly in the class body, if any."""
    body = class_body(cls)
    index = method_index(body, name)
    if index is None:
        return None
    method = body[index]
    assert isinstance(method, cst.FunctionDef)
    return method


def with_body(cls: cst.ClassDef, body: list[cst.BaseStatement]) -> cst.ClassDef:
    """`cls` with its body statements replaced."""
    return cls.with_changes(body=cls.body.with_changes(body=body))


def block_indent(module: cst.Module, block: cst.BaseSuite) -> int:
    """How many columns the statements of `block` are indented from the statement owning it."""
    indent = block.indent if isinstance(block, cst.IndentedBlock) else None
    return len(module.default_indent if indent is None else indent)


@dataclass(frozen=True)
class Located:
    """A node found by `locate`, with where it sits."""

    node: cst.CSTNode
    # Column of the statement holding the node (of the node itself, for a statement).
    column: int
    # The innermost function definition around the node, if any.
    function: cst.FunctionDef | None


def locate(
    module: cst.Module,
    matcher: m.BaseMatcherNode,
    *,
    within: cst.CSTNode | None = None,
    column: int = 0,
) -> list[Located]:
    """The nodes matching `matcher` in `module`, or `within` a node that starts at `column`.

    Columns are counted from block indentation during the same walk; libcst's position
    metadata would lay out the whole file to find them.
    """
    finder = _Locator(module, matcher, column)
    (module if within is None else within).visit(finder)
    return finder.found


class _Locator(cst.CSTVisitor):
    def __init__(self, module: cst.Module, matcher: m.BaseMatcherNode, column: int) -> None:
        super().__init__()
        self._module = module
        self._matcher = matcher
        self._indents = [column]
        self._statements: list[int] = []
        self._functions: list[cst.FunctionDef] = []
        self.found: list[Located] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.IndentedBlock):
            self._indents.append(block_indent(self._module, node))
        if isinstance(node, cst.SimpleStatementLine | cst.BaseCompoundStatement):
            self._statements.append(sum(self._indents))
        if isinstance(node, cst.FunctionDef):
            self._functions.append(node)
        if m.matches(node, self._matcher):
            function = self._functions[-1] if self._functions else None
            column = self._statements[-1] if self._statements else sum(self._indents)
            self.found.append(Located(node, column, function))
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if isinstance(original_node, cst.IndentedBlock):
            self._indents.pop()
        if isinstance(original_node, cst.SimpleStatementLine | cst.BaseCompoundStatement):
            self._statements.pop()
        if isinstance(original_node, cst.FunctionDef):
            self._functions.pop()


def last_name(node: cst.CSTNode) -> str | None:
    """`SupportsEagle` for both `SupportsEagle` and `interfaces.SupportsEagle`."""
    full = get_full_name_for_node(node)
    return None if full is None else full.rpartition(".")[2]


def replace(module: cst.Module, old: cst.CSTNode, new: cst.CSTNode) -> cst.Module:
    """`module` with the node `old` (by identity) replaced by `new`."""
    result = module.deep_replace(old, new)
    assert isinstance(result, cst.Module)
    return result
