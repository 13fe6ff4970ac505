"""`# eagle3lint: ignore[EAG101]` comments: the findings they silence, and unused ones.

A comment applies to findings on its own line, or, when it stands alone on a line, to the
findings on the next line. `ignore[A, B]` names codes; a bare `ignore` silences every code.
Comments are read with `tokenize`, and only from files that carry findings: a suppression can
only matter there. Their text is the one the index read (a file is read once per run).
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from eagle3lint.codes import SUPPRESSIONS, UNUSED_SUPPRESSION
from eagle3lint.findings import Finding
from eagle3lint.sources.files import UnreadableSource, read_source_bytes

DIRECTIVE = re.compile(r"#\s*eagle3lint:\s*ignore\b(?:\[(?P<codes>[^\]]*)\])?", re.IGNORECASE)


@dataclass
class Suppression:
    """One `# eagle3lint: ignore` comment."""

    line: int
    """Where the comment is."""
    column: int
    applies_to: int
    """The line whose findings it silences."""
    codes: tuple[str, ...]
    """The codes it names; empty for a bare `ignore`, which silences them all."""
    used: set[str] = field(default_factory=set)
    """Codes it silenced in this run."""

    def silences(self, finding: Finding) -> bool:
        return finding.line == self.applies_to and (not self.codes or finding.code in self.codes)


def read_suppressions(source: bytes) -> list[Suppression]:
    """The suppression comments of one file's source (none if it does not tokenize)."""
    found: list[Suppression] = []
    code_lines: set[int] = set()
    comments: list[tokenize.TokenInfo] = []
    try:
        for token in tokenize.tokenize(io.BytesIO(source).readline):
            if token.type == tokenize.COMMENT:
                comments.append(token)
            elif token.type not in (
                tokenize.NL,
                tokenize.NEWLINE,
                tokenize.INDENT,
                tokenize.DEDENT,
                tokenize.ENCODING,
                tokenize.ENDMARKER,
            ):
                code_lines.update(range(token.start[0], token.end[0] + 1))
    except (tokenize.TokenError, SyntaxError):
        return []
    for comment in comments:
        match = DIRECTIVE.search(comment.string)
        if match is None:
            continue
        line, column = comment.start
        codes = match.group("codes")
        found.append(
            Suppression(
                line=line,
                column=column + match.start(),
                applies_to=line if line in code_lines else line + 1,
                codes=tuple(c.strip().upper() for c in codes.split(",") if c.strip())
                if codes
                else (),
            )
        )
    return found


def _file_suppressions(path: str, source_bytes: Callable[[str], bytes | None]) -> list[Suppression]:
    source = source_bytes(path)
    if source is None:
        # A finding in a file the index did not summarise (the contract's gate file).
        try:
            source = read_source_bytes(Path(path))
        except UnreadableSource:
            return []
    # Tokenizing costs about as much as the rest of a cached run; most files have no directive.
    if b"eagle3lint" not in source.lower():
        return []
    # tokenize ends lines at LF only; CPython and editors at a lone CR too.
    return read_suppressions(source.replace(b"\r\n", b"\n").replace(b"\r", b"\n"))


def apply_suppressions(
    groups: Sequence[list[Finding]],
    reportable: Callable[[str], bool] | None,
    source_bytes: Callable[[str], bytes | None] = lambda path: None,
) -> list[list[Finding]]:
    """`groups` (the findings of each target) without the suppressed ones.

    `reportable(code)` says whether this run could have reported `code`; a suppression naming
    a code that was reportable but silenced nothing is reported as EAG904. None: the run saw
    only part of the targets (`--arch`), so nothing can be called unused. `source_bytes(path)`:
    the bytes already read from a file, None to read it here.
    """
    paths = sorted({f.path for group in groups for f in group})
    by_path = {path: sups for path in paths if (sups := _file_suppressions(path, source_bytes))}
    if not by_path:
        return [list(group) for group in groups]
    kept: list[list[Finding]] = []
    for group in groups:
        remaining = []
        for finding in group:
            silencing = [s for s in by_path.get(finding.path, ()) if s.silences(finding)]
            for suppression in silencing:
                suppression.used.add(finding.code)
            if not silencing:
                remaining.append(finding)
        kept.append(remaining)
    if reportable is None or not reportable(UNUSED_SUPPRESSION.code):
        return kept
    for path, suppressions in by_path.items():
        for suppression in suppressions:
            message = _unused_message(suppression, reportable)
            if message:
                kept[_owner(groups, path, suppression.applies_to)].append(
                    Finding(
                        code=UNUSED_SUPPRESSION.code,
                        rule=SUPPRESSIONS,
                        severity=UNUSED_SUPPRESSION.severity,
                        message=message,
                        path=path,
                        line=suppression.line,
                        column=suppression.column,
                        hint="Remove the comment, or the codes it no longer needs.",
                    )
                )
    return kept


def _owner(groups: Sequence[list[Finding]], path: str, line: int) -> int:
    """The target to report an unused suppression under: one with a finding on the line it
    applies to, else one with a finding in its file (only such files are read)."""
    in_file = [i for i, group in enumerate(groups) if any(f.path == path for f in group)]
    on_line = [i for i in in_file if any(f.path == path and f.line == line for f in groups[i])]
    return (on_line or in_file)[0]


def _unused_message(suppression: Suppression, reportable: Callable[[str], bool]) -> str:
    if not suppression.codes:
        if suppression.used:
            return ""
        return f"`# eagle3lint: ignore` silences nothing on line {suppression.applies_to}."
    unused = [c for c in suppression.codes if c not in suppression.used and reportable(c)]
    if not unused:
        return ""
    return (
        f"`# eagle3lint: ignore[{', '.join(suppression.codes)}]`: "
        f"{', '.join(unused)} {'is' if len(unused) == 1 else 'are'} not reported on line "
        f"{suppression.applies_to}."
    )
