"""What a rule reports: findings, their severities and the repair a finding asks `fix` for."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from eagle3lint.errors import InputError as InputError  # re-exported for older imports
from eagle3lint.repairs import Repair

DECIDE_WITH_CONFIG = ("--hf-config",)
"""What decides an attribute of the checkpoint's config: its config.json."""
DECIDE_WITH_MODEL_TYPE = ("--hf-config", "--model-type")
"""What decides the target's text model_type: its config.json, or the model_type itself."""


class Severity(StrEnum):
    """How bad a finding is; only errors make a target not EAGLE-3 ready."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


@dataclass(frozen=True, slots=True)
class Unverified:
    """Something a target's readiness depends on that no source read here decides: the
    checkpoint's config.json does (vLLM reads it at run time). A target with one is neither
    ready nor blocked (`eagle3_ready: null`) until the options in `decide` are given."""

    what: str
    """What vLLM reads at run time (`config.image_token_index`, the text model_type)."""
    why: str
    """Why the sources read here do not decide it."""
    decide: tuple[str, ...] = DECIDE_WITH_CONFIG
    """The options that decide it."""

    def to_json(self, code: str) -> dict[str, object]:
        return {"code": code, "what": self.what, "why": self.why, "pass": list(self.decide)}


@dataclass(frozen=True, slots=True)
class Finding:
    """One blocker (or remark) located in a file."""

    code: str
    rule: str
    severity: Severity
    message: str
    path: str
    line: int
    column: int = 0
    hint: str = ""
    repair: Repair | None = field(default=None, compare=False)
    fix_refused: str = field(default="", compare=False)
    """Why `fix` cannot repair this finding although its code is one fix repairs: the rule's
    reason, or the repair plan's for its target (`codemod.plan`). Empty when fixable."""
    unverified: Unverified | None = field(default=None, compare=False)
    """Set on a remark that readiness depends on something the check cannot decide."""
    runners: tuple[str, ...] = field(default=(), compare=False)
    """The engine's model runners whose code path it is on; () for every runner."""

    @property
    def fixable(self) -> bool:
        return self.repair is not None

    @property
    def col(self) -> int:
        """The 1-based column every format shows (`column` is 0-based, as libcst counts)."""
        return self.column + 1

    def to_json(self) -> dict[str, object]:
        return {
            "code": self.code,
            "rule": self.rule,
            "severity": str(self.severity),
            "path": self.path,
            "line": self.line,
            "column": self.col,
            "message": self.message,
            "hint": self.hint,
            "fixable": self.fixable,
            "fix_refused": self.fix_refused or None,
            "runners": list(self.runners) or None,
        }
