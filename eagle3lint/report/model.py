"""The result of a check: per-target verdicts, input errors, and the JSON form (a public API)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from eagle3lint import __version__
from eagle3lint.engines import Contract
from eagle3lint.errors import EXIT_FINDINGS, EXIT_INPUT, EXIT_OK, InputError
from eagle3lint.findings import Finding, Severity
from eagle3lint.report.invocation import relative


@dataclass
class TargetResult:
    arch: str
    cls: str
    path: str
    line: int
    implements_eagle3: bool
    eagle3_ready: bool | None
    """No error finding before intent was applied: an unclaimed target is not ready even
    though its findings were lowered to info. None for a draft or pooling model, where no
    target verdict applies, and for a target with no error whose readiness depends on what
    only the checkpoint's config decides (`unverified`)."""
    unverified: list[Finding] = field(default_factory=list)
    """The findings (before the baseline) saying what its readiness depends on that was not
    verified (`Finding.unverified`); empty for drafts and pooling models."""
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
    role: str = "target"
    """`target`, `draft` or `pooling` (see `eagle3lint.engines.Role`)."""
    runner: str | None = None
    """The engine's model runner that runs the target by default on the run's platform (the
    verdict's), when the engine has several."""
    ready_by_runner: dict[str, bool | None] | None = None
    """The verdict under each runner, when they differ; None when they agree."""
    runner_by_platform: dict[str, str] | None = None
    """The runner on the platforms whose choice differs from the run's platform's (`rocm`,
    `cpu` on CUDA); None: none."""
    reads_changed: list[str] | None = None
    """With files given, those of them its verdict read, the reason it is reported (None:
    no files given; the JSON report then leaves the key out)."""

    @property
    def is_target(self) -> bool:
        return self.role == "target"

    @property
    def has_errors(self) -> bool:
        """An error finding is reported: what the exit code follows (intent applied)."""
        return any(f.severity is Severity.ERROR for f in self.findings)

    @property
    def is_unverified(self) -> bool:
        """A target with no error whose readiness the check could not decide."""
        return self.is_target and self.eagle3_ready is None

    @property
    def unverified_required(self) -> bool:
        """Asked about, not known to be ready, and what leaves it open still reported (a
        baseline may hold it, as it holds errors): fails the run as an error would."""
        if not (self.required and self.is_unverified):
            return False
        reported = {_where(f) for f in self.findings}
        return any(_where(f) in reported for f in self.unverified)

    def to_json(self) -> dict[str, object]:
        return {
            "arch": self.arch,
            "class": self.cls,
            "path": self.path,
            "line": self.line,
            "variant": self.variant,
            "registered": self.registered,
            "role": self.role,
            "implements_eagle3": self.implements_eagle3,
            "eagle3_ready": self.eagle3_ready,
            "runner": self.runner,
            "ready_by_runner": self.ready_by_runner,
            "runner_by_platform": self.runner_by_platform,
            "unverified": [
                f.unverified.to_json(f.code) for f in self.unverified if f.unverified is not None
            ],
            "pp_aux_relay": self.pp_aux_relay,
            "claims_eagle3": self.claims_eagle3,
            "required": self.required,
            "findings": [f.to_json() for f in self.findings],
        } | ({} if self.reads_changed is None else {"reads_changed": self.reads_changed})


def _where(finding: Finding) -> tuple[str, str, int, int]:
    return finding.code, finding.path, finding.line, finding.column


@dataclass
class Report:
    contract: Contract
    engine: str = "vllm"
    """The wing whose tree was checked: the JSON block describing the tree is named after it."""
    engine_label: str = "vLLM"
    targets: list[TargetResult] = field(default_factory=list)
    errors: list[InputError] = field(default_factory=list)
    files_analysed: int = 0
    baselined: int = 0
    """Findings (by location) not reported because the baseline holds them."""
    focus: list[str] | None = None
    """With file arguments, those files (resolved): findings elsewhere are shown because a
    target defined in them depends on them."""
    transformers: dict[str, str | None] | None = None
    """The transformers whose sources were read (its version, and where it came from:
    installed beside the tree, or resolved from the tree's requirement); None: unknown."""

    def outside_focus(self, path: str) -> bool:
        """A finding located outside the files given (reported for a target defined there)."""
        return self.focus is not None and str(Path(path).resolve()) not in self.focus

    def changed_reads(self, archs: list[str]) -> str:
        """The files given that the targets `archs` read, where some target is not defined in
        them (the finding is then reported because of what it read); "" otherwise."""
        results = [t for t in self.targets if t.arch in set(archs)]
        if all(not self.outside_focus(t.path) for t in results):
            return ""
        files = sorted({p for t in results for p in t.reads_changed or ()})
        return ", ".join(relative(p) for p in files)

    @property
    def findings(self) -> list[Finding]:
        return [f for t in self.targets for f in t.findings]

    @property
    def has_errors(self) -> bool:
        return any(t.has_errors for t in self.targets)

    def count_ready(self, ready: bool) -> int:
        """How many targets are (or are not) EAGLE-3 ready; drafts and pooling models apart."""
        return sum(t.eagle3_ready is ready for t in self.targets)

    def count_unverified(self) -> int:
        """How many targets are neither ready nor blocked: their readiness is unverified."""
        return sum(t.is_unverified for t in self.targets)

    def unverified_required(self) -> list[TargetResult]:
        """The targets asked about whose readiness is unverified (exit code 1)."""
        return [t for t in self.targets if t.unverified_required]

    def count_role(self, role: str) -> int:
        return sum(t.role == role for t in self.targets)

    def exit_code(self, exit_zero: bool = False) -> int:
        """ruff's convention: 2 when some input was not analysed, 1 for error findings and for
        targets asked about (`--arch`, `--require`, --hf-config's architectures) whose
        readiness is unverified: a run that was asked "is X ready?" does not pass on "maybe"."""
        if self.errors:
            return EXIT_INPUT
        if exit_zero:
            return EXIT_OK
        return EXIT_FINDINGS if self.has_errors or self.unverified_required() else EXIT_OK

    def to_json(self) -> dict[str, object]:
        return {
            "eagle3lint": __version__,
            self.engine: {
                "root": self.contract.root,
                "version": self.contract.version,
                "contract": self.contract.describe(),
                "contract_source": self.contract.source,
                "transformers": self.transformers,
                "details": self.contract.to_json(),
            },
            "summary": {
                "archs": len(self.targets),
                "targets": sum(t.is_target for t in self.targets),
                "ready": self.count_ready(True),
                "blocked": self.count_ready(False),
                "unverified": self.count_unverified(),
                "drafts": self.count_role("draft"),
                "pooling": self.count_role("pooling"),
                "files_analysed": self.files_analysed,
                "baselined": self.baselined,
            },
            "targets": [t.to_json() for t in self.targets],
            "errors": [e.to_json() for e in self.errors],
        }
