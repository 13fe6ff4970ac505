"""Code actions: `fix`'s repair of a target as one workspace edit, and a suppression comment
for one finding (`# eagle3lint: ignore[CODE]`, see `eagle3lint.suppressions`)."""

from __future__ import annotations

import io
import tokenize
from collections.abc import Callable, Iterable
from pathlib import Path

from lsprotocol import types

from eagle3lint.server.analysis import FixResult
from eagle3lint.server.text import path_of, uri_of, whole
from eagle3lint.suppressions import DIRECTIVE

FIX_KIND = types.CodeActionKind.QuickFix
"""Both are quick fixes: editors list them on the diagnostic's light bulb."""

Texts = Callable[[Path], tuple[str, int | None]]
"""A file's text as the editor holds it, and its version (None: not open, the disk's)."""


def code_actions(
    uri: str,
    diagnostics: Iterable[types.Diagnostic],
    defined_here: Callable[[str], bool],
    texts: Texts,
) -> list[types.CodeAction]:
    """The actions for the eagle3lint diagnostics of a range of `uri`: a fix for each target
    they block (those defined in this file, else the first they name), left for
    `codeAction/resolve` to compute, and a suppression for each finding."""
    fixes: dict[str, types.CodeAction] = {}
    suppressions: list[types.CodeAction] = []
    for diagnostic in diagnostics:
        data = diagnostic.data if isinstance(diagnostic.data, dict) else {}
        archs = [a for a in data.get("archs") or () if isinstance(a, str)]
        if not archs:
            continue  # an input error: nothing to fix or silence
        if data.get("fixable"):
            for arch in [a for a in archs if defined_here(a)] or archs[:1]:
                fixes.setdefault(
                    arch,
                    types.CodeAction(
                        title=f"Fix {arch} (eagle3lint fix)",
                        kind=FIX_KIND,
                        diagnostics=[diagnostic],
                        data={"fix": arch, "uri": uri},
                    ),
                )
        code, path, line = data.get("code"), data.get("path"), data.get("line")
        if isinstance(code, str) and isinstance(path, str) and isinstance(line, int):
            action = _suppression(diagnostic, code, Path(path), line, texts)
            if action is not None:
                suppressions.append(action)
    return [*fixes.values(), *suppressions]


def _suppression(
    diagnostic: types.Diagnostic, code: str, path: Path, line: int, texts: Texts
) -> types.CodeAction | None:
    real = path_of(uri_of(path))
    if real is None or real.suffix != ".py":
        return None  # a stale baseline entry is in the baseline's JSON
    text, version = texts(real)
    edit = suppression_edit(text, line, code)
    if edit is None:
        return None
    return types.CodeAction(
        title=f"Suppress {code} for this line",
        kind=FIX_KIND,
        diagnostics=[diagnostic],
        edit=_workspace_edit({real: (version, [edit])}),
    )


def suppression_edit(text: str, line: int, code: str) -> types.TextEdit | None:
    """The edit that makes `# eagle3lint: ignore[...]` silence `code` on 1-based `line`: the
    code added to the line's directive, else the directive added after the line's code (or
    comment), else, where the line's end is inside a string or continued with a backslash,
    on a line of its own above it (such a comment applies to the line below). None: the
    line is past the end of `text`, or a bare `ignore` silences every code there already."""
    lines = text.split("\n")
    if not 1 <= line <= len(lines):
        return None
    current = lines[line - 1].rstrip("\r")
    comment, continued = _comment_and_end(text, line)
    if comment is not None:
        found = DIRECTIVE.search(current, comment)
        if found is not None:
            codes = found.group("codes")
            if codes is None:
                return None
            at = found.end("codes")
            return _insert(line - 1, current[:at], f", {code}" if codes.strip() else code)
    if continued:
        indent = current[: len(current) - len(current.lstrip())]
        return _insert(line - 1, "", f"{indent}# eagle3lint: ignore[{code}]\n")
    return _insert(line - 1, current.rstrip(), f"  # eagle3lint: ignore[{code}]")


def _insert(line: int, before: str, new: str) -> types.TextEdit:
    """Insert `new` on 0-based `line` after the text `before` (the line's start)."""
    at = types.Position(line=line, character=len(before.encode("utf-16-le")) // 2)
    return types.TextEdit(range=types.Range(start=at, end=at), new_text=new)


def _comment_and_end(text: str, line: int) -> tuple[int | None, bool]:
    """Where the comment of 1-based `line` starts (a column, None: it has none), and whether
    the line ends inside a token that goes on (a string) or with a backslash. A buffer being
    typed may not tokenize: its lines then count as plain code."""
    comment: int | None = None
    continued = text.split("\n")[line - 1].rstrip("\r").endswith("\\")
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.start[0] > line:
                break
            if token.type == tokenize.COMMENT and token.start[0] == line:
                comment = token.start[1]
            elif token.type == tokenize.STRING and token.start[0] <= line < token.end[0]:
                continued = True
    except (tokenize.TokenError, SyntaxError):
        pass
    return comment, continued


def fix_edit(result: FixResult, texts: Texts) -> types.WorkspaceEdit:
    """`fix`'s result as one workspace edit replacing each file it changes whole (the client
    applies it all or, where a file's version moved on, none of it)."""
    edits: dict[Path, tuple[int | None, list[types.TextEdit]]] = {}
    for path, (_, new) in sorted(result.contents.items()):
        text, version = texts(path)
        edits[path] = (version, [types.TextEdit(range=whole(text), new_text=decode(new))])
    return _workspace_edit(edits)


def decode(data: bytes) -> str:
    """A Python file's text as an editor shows it: its PEP 263 encoding, without a BOM."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError:
        encoding = "utf-8"
    return data.decode(encoding, "replace").removeprefix("\ufeff")


def _workspace_edit(
    edits: dict[Path, tuple[int | None, list[types.TextEdit]]],
) -> types.WorkspaceEdit:
    return types.WorkspaceEdit(
        document_changes=[
            types.TextDocumentEdit(
                text_document=types.OptionalVersionedTextDocumentIdentifier(
                    uri=uri_of(path), version=version
                ),
                edits=list(changes),
            )
            for path, (version, changes) in edits.items()
        ]
    )
