"""What a repair plan holds: the files `fix` rewrites and why targets are left alone.

Plain data (no libcst), so that a check replayed from the run cache, and rule plugins that
import the engine, do not load the codemods; `codemod/plan.py` computes plans.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from eagle3lint.findings import Finding
from eagle3lint.repairs import Repair


@dataclass
class FileEdit:
    """One file's rewrite: its bytes as read, as rewritten (None: nothing kept), the repairs
    applied and those refused with the codemod's reason."""

    path: Path
    original: bytes
    new: bytes | None = None
    applied: list[Repair] = field(default_factory=list)
    refused: list[tuple[Repair, str]] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.new is not None and self.new != self.original


@dataclass(frozen=True)
class Chain:
    """A target to repair whole: its architecture and its findings (those with a repair are
    the chain; an error without one makes the whole target unfixable)."""

    arch: str
    findings: Sequence[Finding]


@dataclass
class Plan:
    """The edits to write, and why each target left alone is left alone."""

    edits: list[FileEdit] = field(default_factory=list)
    refused: dict[str, list[str]] = field(default_factory=dict)
    """Architecture → the planner's reasons (one per cause), for each target not repaired."""

    @property
    def applied(self) -> set[Repair]:
        """Every repair the edits make (a refused target's too, where another target's
        repair is the same one)."""
        return {r for e in self.edits if e.new is not None for r in e.applied}

    @property
    def changed(self) -> list[FileEdit]:
        return [e for e in self.edits if e.changed]

    def lines(self) -> list[str]:
        """`<arch>: <reason>`, one per reason: what `fix` prints as `not fixed:`."""
        return [f"{arch}: {why}" for arch, reasons in self.refused.items() for why in reasons]
