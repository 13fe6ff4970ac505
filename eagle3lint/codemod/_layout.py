"""Laying out generated code the way ruff-format does in vLLM, and splicing it into the tree.

vLLM formats with ruff at line length 88 (not this project's 100), so generated code is measured
against that. Only the three layouts ruff picks between for a bracketed list are modelled: all on
one line, the items "hugged" on one indented line, or one item per line with a trailing comma.
Items themselves are never split further, which is enough for the short names involved here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TypeVar

import libcst as cst
import libcst.matchers as m
from libcst.metadata import MetadataWrapper, PositionProvider

from .errors import CodemodRefused

LINE_LENGTH = 88
INDENT = "    "
# With `indent=True` (libcst's default) a blank line would carry the block's indentation.
BLANK_LINE = cst.EmptyLine(indent=False)

_Element = TypeVar("_Element", cst.Arg, cst.ImportAlias, cst.Element)


def fits(text: str, column: int) -> bool:
    """Whether every line of `text` stays within the line length when it starts at `column`.

    Continuation lines are relative to the same column, as in code parsed at indentation zero
    and then placed in a block.
    """
    return all(column + len(line) <= LINE_LENGTH for line in text.splitlines())


def first_fitting(column: int, candidates: Sequence[str]) -> str:
    """The first candidate layout that fits, else the last one (the most split)."""
    for candidate in candidates[:-1]:
        if fits(candidate, column):
            return candidate
    return candidates[-1]


def bracketed(
    head: str, items: Sequence[str], tail: str, *, column: int, hug: bool, magic_comma: bool
) -> str:
    """`head` + comma-separated `items` + `tail`, where `head` ends with an opening bracket.

    `hug` allows the items on one indented line (calls and class bases; ruff never does this for
    collection literals or imports). A magic trailing comma forces one item per line.
    """
    exploded = head + "\n" + "".join(f"{INDENT}{item},\n" for item in items) + tail
    if magic_comma:
        return exploded
    joined = ", ".join(items)
    candidates = [f"{head}{joined}{tail}"]
    if hug:
        candidates.append(f"{head}\n{INDENT}{joined}\n{tail}")
    return first_fitting(column, [*candidates, exploded])


def has_magic_comma(elements: Sequence[cst.Arg | cst.ImportAlias | cst.Element]) -> bool:
    """Whether the last element carries a comma, which makes ruff keep one item per line."""
    return bool(elements) and isinstance(elements[-1].comma, cst.Comma)


def is_exploded(opening: cst.BaseParenthesizableWhitespace | None) -> bool:
    """Whether the whitespace after an opening bracket starts a new line."""
    return isinstance(opening, cst.ParenthesizedWhitespace)


def insert_exploded(
    elements: Sequence[_Element],
    index: int,
    new: _Element,
    opening: cst.ParenthesizedWhitespace,
) -> list[_Element]:
    """Insert `new` into a one-per-line list with a trailing comma, leaving the rest untouched.

    The separator is the whitespace after the opening bracket minus any comment on that line,
    so comments beside existing items stay where they are.
    """
    separator = cst.Comma(
        whitespace_after=cst.ParenthesizedWhitespace(
            indent=opening.indent, last_line=opening.last_line
        )
    )
    result = list(elements)
    if index < len(result):
        result.insert(index, new.with_changes(comma=separator))
    else:
        result.append(new.with_changes(comma=result[-1].comma))
        result[-2] = result[-2].with_changes(comma=separator)
    return result


def refuse_if_commented(what: str, *nodes: cst.CSTNode | None) -> None:
    """Refuse to re-lay-out code that carries comments, which a reflow would drop."""
    for node in nodes:
        if node is not None and m.findall(node, m.Comment()):
            raise CodemodRefused(
                f"{what} contains comments; it cannot be reflowed without losing them"
            )


def natural_key(text: str) -> tuple[str | int, ...]:
    """Case-insensitive natural order (`Qwen2` before `Qwen10`), as ruff's isort sorts."""
    return tuple(
        int(part) if index % 2 else part
        for index, part in enumerate(re.split(r"(\d+)", text.lower()))
    )


def columns(
    module: cst.Module, scope: cst.BaseCompoundStatement | None = None, scope_column: int = 0
) -> Callable[[cst.CSTNode], int]:
    """Start column of nodes in `module`, or inside `scope`, a statement at `scope_column`.

    Positions computed on `scope` alone save laying out the whole file, which is the costly
    part of libcst's position pass.
    """
    root = module if scope is None else module.with_changes(body=[scope])
    positions = MetadataWrapper(root, unsafe_skip_copy=True).resolve(PositionProvider)
    return lambda node: scope_column + positions[node].start.column


def parse_statement(module: cst.Module, code: str) -> cst.BaseStatement:
    """Parse generated code written at indentation zero with the module's indent and newline."""
    return cst.parse_statement(code, config=module.config_for_parsing)


def source(module: cst.Module, node: cst.CSTNode) -> str:
    """The code of `node` as it appears in `module`."""
    return module.code_for_node(node)
