"""The matrix itself: releases as columns, architectures as rows, one verdict per cell.

Built only from `check --format json` reports (one per release), read through `verdicts`, so a
cell says exactly what `check` says for that architecture on that release.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from eagle3lint import __version__
from eagle3lint.engines import Wing, wings
from eagle3lint.matrix.columns import Column, sort_key
from eagle3lint.matrix.verdicts import (
    ABSENT,
    BLOCKED,
    ERROR,
    NOT_A_TARGET,
    READY,
    TARGET,
    UNVERIFIED,
    blocking_findings,
    role_of,
    status_of,
    variant_findings,
)

Report = dict[str, Any]
"""A report as `check --format json` prints it."""
_MODEL_FOLDERS = ("model_executor/models/", "models/")


@dataclass
class Release:
    """One column: where it came from and what its contract holds."""

    label: str
    spec: str
    version: str | None
    era: str
    getter: str
    gate: list[str] | None
    """The model_type allow-list (entries that pass as substrings); None: the release has none."""
    pp_aux_relay: bool
    """`EagleModelMixin` relays aux hidden states across pipeline-parallel ranks."""
    runner: str = ""
    """Which model runner runs EAGLE-3 by default (`V1`, `V2`, `V2 for 3 listed and dense`)."""
    methods: list[str] = field(default_factory=list)
    """The speculative methods whose target contract this column's verdicts cover."""
    targets: int = 0
    ready: int = 0
    unverified: int = 0
    """Targets with no error whose readiness depends on the checkpoint's config."""
    others: int = 0
    """Registered architectures that are not targets (draft and pooling models)."""
    errors: list[str] = field(default_factory=list)
    """The report's input errors, `CODE message` each."""
    checked: bool = True
    """False when the release could not be checked at all (its download, its contract or the
    check failed): its cells are errors."""

    def to_json(self) -> dict[str, object]:
        return {
            "label": self.label,
            "spec": self.spec,
            "version": self.version,
            "contract": {
                "era": self.era,
                "getter": self.getter,
                "gate_model_types": self.gate,
                "pp_aux_relay": self.pp_aux_relay,
                "runner": self.runner,
                "methods": self.methods,
            },
            "summary": {
                "targets": self.targets,
                "ready": self.ready,
                "unverified": self.unverified,
                "blocked": self.targets - self.ready - self.unverified,
                "not_targets": self.others,
            },
            "errors": self.errors,
            "checked": self.checked,
        }


@dataclass
class Cell:
    status: str
    codes: list[str] = field(default_factory=list)
    """Codes of the findings that block readiness, once each, in order."""
    findings: list[dict[str, object]] = field(default_factory=list)
    """Those findings: code, severity, message, hint and `path:line` inside the release."""
    variants: list[str] = field(default_factory=list)
    """Why platform variants disagree with the CUDA class (EAG104 messages)."""
    pp_aux_relay: bool | None = None
    """The decoder relays aux hidden states across pipeline-parallel ranks (None: the release
    has no relay, or the report does not say)."""

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {"status": self.status, "codes": self.codes}
        if self.pp_aux_relay is not None:
            data["pp_aux_relay"] = self.pp_aux_relay
        if self.findings:
            data["findings"] = self.findings
        if self.variants:
            data["platform_variants"] = self.variants
        return data


@dataclass
class Regression:
    """Ready in `ready_in`, blocked again in `blocked_in`, by `codes`."""

    ready_in: str
    blocked_in: str
    codes: list[str]

    def to_json(self) -> dict[str, object]:
        return {"ready_in": self.ready_in, "blocked_in": self.blocked_in, "codes": self.codes}


@dataclass
class Row:
    arch: str
    family: str
    role: str
    cells: dict[str, Cell]
    first_ready: str | None = None
    regressions: list[Regression] = field(default_factory=list)

    @property
    def variant_releases(self) -> list[str]:
        """Releases in which a platform variant disagrees with CUDA."""
        return [label for label, cell in self.cells.items() if cell.variants]

    @property
    def pp_aux_relay(self) -> bool | None:
        """Whether the newest release that registers it relays its aux states under PP."""
        return self.current().pp_aux_relay

    def current(self) -> Cell:
        """The cell of the newest release that registers this architecture (of those that
        could be checked)."""
        present = [c for c in self.cells.values() if c.status not in (ABSENT, ERROR)]
        return present[-1] if present else Cell(ABSENT)

    def to_json(self) -> dict[str, object]:
        return {
            "arch": self.arch,
            "family": self.family,
            "role": self.role,
            "first_ready": self.first_ready,
            "regressions": [r.to_json() for r in self.regressions],
            "platform_variants_disagree": self.variant_releases,
            "pp_aux_relay": self.pp_aux_relay,
            "cells": {label: cell.to_json() for label, cell in self.cells.items()},
        }


@dataclass
class Matrix:
    releases: list[Release]
    rows: list[Row]
    command: str = ""
    generated: str = ""
    engine: str = "vllm"
    """The engine whose releases the columns are (one per matrix)."""
    engine_label: str = "vLLM"

    @property
    def runner_facts(self) -> bool:
        """Whether the releases state a model_type gate, a PP relay and model runners (vLLM's
        do; SGLang's contract has none of them): the per-release tables show those columns."""
        return any(r.runner or r.gate is not None or r.pp_aux_relay for r in self.releases)

    @property
    def failed(self) -> list[Release]:
        """The releases with input errors (the matrix then exits 2)."""
        return [r for r in self.releases if r.errors]

    def to_json(self) -> dict[str, object]:
        return {
            "eagle3lint": __version__,
            "engine": self.engine,
            "command": self.command,
            "generated": self.generated,
            "releases": [r.to_json() for r in self.releases],
            "rows": [r.to_json() for r in self.rows],
        }


def build_matrix(results: Sequence[tuple[Column, Report]]) -> Matrix:
    """The matrix of these per-release reports, columns in version order."""
    ordered = sorted(results, key=lambda item: sort_key(_version(*item)))
    labels = _labels(ordered)
    releases = [
        _release(label, col, rep) for label, (col, rep) in zip(labels, ordered, strict=True)
    ]
    by_arch: dict[str, dict[str, tuple[dict[str, Any], Report]]] = {}
    for label, (_, report) in zip(labels, ordered, strict=True):
        for target in report.get("targets", ()):
            by_arch.setdefault(target["arch"], {}).setdefault(label, (target, report))
    unchecked = {r.label for r in releases if not r.checked}
    rows = [_row(arch, seen, labels, unchecked) for arch, seen in by_arch.items()]
    rows.sort(key=lambda r: (r.family.lower(), r.arch.lower()))
    wing = next((w for _, rep in ordered if (w := engine_of(rep))), None)
    if wing is None:
        return Matrix(releases, rows)
    return Matrix(releases, rows, engine=wing.name, engine_label=wing.label)


def engine_of(report: Report) -> Wing | None:
    """The engine a report is about: the wing whose name keys its contract block."""
    return next((w for w in wings() if w.name in report), None)


def _block(report: Report) -> dict[str, Any]:
    """The report's engine block (`vllm`, `sglang`): root, version, contract, details."""
    wing = engine_of(report)
    block = report.get(wing.name) if wing else None
    return block if isinstance(block, dict) else {}


def _version(column: Column, report: Report) -> str | None:
    return column.version or _block(report).get("version")


def _labels(results: Sequence[tuple[Column, Report]]) -> list[str]:
    """The version of each column; the path given where versions repeat or are unknown."""
    versions = [_version(col, rep) for col, rep in results]
    labels = []
    for (column, _), version in zip(results, versions, strict=True):
        unique = version is not None and versions.count(version) == 1
        labels.append(version if unique or column.path is None else column.spec)  # type: ignore[arg-type]
    return labels


def _release(label: str, column: Column, report: Report) -> Release:
    block = _block(report)
    details = block.get("details") or {}
    gate = details.get("gate")
    targets = report.get("targets", ())
    statuses = [status_of(t) for t in {t["arch"]: t for t in targets}.values()]
    return Release(
        label=label,
        spec=column.spec,
        version=_version(column, report),
        # An engine without eras (SGLang) is described by its contract line.
        era=str(details.get("era") or block.get("contract") or ""),
        getter=str(details.get("getter", "")),
        gate=list(gate["entries"]) if gate else None,
        pp_aux_relay=bool(details.get("pp_relay")),
        runner=_runner(details.get("runners"), details.get("platform")),
        methods=list(details.get("methods") or ()),
        targets=sum(s in (READY, BLOCKED, UNVERIFIED) for s in statuses),
        ready=statuses.count(READY),
        unverified=statuses.count(UNVERIFIED),
        others=statuses.count(NOT_A_TARGET),
        errors=[f"{e.get('code')} {e.get('message')}" for e in report.get("errors", ())],
        # Errors and no target: the contract or the check failed, nothing was analysed.
        checked=not (report.get("errors") and not targets),
    )


def _runner(runners: dict[str, Any] | None, platform: dict[str, Any] | None) -> str:
    """The default model runner on the report's platform as the per-release table says it."""
    if not runners:
        return ""
    present = runners.get("present") or []
    if len(present) == 1:
        return f"{present[0].upper()} only"
    if platform and platform.get("triton") is False and runners.get("v1_without_triton"):
        return f"V1 (no Triton on {platform.get('name')})"
    listed = len(runners.get("v2_architectures") or ())
    if runners.get("default") == "v1" and (listed or runners.get("v2_for_dense")):
        dense = " and dense models" if runners.get("v2_for_dense") else ""
        return f"V2 for {listed} listed{dense}, else V1"
    return str(runners.get("default", "")).upper()


def _row(
    arch: str,
    seen: dict[str, tuple[dict[str, Any], Report]],
    labels: list[str],
    unchecked: set[str],
) -> Row:
    cells = {
        label: _cell(*seen[label])
        if label in seen
        else Cell(ERROR if label in unchecked else ABSENT)
        for label in labels
    }
    newest_target, newest_report = seen[[label for label in labels if label in seen][-1]]
    row = Row(
        arch=arch,
        family=family_of(newest_target.get("path", ""), newest_report),
        role=role_of(newest_target),
        cells=cells,
    )
    row.first_ready = next((label for label, c in cells.items() if c.status == READY), None)
    last_ready: str | None = None
    for label, cell in cells.items():
        if cell.status == READY:
            last_ready = label
        elif cell.status == BLOCKED and last_ready is not None:
            row.regressions.append(Regression(last_ready, label, cell.codes))
            last_ready = None
    return row


def _cell(target: dict[str, Any], report: Report) -> Cell:
    status = status_of(target)
    root = str(_block(report).get("root") or "")
    findings = [
        {
            "code": f["code"],
            "severity": f.get("severity"),
            "message": f.get("message", ""),
            "hint": f.get("hint", ""),
            "location": f"{_inside(str(f.get('path', '')), root, report)}:{f.get('line')}",
        }
        for f in blocking_findings(target)
    ]
    return Cell(
        status=status,
        codes=list(dict.fromkeys(str(f["code"]) for f in findings)),
        findings=findings,
        variants=[str(f.get("message", "")) for f in variant_findings(target)],
        pp_aux_relay=target.get("pp_aux_relay"),
    )


def _inside(path: str, root: str, report: Report) -> str:
    """A path relative to the release's package folder (`vllm/`, `sglang/`) when it is inside
    it (or inside the folder a symlinked root leads to)."""
    wing = engine_of(report)
    package = wing.package if wing else "vllm"
    for folder in dict.fromkeys([root, os.path.realpath(root)] if root else []):
        if path.startswith(folder.rstrip("/") + "/"):
            return f"{package}/" + path[len(folder.rstrip("/")) + 1 :]
    return path


def family_of(path: str, report: Report) -> str:
    """The model file's stem, or the package's name for `models/<family>/…` packages."""
    rel = _inside(path, str(_block(report).get("root") or ""), report)
    for folder in _MODEL_FOLDERS:
        at = rel.find(folder)
        if at >= 0:
            parts = PurePosixPath(rel[at + len(folder) :]).parts
            if len(parts) > 1:
                return parts[0]
            return PurePosixPath(parts[0]).stem if parts else rel
    return PurePosixPath(rel).stem


def is_target(row: Row) -> bool:
    return row.role == TARGET
