"""Between the check's places (paths, 1-based lines, code-point columns) and the protocol's
(file URIs, 0-based lines, UTF-16 columns, which every client supports)."""

from __future__ import annotations

import os
from pathlib import Path

from lsprotocol import types
from pygls.uris import from_fs_path, to_fs_path


def path_of(uri: str) -> Path | None:
    """The real path of a `file:` URI (as the check names files), None for any other."""
    if not uri.startswith("file:"):
        return None
    found = to_fs_path(uri)
    return Path(os.path.realpath(found)) if found else None


def uri_of(path: str | Path) -> str:
    return from_fs_path(str(path)) or Path(path).as_uri()


def utf16(text: str) -> int:
    """How many UTF-16 code units `text` takes: the protocol's column unit."""
    return len(text.encode("utf-16-le")) // 2


def line_range(lines: list[str], line: int, column: int = 0) -> types.Range:
    """The range of a finding at 1-based `line`, 0-based code-point `column`: from the column
    to the end of the line's code (a line past the end of `lines` is the empty range there)."""
    index = max(line - 1, 0)
    text = lines[index] if index < len(lines) else ""
    start = min(column, len(text))
    end = max(len(text.rstrip()), start + 1)
    return types.Range(
        start=types.Position(line=index, character=utf16(text[:start])),
        end=types.Position(line=index, character=utf16(text[:end])),
    )


def whole(text: str) -> types.Range:
    """The range of all of `text` (what a full-file replacement replaces)."""
    lines = text.split("\n")
    return types.Range(
        start=types.Position(line=0, character=0),
        end=types.Position(line=len(lines) - 1, character=utf16(lines[-1])),
    )


def word_at(text: str, position: types.Position) -> str:
    """The identifier under `position` (a UTF-16 position), or ""."""
    lines = text.split("\n")
    if position.line >= len(lines):
        return ""
    line = lines[position.line]
    at = len(line.encode("utf-16-le")[: position.character * 2].decode("utf-16-le", "ignore"))
    start = at
    while start > 0 and (line[start - 1].isalnum() or line[start - 1] == "_"):
        start -= 1
    end = at
    while end < len(line) and (line[end].isalnum() or line[end] == "_"):
        end += 1
    return line[start:end]
