"""Findings by location, for every format: a finding located once is shown once.

The report lists a finding under each target it blocks (LlamaModel's forward serves 26
architectures); a person, an annotation or a SARIF result should see it once, with the
architectures it affects. Run-wide remarks (codes marked `run_wide`, EAG502) are one entry per
code whatever their locations.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache

from eagle3lint.findings import Finding
from eagle3lint.report.model import Report


@dataclass
class Located:
    """One finding, and every target (architecture) it affects."""

    finding: Finding
    archs: list[str] = field(default_factory=list)

    def affects(self, limit: int | None = None) -> str:
        """`affects 26 architectures: A, B, C and 23 more` (empty for a single target)."""
        if len(self.archs) < 2:
            return ""
        names = self.archs if limit is None else self.archs[:limit]
        more = len(self.archs) - len(names)
        listed = ", ".join(names) + (f" and {more} more" if more else "")
        return f"affects {len(self.archs)} architectures: {listed}"

    def note(self, report: Report, limit: int | None = None) -> str:
        """What to say beside the message: the architectures it affects, or, for a finding
        outside the files given, that it decides the targets defined in them."""
        if report.outside_focus(self.finding.path):
            names = self.archs if limit is None else self.archs[:limit]
            more = len(self.archs) - len(names)
            listed = ", ".join(names) + (f" and {more} more" if more else "")
            caused = report.changed_reads(self.archs)
            if not caused:
                return f"outside the files checked; decides {listed}, defined in them"
            reads = "reads" if len(self.archs) == 1 else "read"
            return f"outside the files checked; decides {listed}, which {reads} {caused}{CHANGED}"
        return self.affects(limit)

    def lines(self, report: Report) -> list[str]:
        """The message, its note and its hint, each a line of its own (annotations, SARIF),
        unescaped: each format escapes every line and joins them its own way."""
        finding = self.finding
        lines = [finding.message]
        if note := self.note(report):
            lines.append(f"({note})")
        if finding.hint:
            lines.append(f"Hint: {finding.hint}")
        if finding.fix_refused:
            lines.append(f"Not fixable by eagle3lint fix: {finding.fix_refused}")
        return lines


CHANGED = " (changed)"
"""How a note ends that names the files given a target read: those names, and no line."""
_NAMED_CHANGED = re.compile(r", which reads? [^\n]*?" + re.escape(CHANGED))


def without_changed_names(text: str) -> str:
    """`text` (an output) without the notes naming the changed files targets read: what is
    left is what may quote a line of those files."""
    return _NAMED_CHANGED.sub("", text)


@cache
def run_wide_codes() -> frozenset[str]:
    from eagle3lint.codes import all_codes

    return frozenset(entry.code.code for entry in all_codes() if entry.code.run_wide)


def location_key(finding: Finding) -> tuple[str, ...]:
    if finding.code in run_wide_codes():
        return (finding.code,)
    return (finding.code, finding.path, str(finding.line), str(finding.column))


def grouped_findings(report: Report) -> list[Located]:
    """Every finding once, with the architectures it affects, by file, line and column, and
    what it says: two findings at one place that say different things (the setter and the
    getter missing, an error for one target that is a warning off another's runner) are two."""
    groups: dict[tuple[str, ...], Located] = {}
    for target in report.targets:
        for finding in target.findings:
            key = (*location_key(finding), str(finding.severity), finding.message)
            group = groups.setdefault(key, Located(finding))
            if target.arch not in group.archs:
                group.archs.append(target.arch)
    return sorted(
        groups.values(),
        key=lambda g: (g.finding.path, g.finding.line, g.finding.column, g.finding.code),
    )
