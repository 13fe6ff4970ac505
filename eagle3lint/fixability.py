"""`[*]` as a promise: a finding is fixable only when the repair plan of its target, computed
during the check by the planner `fix` uses (`codemod.plan`), succeeds for every file it needs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from eagle3lint.cachedir import file_digest
from eagle3lint.findings import Finding, Repair
from eagle3lint.index.project import ProjectIndex
from eagle3lint.plans import Chain, FileEdit, Plan
from eagle3lint.sources.discovery import Workspace
from eagle3lint.sources.files import UnreadableSource, read_source_bytes


def interfaces_folder(workspace: Workspace) -> Path | None:
    """The folder of the tree's model files (and `interfaces.py`): files there import from it
    relatively."""
    if workspace.tree is None:
        return None
    return workspace.tree.parent.joinpath(*workspace.wing.models_package.split("."))


def cached_release(workspace: Workspace, vllm_version: str | None) -> Path | None:
    """The release folder when the tree is a cached copy (`--vllm X`), which fix never edits."""
    if vllm_version is None or workspace.tree is None:
        return None
    return workspace.tree.resolve()


def plan_for_check(
    chains: Sequence[Chain],
    workspace: Workspace,
    index: ProjectIndex,
    vllm_version: str | None,
    excluded: Callable[[str], bool] | None,
    code: str = "",
) -> Plan:
    """The plan `fix` would write for these targets. A cached release alone is planned as its
    copy would be (what `fix --diff` shows); out-of-tree files checked against one may not
    have their repairs reach into it. `code`, the fingerprint of the code that plans (empty:
    none), keeps the plan in the summary cache, as it depends on nothing else than what
    `_stored_key` holds."""
    if not any(f.repair for chain in chains for f in chain.findings):
        # Nothing to plan: libcst and the codemods (a third of a hook's run) stay unloaded.
        return Plan()
    folder = interfaces_folder(workspace)
    cached = cached_release(workspace, vllm_version)
    read_only = cached if workspace.files else None
    stored = _stored_key(chains, folder, read_only, excluded, index.source_bytes, code)
    if stored is not None and index.cache is not None:
        found = index.cache.load(stored[0], StoredPlan)
        if found is not None:
            return found.plan(stored[1], stored[2])
    # Imported here: a check replayed from the run cache, a plan found in the cache, or a
    # rule loading the engine, need not load libcst and the codemods (a second of a run).
    from eagle3lint.codemod.plan import SourceCache, plan

    made = plan(
        chains,
        folder,
        read_only=read_only,
        excluded=excluded,
        sources=SourceCache(index.source_bytes, index.cache),
        workers=index.workers(),
    )
    if stored is not None and index.cache is not None:
        index.cache.store(stored[0], StoredPlan.of(made, stored[1]))
    return made


@dataclass
class StoredEdit:
    """A `FileEdit` as the cache keeps it: its repairs by number (`_stored_key`'s order)."""

    path: str
    applied: list[int]
    refused: list[int]
    reasons: list[str]
    new: str | None
    """The rewritten bytes as latin-1 text: JSON holds text, and latin-1 maps every byte."""


@dataclass
class StoredPlan:
    """A plan as the summary cache keeps it."""

    edits: list[StoredEdit]
    archs: list[str]
    reasons: list[list[str]]

    @classmethod
    def of(cls, plan: Plan, repairs: list[Repair]) -> StoredPlan:
        number = {r: i for i, r in enumerate(repairs)}
        edits = [
            StoredEdit(
                str(e.path),
                [number[r] for r in e.applied],
                [number[r] for r, _ in e.refused],
                [why for _, why in e.refused],
                None if e.new is None else e.new.decode("latin-1"),
            )
            for e in plan.edits
        ]
        return cls(edits, list(plan.refused), list(plan.refused.values()))

    def plan(self, repairs: list[Repair], texts: dict[str, bytes]) -> Plan:
        edits = [
            FileEdit(
                Path(e.path),
                texts[e.path],
                None if e.new is None else e.new.encode("latin-1"),
                [repairs[i] for i in e.applied],
                [(repairs[i], why) for i, why in zip(e.refused, e.reasons, strict=True)],
            )
            for e in self.edits
        ]
        return Plan(edits, dict(zip(self.archs, self.reasons, strict=True)))


def _stored_key(
    chains: Sequence[Chain],
    folder: Path | None,
    read_only: Path | None,
    excluded: Callable[[str], bool] | None,
    known: Callable[[str], bytes | None],
    code: str,
) -> tuple[str, list[Repair], dict[str, bytes]] | None:
    """The key of the plan of `chains` in the cache (everything `codemod.plan.plan` reads),
    its repairs in their numbered order, and the bytes of each file they edit; None when the
    plan cannot be kept: a repair plugin's codemod (its code is not in `code`), an unreadable
    file, no `code`."""
    repairs = sorted(
        {f.repair for c in chains for f in c.findings if f.repair is not None},
        key=lambda r: (r.path, r.kind, r.params),
    )
    if not code or any(type(r).__module__ != Repair.__module__ for r in repairs):
        return None
    number = {r: i for i, r in enumerate(repairs)}
    texts: dict[str, bytes] = {}
    for path in dict.fromkeys(str(Path(r.path)) for r in repairs):
        data = known(path)
        try:
            texts[path] = read_source_bytes(Path(path)) if data is None else data
        except UnreadableSource:
            return None
    parts = [
        code,
        str(Path.cwd()),  # repairs name files relative to it
        str(folder),
        str(read_only),
        [[r.kind, r.path, r.params] for r in repairs],
        {p: [file_digest(d), bool(excluded and excluded(p))] for p, d in texts.items()},
        [[c.arch, [_stored_finding(f, number) for f in c.findings]] for c in chains],
    ]
    return file_digest(json.dumps(parts).encode()), repairs, texts


def marked(
    findings: list[Finding], applied: set[Repair], reasons: list[str] | None
) -> list[Finding]:
    """`findings` with the repairs the plan does not make dropped, and the reasons of their
    target's refusal given instead. A repair another target's plan makes stays: fix applies
    it whatever this target's fate."""
    why = "; ".join(reasons or ()) or "not in the repair plan"
    return [
        replace(f, repair=None, fix_refused=why) if f.repair and f.repair not in applied else f
        for f in findings
    ]


def _stored_finding(finding: Finding, number: dict[Repair, int]) -> list[object]:
    """What the planner reads of a finding."""
    repair = None if finding.repair is None else number[finding.repair]
    return [finding.code, str(finding.severity), finding.fix_refused, repair]
