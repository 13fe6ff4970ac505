"""Cutting pieces out of a source file's text without parsing it.

The contract's drafter facts sit in a few statements of large files (the model runner holds
6,000 lines); reading them from the one function that holds them keeps the reader cheap and
stops a same-named key elsewhere in the file from being taken for them.
"""

from __future__ import annotations

import re

_DEF = re.compile(r"^([ \t]*)(?:async[ \t]+)?def[ \t]+(\w+)", re.MULTILINE)


def line_at(text: str, offset: int) -> int:
    """The 1-based line of a character offset."""
    return text.count("\n", 0, max(offset, 0)) + 1


def block_end(text: str, start: int, indent: int) -> int:
    """Where the block opened by the line at `start` ends: the first non-blank, non-comment
    line indented `indent` or less."""
    lines = text[start:].splitlines(keepends=True)
    offset = start + (len(lines[0]) if lines else 0)
    for line in lines[1:]:
        stripped = line.strip()
        closes = stripped.startswith((")", "]", "}"))  # a multi-line signature's last line
        dedented = len(line) - len(line.lstrip()) <= indent
        if stripped and not stripped.startswith("#") and not closes and dedented:
            return offset
        offset += len(line)
    return len(text)


def function_around(text: str, needle: str) -> tuple[str, int] | None:
    """The `def` enclosing the first `needle` (the nearest one above it indented less than
    its line), and its first line."""
    at = text.find(needle)
    if at < 0:
        return None
    line_start = text.rfind("\n", 0, at) + 1
    line = text[line_start : text.find("\n", at) if "\n" in text[at:] else len(text)]
    indent = len(line) - len(line.lstrip())
    for match in reversed(list(_DEF.finditer(text, 0, line_start))):
        if len(match.group(1)) < indent:
            start = match.start()
            return text[start : block_end(text, start, len(match.group(1)))], line_at(text, start)
    return None


def function_named(text: str, name: str) -> tuple[str, int] | None:
    """The first `def name(...)` of the file, and its first line."""
    for match in _DEF.finditer(text):
        if match.group(2) == name:
            start = match.start()
            return text[start : block_end(text, start, len(match.group(1)))], line_at(text, start)
    return None


def strip_comments(text: str) -> str:
    """`text` without `#` comments (a key named in a comment is not a key the code reads): each
    line loses what follows its first `#` after its last quote. Line by line rather than with
    `#[^\n"']*$`, which scans to the line's last quote from every `#` before it."""
    lines = text.split("\n")
    for number, line in enumerate(lines):
        comment = line.find("#", max(line.rfind('"'), line.rfind("'")) + 1)
        if comment >= 0:
            lines[number] = line[:comment]
    return "\n".join(lines)
