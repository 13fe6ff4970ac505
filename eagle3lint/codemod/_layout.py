"""Laying out generated code the way ruff-format does in vLLM, and splicing it into the tree.

vLLM formats with ruff at line length 88 (not this project's 100), so generated code is measured
against that. Only the three layouts ruff picks between for a bracketed list are modelled: all on
one line, the items "hugged" on one indented line, or one item per line with a trailing comma.
Items themselves are never split further, which is enough for the short names involved here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TypeVar

import libcst as cst
import libcst.matchers as m

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


def one_per_line(
    opening: cst.BaseParenthesizableWhitespace | None,
    elements: Sequence[cst.Arg | cst.ImportAlias | cst.Element],
) -> bool:
    """Whether a bracketed list is laid out one item per line with a trailing comma.

    `opening` is the whitespace after the opening bracket.
    """
    return (
        isinstance(opening, cst.ParenthesizedWhitespace)
        and bool(elements)
        and isinstance(elements[-1].comma, cst.Comma)
        and isinstance(elements[-1].comma.whitespace_after, cst.ParenthesizedWhitespace)
    )


def insert_exploded(
    elements: Sequence[_Element],
    index: int,
    new: _Element,
    opening: cst.BaseParenthesizableWhitespace | None,
) -> list[_Element]:
    """Insert `new` into a `one_per_line` list, leaving the other lines as they are.

    New line breaks copy the indentation after the opening bracket and before the closing one,
    without the comments that may sit on those lines, so comments stay beside their items.
    """
    assert isinstance(opening, cst.ParenthesizedWhitespace)
    result = list(elements)
    if index < len(result):
        result.insert(index, new.with_changes(comma=_line_break(opening)))
        return result
    last = result[-1]
    assert isinstance(last.comma, cst.Comma)
    closing = last.comma.whitespace_after
    assert isinstance(closing, cst.ParenthesizedWhitespace)
    result[-1] = last.with_changes(
        comma=last.comma.with_changes(
            whitespace_after=closing.with_changes(last_line=opening.last_line)
        )
    )
    result.append(new.with_changes(comma=_line_break(closing)))
    return result


def _line_break(like: cst.ParenthesizedWhitespace) -> cst.Comma:
    return cst.Comma(
        whitespace_after=cst.ParenthesizedWhitespace(indent=like.indent, last_line=like.last_line)
    )


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


def indented(module: cst.Module, code: str) -> str:
    """`code` moved one block level in, to be the body of a generated compound statement."""
    return "".join(f"{module.default_indent}{line}\n" for line in code.splitlines())


def parse_statement(module: cst.Module, code: str) -> cst.BaseStatement:
    """Parse generated code written at indentation zero with the module's indent and newline."""
    return cst.parse_statement(code, config=module.config_for_parsing)
