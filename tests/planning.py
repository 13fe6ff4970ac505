"""Planning the repairs of a report again, as tests need after changing a file or a target."""

from __future__ import annotations

from pathlib import Path

from eagle3lint.codemod.plan import SourceCache, plan
from eagle3lint.plans import Chain, FileEdit
from eagle3lint.report.model import Report


def plan_edits(
    report: Report, interfaces_dir: Path | None = None, sources: SourceCache | None = None
) -> tuple[list[FileEdit], list[str]]:
    """The edits of the report's targets' repairs and the `not fixed:` lines, planned anew
    (reading the files as they are now, unless `sources` holds what the check read)."""
    chains = [Chain(t.arch, t.findings) for t in report.targets if t.is_target]
    planned = plan(chains, interfaces_dir, sources=sources)
    return planned.edits, planned.lines()
