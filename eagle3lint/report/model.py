"""The result of a check: per-target verdicts, input errors, and the JSON form (a public API)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from eagle3lint import __version__
from eagle3lint.contract.model import Contract
from eagle3lint.findings import Finding, InputError, Severity


@dataclass
class TargetResult:
    arch: str
    cls: str
    path: str
    line: int
    implements_eagle3: bool
    eagle3_ready: bool
    """No error finding before intent was applied: an unclaimed target is not ready even
    though its findings were lowered to info."""
    findings: list[Finding] = field(default_factory=list)
    variant: str | None = None
    registered: bool = True
    pp_aux_relay: bool | None = None
    """The decoder relays aux hidden states across pipeline-parallel ranks (None: the release
    has no such relay)."""
    claims_eagle3: bool = True
    """Its code claims EAGLE-3 support (SupportsEagle3, aux-layer methods or taps)."""
    required: bool = False
    """The user asked about it (--arch, --hf-config's architectures, require)."""

    @property
    def has_errors(self) -> bool:
        """An error finding is reported: what the exit code follows (intent applied)."""
        return any(f.severity is Severity.ERROR for f in self.findings)

    def to_json(self) -> dict[str, object]:
        return {
            "arch": self.arch,
            "class": self.cls,
            "path": self.path,
            "line": self.line,
            "variant": self.variant,
            "registered": self.registered,
            "implements_eagle3": self.implements_eagle3,
            "eagle3_ready": self.eagle3_ready,
            "pp_aux_relay": self.pp_aux_relay,
            "claims_eagle3": self.claims_eagle3,
            "required": self.required,
            "findings": [f.to_json() for f in self.findings],
        }


@dataclass
class Report:
    contract: Contract
    targets: list[TargetResult] = field(default_factory=list)
    errors: list[InputError] = field(default_factory=list)
    files_analysed: int = 0
    baselined: int = 0
    """Findings (by location) not reported because the baseline holds them."""
    focus: list[str] | None = None
    """With file arguments, those files (resolved): findings elsewhere are shown because a
    target defined in them depends on them."""

    def outside_focus(self, path: str) -> bool:
        """A finding located outside the files given (reported for a target defined there)."""
        return self.focus is not None and str(Path(path).resolve()) not in self.focus

    @property
    def findings(self) -> list[Finding]:
        return [f for t in self.targets for f in t.findings]

    @property
    def has_errors(self) -> bool:
        return any(t.has_errors for t in self.targets)

    def exit_code(self, exit_zero: bool = False) -> int:
        """ruff's convention: 2 when some input was not analysed, 1 for error findings."""
        if self.errors:
            return 2
        if exit_zero:
            return 0
        return 1 if self.has_errors else 0

    def to_json(self) -> dict[str, object]:
        return {
            "eagle3lint": __version__,
            "vllm": {
                "root": self.contract.root,
                "version": self.contract.version,
                "contract": self.contract.describe(),
                "contract_source": self.contract.source,
                "details": self.contract.to_json(),
            },
            "summary": {
                "targets": len(self.targets),
                "ready": sum(t.eagle3_ready for t in self.targets),
                "blocked": sum(not t.eagle3_ready for t in self.targets),
                "files_analysed": self.files_analysed,
                "baselined": self.baselined,
            },
            "targets": [t.to_json() for t in self.targets],
            "errors": [e.to_json() for e in self.errors],
        }
