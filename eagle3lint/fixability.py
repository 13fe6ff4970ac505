"""`[*]` as a promise: a finding is fixable only when the repair plan of its target, computed
during the check by the planner `fix` uses (`codemod.plan`), succeeds for every file it needs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from eagle3lint.findings import Finding, Repair
from eagle3lint.index.project import ProjectIndex
from eagle3lint.plans import Chain, Plan
from eagle3lint.sources.discovery import Workspace


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
) -> Plan:
    """The plan `fix` would write for these targets. A cached release alone is planned as its
    copy would be (what `fix --diff` shows); out-of-tree files checked against one may not
    have their repairs reach into it."""
    if not any(f.repair for chain in chains for f in chain.findings):
        # Nothing to plan: libcst and the codemods (a third of a hook's run) stay unloaded.
        return Plan()
    # Imported here: a check replayed from the run cache, or a rule loading the engine, plans
    # nothing and need not load libcst and the codemods.
    from eagle3lint.codemod.plan import SourceCache, plan

    cached = cached_release(workspace, vllm_version)
    return plan(
        chains,
        interfaces_folder(workspace),
        read_only=cached if workspace.files else None,
        excluded=excluded,
        sources=SourceCache(index.source_bytes, index.cache),
    )


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
