"""One check run: discover sources, index them, read the contract, run the rules, report.

The steps are in `eagle3lint.checkrun`; `run_check` takes them in order."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eagle3lint.baseline import Baseline, Scope
from eagle3lint.checkrun.dependencies import Dependencies, RecordStore, settle, target_key
from eagle3lint.checkrun.fingerprint import code_fingerprint
from eagle3lint.checkrun.inputs import nothing_found, unique, workspace_errors
from eagle3lint.checkrun.intent import (
    Intent,
    as_asked,
    for_default_runner,
    label,
    readiness,
    runner_readiness,
)
from eagle3lint.checkrun.judging import instantiate, judge
from eagle3lint.checkrun.options import CheckOptions, discover_for, excluder_for
from eagle3lint.checkrun.selection import select_targets, tree_contract, unread_contract
from eagle3lint.checkrun.shown import Shown
from eagle3lint.checkrun.verdicts import Judged, Verdicts, VerdictsFile
from eagle3lint.codes import STALE_BASELINE_ENTRY
from eagle3lint.config_classes import transformers_library
from eagle3lint.engines import Contract, Role, Target, default_runner
from eagle3lint.findings import Finding
from eagle3lint.fixability import plan_for_check
from eagle3lint.hf_config import read_config_json, text_model_type
from eagle3lint.index.cache import SummaryCache, default_cache_dir
from eagle3lint.index.libraries import find_transformers
from eagle3lint.index.outside import outside_text
from eagle3lint.index.project import ParsesAhead, ProjectIndex
from eagle3lint.plans import Chain, Plan
from eagle3lint.report.model import Report, TargetResult
from eagle3lint.rule import Rule, RuleContext, selected
from eagle3lint.sources.discovery import Workspace
from eagle3lint.sources.walk import Excluder
from eagle3lint.suppressions import apply_suppressions


@dataclass
class CheckRun:
    """Everything a check produced; `fix` reuses the index and the targets."""

    report: Report
    index: ProjectIndex
    workspace: Workspace
    targets: list[Target]
    plan: Plan = field(default_factory=Plan)
    """What `fix` writes: the repair plan of every target shown with repairs."""
    every_finding: list[Finding] = field(default_factory=list)
    """Every finding the rules gave (after suppressions, before the runner's, the baseline's
    and the files' filters): what a message may quote, shown or not."""


def _index_for(
    workspace: Workspace, options: CheckOptions, ahead: ParsesAhead | None
) -> ProjectIndex:
    roots = [*workspace.extra_roots]
    if workspace.import_root is not None:
        roots.append(workspace.import_root)
    cache = SummaryCache(default_cache_dir()) if options.use_cache else None
    index = ProjectIndex(roots, cache=cache, jobs=options.jobs, ahead=ahead)
    try:
        transformers, looked = find_transformers(
            workspace.import_root,
            workspace.wing.package,
            lambda path: outside_text(index, path),
            options.progress,
        )
    except BaseException:
        index.close()  # the parses started ahead
        raise
    for path in looked:
        index.note_absent(path)
    if transformers is not None:
        index.libraries.append(transformers)
        for path in transformers.inputs:
            # What chose transformers is an input: removing or upgrading it, or editing the
            # requirement, changes what the config classes say, so the whole-run cache must
            # not replay the old answer.
            outside_text(index, path)
    index.on_load = options.on_file
    if workspace.extra_roots:
        index.relative_home = workspace.wing.models_package
    return index


def run_check(
    options: CheckOptions,
    rules: Iterable[type[Rule]] | None = None,
    workspace: Workspace | None = None,
    ahead: ParsesAhead | None = None,
) -> CheckRun:
    """Check the targets the options select; `workspace` when the caller discovered it,
    `ahead` the parses it started (results never depend on them)."""
    workspace = workspace or discover_for(options)
    index = _index_for(workspace, options, ahead)
    try:
        return _checked(options, rules, workspace, index)
    finally:
        index.close()


def _checked(
    options: CheckOptions,
    rules: Iterable[type[Rule]] | None,
    workspace: Workspace,
    index: ProjectIndex,
) -> CheckRun:
    """The check of `workspace`, step by step; the order of the steps is the order of the
    report's input errors."""
    errors = workspace_errors(workspace)
    store = RecordStore() if options.use_cache else None
    record_key = RecordStore.key(options, workspace)
    given = workspace.files if workspace.only_files else None
    narrowed = given is not None or bool(options.archs)
    # Verdicts are kept of the whole tree's run of the rules a command line loads.
    reuse = options.reuse_verdicts and not narrowed and rules is None and not options.pairing
    kept_at = VerdictsFile(store, record_key) if store is not None and reuse else None
    record = store.load(record_key) if store is not None and (narrowed or kept_at) else None
    verdicts = kept_at.load() if kept_at is not None and record is not None else None
    deps = Dependencies(index, given, record, verdicts)
    with index.recording() as shared:
        checkpoint = _checkpoint(options, index)
        contract = tree_contract(index, workspace, errors)
        if contract is not None:
            contract = workspace.wing.for_setup(contract, index, options.platform, checkpoint)
        shown_contract = unread_contract(workspace) if contract is None else contract
        ctx = _rule_context(options, index, shown_contract, checkpoint)
    deps.shared |= shared
    targets: list[Target] = []
    if contract is not None:
        targets = select_targets(index, contract, workspace, options.archs, errors, deps)
    rule_objects = instantiate(rules, options, errors, workspace.wing.name)
    report_paths = {str(p.resolve()) for p in workspace.files} if workspace.only_files else None
    judged = [
        t.findings if isinstance(t, Judged) else _judged(rule_objects, t, ctx, options, deps)
        for t in targets
    ]
    fresh = [(t, f) for t, f in zip(targets, judged, strict=True) if not isinstance(t, Judged)]
    if given is not None:
        # Files given (a commit's, a pull request's): the targets that read one of them, none
        # when none is a module of the tree (an excluded file, a test file beside the tree).
        kept = [i for i, t in enumerate(targets) if deps.caused_by(target_key(t))]
        targets, judged = [targets[i] for i in kept], [judged[i] for i in kept]
    # Suppressions apply before the per-file filter: a comment is used if any target needed it.
    per_target = apply_suppressions(
        judged,
        None if options.archs else lambda code: selected(code, options.select, options.ignore),
        index.source_bytes,
    )
    every_finding = [finding for findings in per_target for finding in findings]
    by_runner = [runner_readiness(t, f) for t, f in zip(targets, per_target, strict=True)]
    per_target = [for_default_runner(t, f) for t, f in zip(targets, per_target, strict=True)]
    baseline = _baseline(options, index)
    ready = baseline.ready if baseline is not None else frozenset()
    asked = Intent(options.archs, ctx.hf_architectures, options.require, ready)
    excluder = excluder_for(options)
    required = [asked.about(t) for t in targets]
    fix_plan = _fix_plan(options, workspace, index, excluder, targets, per_target, required)
    reduced = [t.arch for t, asked in zip(targets, required, strict=True) if _reduced(t, asked)]
    scope = baseline_scope(options, targets, excluder, reduced)
    # With an input error some finding may be missing: no entry is called stale on that.
    judged = scope if not errors and not index.errors else None
    shown = Shown(index, baseline, excluder, report_paths, judged)
    caused = {t.arch: deps.caused_by(target_key(t)) for t in targets} if given else None
    results, reported = _results(targets, per_target, by_runner, required, fix_plan, shown)
    for result in results if caused is not None else ():
        result.reads_changed = [str(p) for p in caused.get(result.arch, ())]
    errors += shown.errors(reported)
    folders = [p for p in options.paths if os.path.isdir(p)]
    if not targets and not errors and workspace.extra_roots and folders:
        errors.append(nothing_found(folders))
    report = Report(
        contract=ctx.contract,
        engine=workspace.wing.name,
        engine_label=workspace.wing.label,
        targets=results,
        errors=unique(errors),
        files_analysed=index.loaded() if given is None else deps.files_read(targets),
        # A stale baseline entry is located in the baseline: not outside what was checked.
        focus=sorted(report_paths | ({str(baseline.path.resolve())} if baseline else set()))
        if report_paths is not None
        else None,
        baselined=len(shown.baselined),
        transformers=library.to_json() if (library := transformers_library(index)) else None,
    )
    if store is not None and not report.errors:
        new_record = deps.record()
        store.store(record_key, new_record)
        if kept_at is not None:
            kept_at.store(new_record, verdicts or Verdicts({}), deps.reused, fresh)
    return CheckRun(report, index, workspace, targets, fix_plan, every_finding)


def _judged(
    rules: list[Rule], target: Target, ctx: RuleContext, options: CheckOptions, deps: Dependencies
) -> list[Finding]:
    """The target's findings, what it read to reach them noted in `deps`."""
    with ctx.index.recording() as reads:
        findings = judge(rules, target, ctx, options)
        settle(target)
    deps.reads.setdefault(target_key(target), set()).update(reads)
    return findings


def _checkpoint(options: CheckOptions, index: ProjectIndex) -> tuple[Path, dict[str, Any]] | None:
    """`--hf-config`'s file and object, read here: the file is an input of the run."""
    if options.hf_config is None:
        return None
    hf_config, file, text = read_config_json(options.hf_config, "--hf-config")
    index.note_outside(file, text.encode("utf-8"))
    return file, hf_config


def _rule_context(
    options: CheckOptions,
    index: ProjectIndex,
    contract: Contract,
    checkpoint: tuple[Path, dict[str, Any]] | None,
) -> RuleContext:
    """What every rule is given besides its target: the index, the contract, and `--hf-config`
    with the text model_type it names."""
    hf_config = checkpoint[1] if checkpoint is not None else None
    model_type = options.model_type
    if hf_config is not None:
        model_type = model_type or text_model_type(hf_config) or None
    return RuleContext(
        index=index,
        contract=contract,
        model_type=model_type,
        hf_config=hf_config,
        hf_config_path=str(options.hf_config) if options.hf_config else None,
        hf_architectures=tuple(
            a for a in (hf_config or {}).get("architectures") or () if isinstance(a, str)
        ),
        explicit_model_type=options.model_type is not None,
        pairing=options.pairing,
    )


def _fix_plan(
    options: CheckOptions,
    workspace: Workspace,
    index: ProjectIndex,
    excluder: Excluder,
    targets: list[Target],
    per_target: list[list[Finding]],
    required: list[bool],
) -> Plan:
    """What `fix` writes. It repairs the targets whose findings are shown with their repairs:
    the ones asked about or claiming EAGLE-3 support (the others become one info note)."""
    if not options.plan_fixes:
        return Plan()
    return plan_for_check(
        [
            Chain(label(t), findings)
            for t, findings, asked_about in zip(targets, per_target, required, strict=True)
            if t.role is Role.TARGET and (asked_about or t.claims_eagle3)
        ],
        workspace,
        index,
        options.release,
        excluder.excludes if excluder else None,
        code_fingerprint() if options.use_cache else "",
    )


def _reduced(target: Target, asked_about: bool) -> bool:
    """Shown as one note (`intent.as_asked`): nobody asked, its code claims no support."""
    return not asked_about and not target.claims_eagle3


def baseline_scope(
    options: CheckOptions, targets: list[Target], excluder: Excluder, reduced: Iterable[str]
) -> Scope:
    """The baseline entries a run with these options and targets could match."""
    return Scope(
        reportable=lambda code: (
            selected(STALE_BASELINE_ENTRY.code, options.select, options.ignore)
            and selected(code, options.select, options.ignore)
        ),
        targets=frozenset(t.arch for t in targets),
        excludes=excluder.excludes if excluder else lambda path: False,
        reduced=frozenset(reduced),
    )


def _baseline(options: CheckOptions, index: ProjectIndex) -> Baseline | None:
    """The baseline file, if any, read as an input of the run."""
    if not options.baseline:
        return None
    baseline = Baseline.load(options.baseline)
    index.note_outside(options.baseline, baseline.source)
    return baseline


def _results(
    targets: list[Target],
    per_target: list[list[Finding]],
    by_runner: list[dict[str, bool | None] | None],
    required: list[bool],
    fix_plan: Plan,
    shown: Shown,
) -> tuple[list[TargetResult], list[Target]]:
    """The report's target results, and the targets they are of."""
    results = []
    reported: list[Target] = []
    for target, findings, ready_by_runner, asked_about in zip(
        targets, per_target, by_runner, required, strict=True
    ):
        ready = readiness(findings) if target.role is Role.TARGET else None
        unverified = [f for f in findings if f.unverified is not None]
        kept = shown.findings(target, as_asked(target, findings, asked_about, fix_plan))
        if kept is None:
            continue
        reported.append(target)
        results.append(
            TargetResult(
                arch=target.arch,
                cls=target.ref.name,
                path=shown.index.display_path(target.ref.file),
                line=target.ref.cls.line,
                implements_eagle3=target.implements_eagle3,
                eagle3_ready=ready,
                unverified=unverified if target.role is Role.TARGET else [],
                claims_eagle3=target.claims_eagle3,
                required=asked_about,
                findings=kept,
                variant=target.variant,
                registered=target.registered,
                pp_aux_relay=target.pp_aux_relay,
                role=str(target.role),
                runner=default_runner(target) if target.role is Role.TARGET else None,
                ready_by_runner=ready_by_runner,
                # An optional member of the face: engines with one runner have no such choice.
                runner_by_platform=getattr(target, "platform_runners", None) or None,
            )
        )
    return results, reported
