"""How the matrix reads one target of a `check --format json` report.

Kept in one place because the report is growing: `role` (target / draft / pooling, with
`eagle3_ready: null` for non-targets) and severities that follow the user's intent are coming.
Readiness is `eagle3_ready`, never recomputed from severities.
"""

from __future__ import annotations

from typing import Any

TARGET = "target"
PLATFORM_VARIANT_CODE = "EAG104"
"""The finding that says a platform variant answers `supports_eagle3()` unlike the CUDA one."""

READY = "ready"
BLOCKED = "blocked"
NOT_A_TARGET = "not a target"
ABSENT = "absent"
ERROR = "error"
"""The release could not be checked (its download, its contract, or the check failed): whether
it registers the architecture is not known."""
STATUSES = (READY, BLOCKED, NOT_A_TARGET, ABSENT, ERROR)

Target = dict[str, Any]
"""One entry of the report's `targets`."""


def role_of(target: Target) -> str:
    """The report's role; every architecture is a target in reports that have no roles."""
    return str(target.get("role") or TARGET)


def status_of(target: Target) -> str:
    if role_of(target) != TARGET or target.get("eagle3_ready") is None:
        return NOT_A_TARGET
    return READY if target["eagle3_ready"] else BLOCKED


def blocking_findings(target: Target) -> list[dict[str, Any]]:
    """The findings that keep a blocked target from being ready: its errors (or, where the
    report lowered them because nobody asked about this target, every finding it has)."""
    if status_of(target) != BLOCKED:
        return []
    findings = list(target.get("findings", ()))
    return [f for f in findings if f.get("severity") == "error"] or findings


def variant_findings(target: Target) -> list[dict[str, Any]]:
    """Platform variants that disagree with the CUDA class about EAGLE-3."""
    return [f for f in target.get("findings", ()) if f.get("code") == PLATFORM_VARIANT_CODE]
