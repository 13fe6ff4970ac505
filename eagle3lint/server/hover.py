"""Hover: a target class's verdict from the last check, and a code's `explain` page."""

from __future__ import annotations

import re

from eagle3lint.codes import find_code
from eagle3lint.errors import UsageError
from eagle3lint.explain import explanation_markdown
from eagle3lint.findings import Severity
from eagle3lint.report.model import Report, TargetResult

CODE = re.compile(r"[A-Z]{3}\d{3}")
"""How every code is spelled (EAG301, SGL101)."""


def hover_markdown(word: str, report: Report | None) -> str | None:
    """What to show for the word under the cursor: the page of the code it spells, else the
    verdicts of the targets whose class it names; None for anything else."""
    if CODE.fullmatch(word):
        try:
            return explanation_markdown(find_code(word))
        except UsageError:
            return None
    targets = [t for t in report.targets if t.cls == word] if report is not None else []
    if not targets:
        return None
    return "\n\n".join(_verdict(t) for t in targets)


def verdict(target: TargetResult) -> str:
    """ready, blocked or unverified (for a target), else its role (draft, pooling)."""
    if not target.is_target:
        return f"{target.role}: no target verdict applies"
    return _word(target.eagle3_ready)


def _verdict(target: TargetResult) -> str:
    variant = f" ({target.variant})" if target.variant else ""
    lines = [f"**{target.arch}**{variant}: EAGLE-3 **{verdict(target)}**"]
    if target.runner:
        lines.append(f"runner: {target.runner}")
    if target.ready_by_runner:
        by = target.ready_by_runner.items()
        lines.append("by runner: " + ", ".join(f"{name}: {_word(ready)}" for name, ready in by))
    if target.runner_by_platform:
        lines.append(
            "platforms: " + ", ".join(f"{p}: {r}" for p, r in target.runner_by_platform.items())
        )
    if not target.claims_eagle3:
        lines.append("its code claims no EAGLE-3 support")
    codes = sorted({f.code for f in target.findings if f.severity is not Severity.INFO})
    if codes:
        lines.append("blockers and warnings: " + ", ".join(codes))
    for finding in target.unverified:
        if finding.unverified is not None:
            decide = " or ".join(finding.unverified.decide)
            lines.append(f"unverified: {finding.unverified.what} (pass {decide})")
    return "  \n".join(lines)


def _word(ready: bool | None) -> str:
    """A verdict in one word (None: the check could not decide it)."""
    return "unverified" if ready is None else "ready" if ready else "blocked"
