"""Class bodies a check does not read, left out of the parse.

libcst's parse is most of a cold run's time, and most of a model file is classes no rule reads
(vision towers, MLPs, processors, weight loaders). A file summarised for some of its classes
has the bodies of its other top-level classes replaced by `pass` and empty lines before libcst
sees it: every line keeps its number and every kept node its column, so the summary's positions
are the file's. CPython's parse (which the syntax check runs anyway) says where bodies are; a
body read later is parsed with every other body left out, so no body is parsed twice.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Collection, Iterable

from eagle3lint.index.model import BodySpan
from eagle3lint.shapes.layer_names import may_name_layers_past_count

_ENDING = re.compile(r"(?:\r\n|\r|\n)\Z")
_DEFINES_CLASS = re.compile(r"^[ \t]+class\b", re.MULTILINE)


def bodies_of(lines: list[str], module: ast.Module) -> tuple[list[BodySpan], list[BodySpan]]:
    """Where the bodies of the top-level classes of a file (its `source_lines`) are, and those
    of its top-level functions that no summary reads: all but class factories (a function that
    defines a class) and a module `__getattr__` (its per-platform imports are variants). A body
    that shares a line with its header (`class A(B): pass`) is not listed: there is nothing to
    save."""
    classes, functions = [], []
    for node in module.body:
        if isinstance(node, ast.ClassDef):
            into = classes
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            into = functions
        else:
            continue
        body = _body(node, lines)
        if body is None:
            continue
        if into is functions and (
            node.name == "__getattr__"
            or _DEFINES_CLASS.search("".join(lines[body.start - 1 : body.end]))
        ):
            continue
        into.append(body)
    return classes, functions


def _body(
    node: ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef, lines: list[str]
) -> BodySpan | None:
    first = node.body[0]
    decorators = getattr(first, "decorator_list", None)
    # A decorated statement starts at its first decorator, not at its `def`.
    start = decorators[0].lineno if decorators else first.lineno
    head = lines[start - 1].lstrip(" \t")
    begins = (
        head.startswith("@")
        if decorators
        else first.col_offset == len(lines[start - 1]) - len(head)
    )
    if start <= node.lineno or not begins:
        return None
    header = node.decorator_list[0].lineno if node.decorator_list else node.lineno
    return BodySpan(node.name, header, start, node.end_lineno or first.lineno)


def skim(
    lines: list[str],
    bodies: Iterable[BodySpan],
    wanted: Collection[str],
    functions: Iterable[BodySpan] = (),
) -> tuple[str, list[str]]:
    """The file (its `source_lines`, which stay as they are) with the `bodies` of classes not
    named in `wanted` and the bodies of `functions` left out, and the names of those classes
    (in file order, once each)."""
    edited = list(lines)
    unread: dict[str, None] = {}
    for body in bodies:
        if body.name not in wanted and not _may_rename_layers(lines, body):
            _leave_out(edited, body)
            unread[body.name] = None
    for body in functions:
        _leave_out(edited, body)
    return "".join(edited), list(unread)


def _may_rename_layers(lines: list[str], body: BodySpan) -> bool:
    """Whether a class body may name modules past the layer count (`shapes.layer_names`): such a
    class (a loop model's attention) is read by what builds it, which no closure names, so it is
    always read; a few bodies in a release."""
    return may_name_layers_past_count("".join(lines[body.start - 1 : body.end]))


def _leave_out(lines: list[str], body: BodySpan) -> None:
    head = lines[body.start - 1]
    indent = len(head) - len(head.lstrip(" \t"))
    lines[body.start - 1] = head[:indent] + "pass" + _ending(head)
    for number in range(body.start, body.end):
        lines[number] = _ending(lines[number])


def _ending(line: str) -> str:
    found = _ENDING.search(line)
    return found.group() if found else ""
