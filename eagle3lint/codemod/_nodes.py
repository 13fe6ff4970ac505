"""Finding the classes, methods and other nodes a rewrite applies to."""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst
from libcst.helpers import get_full_name_for_node

from eagle3lint.shapes.syntax import HOLDS_NO_BLOCK

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


def last_name(node: cst.CSTNode) -> str | None:
    """`SupportsEagle` for both `SupportsEagle` and `interfaces.SupportsEagle`."""
    full = get_full_name_for_node(node)
    return None if full is None else full.rpartition(".")[2]


def replace(module: cst.Module, old: cst.CSTNode, new: cst.CSTNode) -> cst.Module:
    """`module` with the node `old` (by identity) replaced by `new`."""
    # Most edits replace a top-level class: rebuilding the module's statement list is enough,
    # where `deep_replace` rebuilds every node of the file (most of a fix run's time).
    if any(statement is old for statement in module.body):
        body = [new if statement is old else statement for statement in module.body]
        return module.with_changes(body=body)
    if isinstance(old, cst.BaseCompoundStatement):
        # A nested block (the proposer's `elif`): its parents are blocks, so the walk that
        # finds it leaves the file's expressions and simple statements as they are.
        result = module.visit(_BlockReplacer(old, new))
    else:
        result = module.deep_replace(old, new)
    assert isinstance(result, cst.Module)
    return result


class _BlockReplacer(cst.CSTTransformer):
    """`deep_replace` of a compound statement, entering only nodes that can hold one."""

    def __init__(self, old: cst.BaseCompoundStatement, new: cst.CSTNode) -> None:
        super().__init__()
        self.old = old
        self.new = new

    def on_visit(self, node: cst.CSTNode) -> bool:
        return node is not self.old and not isinstance(node, HOLDS_NO_BLOCK)

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode) -> cst.CSTNode:
        return self.new if original_node is self.old else updated_node
