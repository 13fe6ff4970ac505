"""A check's report as the protocol's diagnostics, one list per open file.

A finding located in an open file is a diagnostic there. One located elsewhere is shown where
it matters, on the class of each target it decides in an open file, its real place given as
related information, as the text report marks it "outside the files checked". Each
diagnostic's `data` holds the finding's own place and architectures, which the code actions
read back.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection
from pathlib import Path

from lsprotocol import types

from eagle3lint.engine import CheckRun
from eagle3lint.engines import Target
from eagle3lint.explain import DOCS_URL
from eagle3lint.findings import Severity
from eagle3lint.index.refs import ClassRef
from eagle3lint.report.locations import Located, grouped_findings
from eagle3lint.report.model import Report
from eagle3lint.server.text import line_range, uri_of

SOURCE = "eagle3lint"

SEVERITIES = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.INFO: types.DiagnosticSeverity.Information,
}

Lines = Callable[[Path], list[str]]
"""The lines of a file as the check read it."""


def diagnostics(run: CheckRun, open_files: Collection[Path]) -> dict[Path, list[types.Diagnostic]]:
    """The diagnostics of every open file (an empty list clears a file's)."""
    report = run.report
    found: dict[Path, list[types.Diagnostic]] = {path: [] for path in open_files}
    seen: set[tuple[Path, str]] = set()

    def lines(path: Path) -> list[str]:
        data = run.index.source_bytes(str(path)) or b""
        return data.decode("utf-8", "replace").split("\n")

    places = _deciding(run, found.keys())
    for located in grouped_findings(report):
        finding = located.finding
        where = _real(finding.path)
        item = _finding(located, report, lines)
        if where in found:
            _add(found, seen, where, item(where, finding.line, finding.column))
            continue
        for arch in located.archs:
            for home, line in places.get(arch, ()):
                _add(found, seen, home, item(home, line, 0))
    for error in report.errors:
        where = _real(error.path)
        text = error.message
        at = [where] if where in found else list(found)
        for home in at:
            related = None
            if home != where:
                related = [_related(error.path, error.line or 1, 0, lines, "not analysed")]
                text = f"{error.message} (in {error.path})"
            diagnostic = types.Diagnostic(
                range=line_range(lines(home), (error.line or 1) if home == where else 1),
                message=text,
                severity=types.DiagnosticSeverity.Error,
                code=error.code,
                code_description=types.CodeDescription(href=f"{DOCS_URL}/{error.code}.md"),
                source=SOURCE,
                related_information=related,
                data={"code": error.code, "path": error.path, "line": error.line or 1},
            )
            _add(found, seen, home, diagnostic)
    return found


def _deciding(run: CheckRun, open_files: Collection[Path]) -> dict[str, list[tuple[Path, int]]]:
    """Where each target is decided among the open files: the file defining it, else each
    open file it is judged through (a decoder's, a base class's), at the first class of its
    chain there (line 1 where none is found)."""
    places: dict[str, list[tuple[Path, int]]] = {}
    index = run.index
    for target in run.targets:
        chain = [e for ref in _refs(target) for e in index.mro(ref) if isinstance(e, ClassRef)]
        lines: dict[Path, int] = {}
        for ref in chain:
            lines.setdefault(_real(index.display_path(ref.file)), ref.cls.line)
        files = [_real(index.display_path(target.ref.file))]
        # Its classes' files first; then what it reads besides (a language model built by
        # architecture name); a target reported reads an open file (`checkrun.dependencies`).
        for modules in (target.modules, target.depends_on):
            if any(f in open_files for f in files):
                break
            sources = [index.source_file(module) for module in sorted(modules())]
            files = [_real(str(s.path)) for s in sources if s is not None]
        if not any(f in open_files for f in files):
            files = list(open_files)
        for path in dict.fromkeys(f for f in files if f in open_files):
            places.setdefault(target.arch, []).append((path, lines.get(path, 1)))
    return places


def _refs(target: Target) -> list[ClassRef]:
    """The classes a target's verdict reads: its own, and (for engines whose targets have
    them) its language model's and that one's decoder."""
    owner = getattr(target, "decoder_owner", target)
    found = [target.ref, owner.ref, getattr(owner, "inner_model", None)]
    return [ref for ref in found if isinstance(ref, ClassRef)]


def _finding(
    located: Located, report: Report, lines: Lines
) -> Callable[[Path, int, int], types.Diagnostic]:
    """The diagnostic of `located` at a line and column of a file: the text report's lines
    (message, note, hint, why not fixable)."""
    finding = located.finding
    outside = report.outside_focus(finding.path)
    message = "\n".join(located.lines(report))

    def at(path: Path, line: int, column: int) -> types.Diagnostic:
        related = None
        if outside:
            note = located.note(report)
            related = [_related(finding.path, finding.line, finding.column, lines, note)]
        return types.Diagnostic(
            range=line_range(lines(path), line, column),
            message=message,
            severity=SEVERITIES[finding.severity],
            code=finding.code,
            code_description=types.CodeDescription(href=f"{DOCS_URL}/{finding.code}.md"),
            source=SOURCE,
            related_information=related,
            data={
                "code": finding.code,
                "path": finding.path,
                "line": finding.line,
                "column": finding.column,
                "archs": located.archs,
                "fixable": finding.fixable,
            },
        )

    return at


def _related(
    path: str, line: int, column: int, lines: Lines, message: str
) -> types.DiagnosticRelatedInformation:
    real = _real(path)
    return types.DiagnosticRelatedInformation(
        location=types.Location(uri=uri_of(real), range=line_range(lines(real), line, column)),
        message=message,
    )


def _add(
    found: dict[Path, list[types.Diagnostic]],
    seen: set[tuple[Path, str]],
    path: Path,
    diagnostic: types.Diagnostic,
) -> None:
    """Add the diagnostic to `path`'s, once however many targets lead it there."""
    key = (path, f"{diagnostic.code}:{diagnostic.range}:{diagnostic.message}")
    if key not in seen:
        seen.add(key)
        found[path].append(diagnostic)


def _real(path: str) -> Path:
    return Path(os.path.realpath(path))
