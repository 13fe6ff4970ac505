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
UNVERIFIED = "unverified"
"""No error, but readiness depends on what only the checkpoint's config decides (the model_type
the allow-list tests, an image-token attribute): `eagle3_ready: null` on a target."""
NOT_A_TARGET = "not a target"
ABSENT = "absent"
ERROR = "error"
"""The release could not be checked (its download, its contract, or the check failed): whether
it registers the architecture is not known."""
STATUSES = (READY, BLOCKED, UNVERIFIED, NOT_A_TARGET, ABSENT, ERROR)

Target = dict[str, Any]
"""One entry of the report's `targets`."""


def role_of(target: Target) -> str:
    """The report's role; every architecture is a target in reports that have no roles."""
    return str(target.get("role") or TARGET)


def status_of(target: Target) -> str:
    if role_of(target) != TARGET:
        return NOT_A_TARGET
    ready = target.get("eagle3_ready")
    if ready is None:
        # Reports before issue 24 had `null` for non-targets only.
        return UNVERIFIED if "unverified" in target else NOT_A_TARGET
    return READY if ready else BLOCKED


def blocking_findings(target: Target) -> list[dict[str, Any]]:
    """The findings that keep a target from being called ready: a blocked one's errors (or,
    where the report lowered them because nobody asked about this target, every finding it
    has); an unverified one's remarks on what only the checkpoint's config decides."""
    status = status_of(target)
    findings = list(target.get("findings", ()))
    if status == UNVERIFIED:
        codes = {u.get("code") for u in target.get("unverified", ())}
        return [f for f in findings if f.get("code") in codes]
    if status != BLOCKED:
        return []
    return [f for f in findings if f.get("severity") == "error"] or findings


def variant_findings(target: Target) -> list[dict[str, Any]]:
    """Platform variants that disagree with the CUDA class about EAGLE-3."""
    return [f for f in target.get("findings", ()) if f.get("code") == PLATFORM_VARIANT_CODE]
