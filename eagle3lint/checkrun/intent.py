"""Which targets the user asked about, and what that makes of their findings: the readiness
verdict, unverified remarks demanded as warnings, a target nobody asked about reduced to one
note, and each finding marked with its repair or why `fix` leaves it."""

from __future__ import annotations

from dataclasses import dataclass, replace

from eagle3lint.engines import Role, Target, default_runner
from eagle3lint.findings import Finding, Severity
from eagle3lint.fixability import marked
from eagle3lint.plans import Plan


@dataclass(frozen=True)
class Intent:
    """Which targets the user asked about: `--arch`, the `architectures` of `--hf-config`,
    `--require` / `require = [...]` (where `*` means all of them), and those the baseline
    records as ready."""

    archs: list[str]
    hf_architectures: tuple[str, ...]
    require: list[str]
    ready: frozenset[str] = frozenset()
    """The architectures the baseline recorded as ready: required as `require` names them."""

    def about(self, target: Target) -> bool:
        names = {*self.archs, *self.hf_architectures, *self.require, *self.ready}
        return "*" in self.require or bool({target.arch, target.ref.name} & names)


def label(target: Target) -> str:
    """The target's name in fix's messages: its architecture, and its platform variant."""
    return f"{target.arch} [{target.variant}]" if target.variant else target.arch


def readiness(findings: list[Finding]) -> bool | None:
    """A target's verdict: False with an error finding; else None when it depends on something
    only the checkpoint's config decides (`Finding.unverified`); else True."""
    if any(f.severity is Severity.ERROR for f in findings):
        return False
    return None if any(f.unverified is not None for f in findings) else True


def runner_readiness(target: Target, findings: list[Finding]) -> dict[str, bool | None] | None:
    """The verdict under each model runner that may run the target, when they differ (a
    finding on one runner's path only, such as V1's image-token read); else None."""
    if target.role is not Role.TARGET or default_runner(target) is None:
        return None
    verdicts = {
        runner: readiness([f for f in findings if not f.runners or runner in f.runners])
        for runner in target.runner_choices
    }
    return verdicts if len(set(verdicts.values())) > 1 else None


def for_default_runner(target: Target, findings: list[Finding]) -> list[Finding]:
    """A finding off the path of the runner that runs the target by default does not decide
    its verdict: an error becomes a warning, and says under which runner it applies."""
    default = default_runner(target)
    if default is None:
        return findings
    return [
        f
        if not f.runners or default in f.runners
        else replace(
            f,
            severity=Severity.WARNING if f.severity is Severity.ERROR else f.severity,
            unverified=None,
            message=f"{f.message} {target.off_runner_note(f.runners)}".rstrip(),
        )
        for f in findings
    ]


def demanded(findings: list[Finding]) -> list[Finding]:
    """A target the user asked about cannot be called ready while something it depends on is
    unverified: those remarks are shown as warnings (and the run exits 1, `Report.exit_code`)."""
    return [
        replace(f, severity=Severity.WARNING)
        if f.unverified is not None and f.severity is Severity.INFO
        else f
        for f in findings
    ]


def unclaimed_findings(target: Target, findings: list[Finding]) -> list[Finding]:
    """A target nobody asked about whose code claims no EAGLE-3 support is not broken: its
    rule errors and warnings become one info finding (on the EAG101/EAG102 it carries); info
    findings and the tool's own codes (EAG9xx) stay as they are."""
    kept = [f for f in findings if f.code.startswith("EAG9") or f.severity is Severity.INFO]
    rules = [f for f in findings if f not in kept]
    errors = [f for f in rules if f.severity is Severity.ERROR]
    protocol = next((f for f in rules if f.code in UNCLAIMED_CODES), None)
    # Without its EAG101/EAG102 (not selected, or a tree with no runtime check) the note still
    # stands, on the target's class, under the code of its first blocker.
    base = protocol or next(iter(errors or rules), None)
    if base is None:
        return kept
    if protocol is None:
        cls = target.ref.cls
        path = target.index.display_path(target.ref.file)
        base = replace(base, path=path, line=cls.line, column=cls.column)
    name = target.ref.name
    if errors and all(f.fixable for f in errors):
        # Not planned (fix does not repair targets nobody asked about), so no promise.
        message = (
            f"{name} is not EAGLE-3 capable; `eagle3lint check --arch {target.arch}` says "
            "whether `fix` can add support"
        )
    else:
        message = f"{name} is not EAGLE-3 capable (not all of its blockers have an automatic fix)"
    summary = replace(
        base,
        severity=Severity.INFO,
        message=message,
        hint=f"Not an error: its code claims no EAGLE-3 support. `--arch {target.arch}` or "
        f'`require = ["{target.arch}"]` reports its {len(errors)} blocker(s) as errors.',
        repair=None,
    )
    return sorted([summary, *kept], key=lambda f: (f.code, f.path, f.line))


UNCLAIMED_CODES = ("EAG101", "EAG102")
"""The findings that say a target is not a SupportsEagle3: the one kept for an unclaimed one."""


def as_asked(
    target: Target, findings: list[Finding], asked_about: bool, plan: Plan
) -> list[Finding]:
    """A target's findings as the report shows them: demanded when asked about, one note when
    unclaimed and not asked about, else marked fixable (by `plan`) or not."""
    if asked_about:
        findings = demanded(findings)
    if not asked_about and not target.claims_eagle3:
        return unclaimed_findings(target, findings)
    if target.role is Role.TARGET:
        return marked(findings, plan.applied, plan.refused.get(label(target)))
    return marked(findings, set(), [f"fix never makes a {target.role} model a target"])
