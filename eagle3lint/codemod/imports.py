"""Importing names from vLLM's `interfaces` module as vLLM's isort and ruff-format lay it out."""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst
from libcst.helpers import get_full_name_for_node

from eagle3lint.engines.vllm.names import INTERFACES_MODULE, INTERFACES_RELATIVE

from ._layout import (
    BLANK_LINE,
    bracketed,
    first_fitting,
    has_magic_comma,
    insert_exploded,
    natural_key,
    one_per_line,
    parse_statement,
    refuse_if_commented,
)


def ensure_interface_import(module: cst.Module, name: str, *, relative: bool = True) -> cst.Module:
    """Make sure `name` is imported from vLLM's interfaces module.

    An existing `from .interfaces import ...` (or the absolute `INTERFACES_MODULE` form) is
    extended with `name` at its sorted place: one line if it fits, else one
    name per line in parentheses with a trailing comma, as isort and ruff-format would leave it;
    a list that is already one per line keeps its comments. Otherwise a new statement is added
    among the imports of the same kind at its sorted place: `from .interfaces import X` when
    `relative` (files inside vLLM's models package), else the absolute form. Nothing changes
    when `name` is already imported from there.

    Refuses when an import that needs reflowing carries comments.
    """
    statements = _interface_imports(module)
    for _, _, statement in statements:
        if isinstance(statement.names, cst.ImportStar) or any(
            _bound_name(alias) == name for alias in statement.names
        ):
            return module
    if statements:
        index, line, statement = statements[0]
        new_line = line.with_changes(
            body=[
                _extended(module, statement, name) if small is statement else small
                for small in line.body
            ]
        )
        return module.with_changes(body=_replaced(module.body, index, new_line))
    return _added(module, name, INTERFACES_RELATIVE if relative else INTERFACES_MODULE)


def _interface_imports(
    module: cst.Module,
) -> list[tuple[int, cst.SimpleStatementLine, cst.ImportFrom]]:
    found = []
    for index, line in enumerate(module.body):
        if not isinstance(line, cst.SimpleStatementLine):
            continue
        for small in line.body:
            if isinstance(small, cst.ImportFrom) and _from_module(small) in (
                INTERFACES_RELATIVE,
                INTERFACES_MODULE,
            ):
                found.append((index, line, small))
    return found


def _from_module(statement: cst.ImportFrom) -> str:
    dots = "." * len(statement.relative)
    name = "" if statement.module is None else get_full_name_for_node(statement.module) or ""
    return dots + name


def _bound_name(alias: cst.ImportAlias) -> str | None:
    if alias.asname is not None:
        return get_full_name_for_node(alias.asname.name)
    return get_full_name_for_node(alias.name)


def _member_key(name: str) -> tuple[int, tuple[str | int, ...]]:
    # ruff's isort `order-by-type`: CONSTANTS, then Classes, then functions and variables.
    if len(name) > 1 and name.isupper():
        kind = 0
    elif name[:1].isupper():
        kind = 1
    else:
        kind = 2
    return kind, natural_key(name)


def _extended(module: cst.Module, statement: cst.ImportFrom, name: str) -> cst.ImportFrom:
    assert not isinstance(statement.names, cst.ImportStar)
    aliases = list(statement.names)
    key = _member_key(name)
    index = next(
        (i for i, alias in enumerate(aliases) if _member_key(_alias_name(alias)) > key),
        len(aliases),
    )
    new_alias = cst.ImportAlias(name=cst.Name(name))
    opening = None if statement.lpar is None else statement.lpar.whitespace_after
    if one_per_line(opening, aliases):
        return statement.with_changes(names=insert_exploded(aliases, index, new_alias, opening))
    refuse_if_commented("the interfaces import", statement)
    items = [
        module.code_for_node(alias.with_changes(comma=cst.MaybeSentinel.DEFAULT))
        for alias in aliases
    ]
    items.insert(index, name)
    head = f"from {_from_module(statement)} import "
    # Imports are never hugged: they go on one line or one name per line.
    exploded = bracketed(head + "(", items, ")", column=0, hug=False, magic_comma=True)
    if has_magic_comma(aliases):
        code = exploded
    else:
        code = first_fitting(0, [head + ", ".join(items), exploded])
    parsed = parse_statement(module, code)
    assert isinstance(parsed, cst.SimpleStatementLine)
    new = parsed.body[0]
    assert isinstance(new, cst.ImportFrom)
    return new


def _alias_name(alias: cst.ImportAlias) -> str:
    return get_full_name_for_node(alias.name) or ""


def _replaced(
    body: Sequence[cst.BaseStatement], index: int, new: cst.BaseStatement
) -> list[cst.BaseStatement]:
    return [new if i == index else statement for i, statement in enumerate(body)]


def _added(module: cst.Module, name: str, from_module: str) -> cst.Module:
    body = list(module.body)
    new = parse_statement(module, f"from {from_module} import {name}")
    assert isinstance(new, cst.SimpleStatementLine)
    relative = from_module.startswith(".")
    imports = [i for i, statement in enumerate(body) if _is_import(statement)]
    # Peers are the statements isort sorts the new one among: relative imports, or vLLM's own.
    peers = [
        (i, peer)
        for i in imports
        if (peer := _first_from_module(body[i])) is not None
        and (peer.startswith(".") if relative else peer.startswith("vllm."))
    ]
    later = [i for i, peer in peers if natural_key(peer) > natural_key(from_module)]
    if later:
        index = later[0]
        body[index] = body[index].with_changes(leading_lines=())
        body.insert(index, new.with_changes(leading_lines=module.body[index].leading_lines))
    elif peers:
        body.insert(peers[-1][0] + 1, new)
    else:
        # A new isort section, after every other import (or the docstring).
        index = imports[-1] + 1 if imports else _docstring_end(module)
        body.insert(index, new.with_changes(leading_lines=[BLANK_LINE] if index else []))
    return module.with_changes(body=body)


def _first_from_module(statement: cst.BaseStatement) -> str | None:
    if isinstance(statement, cst.SimpleStatementLine) and isinstance(
        statement.body[0], cst.ImportFrom
    ):
        return _from_module(statement.body[0])
    return None


def _is_import(statement: cst.BaseStatement) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and isinstance(
        statement.body[0], cst.Import | cst.ImportFrom
    )


def _docstring_end(module: cst.Module) -> int:
    return 1 if module.get_docstring() is not None else 0
