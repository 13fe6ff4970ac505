"""Findings by location, for the formats that annotate files rather than list targets."""

from __future__ import annotations

from eagle3lint.findings import Finding
from eagle3lint.report.model import Report


def distinct_findings(report: Report) -> list[Finding]:
    """Every finding once, by file and line.

    The report lists a finding under each target it blocks (DeepseekV2Model's missing tap
    blocks eight architectures); an annotation should appear once.
    """
    unique = {
        (f.code, f.path, f.line, f.column, f.message): f
        for target in report.targets
        for f in target.findings
    }
    return sorted(unique.values(), key=lambda f: (f.path, f.line, f.column, f.code))
