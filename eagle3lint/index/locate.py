"""Line numbers for CST nodes without libcst's whole-file position pass.

libcst computes positions by generating code for the whole module, which costs about as much
again as parsing it. The index needs positions for a handful of nodes per file, so it anchors
class and `def` headers by a text search that moves forward in document order (headers are
found in the order the tree lists them, so an earlier look-alike in a string cannot be taken
twice), and computes exact positions inside the few functions it analyses in depth by running
the position pass on that function alone.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider


class HeaderLocator:
    """Finds `class NAME` / `def NAME` header lines (and, with keyword `""`, module-level
    `NAME =` assignments) in document order."""

    def __init__(self, source: str) -> None:
        self._source = source
        self._line_starts = [0]
        for match in re.finditer("\n", source):
            self._line_starts.append(match.end())
        self._headers: dict[str, dict[str, list[tuple[int, int]]]] = {}

    def find(self, keyword: str, name: str, after_line: int) -> tuple[int, int]:
        """Line and column of the first `keyword name` header at or after `after_line` (else
        of the file's first one)."""
        found = self._headers_of(keyword).get(name)
        if not found:
            return after_line, 0
        at = bisect.bisect_left(found, (max(after_line, 1), -1))
        return found[at] if at < len(found) else found[0]

    def _headers_of(self, keyword: str) -> dict[str, list[tuple[int, int]]]:
        """Every `keyword NAME` header of the file, by NAME, in order. One scan per keyword:
        a search per header (from the top again when it missed, as a registry dict's name
        does) made a file of 8,000 small dicts take over 300 s."""
        headers = self._headers.get(keyword)
        if headers is None:
            headers = self._headers[keyword] = {}
            # No keyword: a module-level assignment `NAME = ...` (or `NAME: T = ...`).
            pattern = (
                re.compile(rf"^([ \t]*)(?:async[ \t]+)?{keyword}[ \t]+(\w+)", re.MULTILINE)
                if keyword
                else re.compile(r"^()(\w+)[ \t]*(?::[^=\n]*)?=(?!=)", re.MULTILINE)
            )
            for match in pattern.finditer(self._source):
                line = bisect.bisect_right(self._line_starts, match.start())
                column = len(match.group(1).expandtabs())
                headers.setdefault(match.group(2), []).append((line, column))
        return headers


def function_positions(
    func: cst.FunctionDef, def_line: int, def_column: int
) -> Callable[[cst.CSTNode], tuple[int, int]]:
    """Exact (line, column) of nodes inside `func`, given where its `def` header is.

    The function is laid out on its own, so its body's indentation is relative to the header;
    adding the header's column puts every node back where it is in the file.
    """
    wrapper = MetadataWrapper(cst.Module(body=[func]), unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    offset = def_line - positions[func.name].start.line

    def position(node: cst.CSTNode) -> tuple[int, int]:
        code_range = positions.get(node)
        if code_range is None:
            return def_line, 0
        return code_range.start.line + offset, code_range.start.column + def_column

    return position
