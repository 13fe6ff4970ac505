"""One check run: discover sources, index them, read the contract, run the rules, report."""

from __future__ import annotations

import contextlib
import difflib
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from eagle3lint.baseline import Baseline
from eagle3lint.codes import NOT_A_TARGET, ROLES
from eagle3lint.contract.known import newest_contract
from eagle3lint.contract.model import Contract
from eagle3lint.contract.reader import read_contract
from eagle3lint.findings import Finding, InputError, Severity
from eagle3lint.fixability import marked, plan_for_check
from eagle3lint.hf_config import read_config_json, text_model_type
from eagle3lint.index.cache import SummaryCache, default_cache_dir
from eagle3lint.index.libraries import find_transformers
from eagle3lint.index.project import ParsesAhead, ProjectIndex
from eagle3lint.plans import Chain, Plan
from eagle3lint.report.locations import location_key
from eagle3lint.report.model import Report, TargetResult
from eagle3lint.rule import Rule, RuleContext, finding_problem, load_plugins, selected
from eagle3lint.sandbox import DEFAULT_RULE_TIMEOUT, RuleTimeout, plugin_call
from eagle3lint.sources.discovery import UsageError, Workspace, discover
from eagle3lint.sources.files import UnreadableSource
from eagle3lint.sources.walk import Excluder
from eagle3lint.suppressions import apply_suppressions
from eagle3lint.targets import (
    MODELS_PACKAGE,
    REGISTRY,
    RegistryEntry,
    Role,
    Target,
    build_targets,
    file_targets,
    registered_architectures,
)


@dataclass
class CheckOptions:
    paths: list[Path] = field(default_factory=list)
    vllm_version: str | None = None
    archs: list[str] = field(default_factory=list)
    require: list[str] = field(default_factory=list)
    """Architectures (or class names) that must be EAGLE-3 ready whether or not their code
    claims support; `*` asks about every one (what a support matrix needs)."""
    hf_config: Path | None = None
    model_type: str | None = None
    select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    exclude_root: Path | None = None
    """The folder of the configuration that set `exclude` (its globs are relative to it)."""
    respect_gitignore: bool = True
    baseline: Path | None = None
    """Findings recorded there are not reported (see `baseline`)."""
    rule_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    rule_timeout: float = DEFAULT_RULE_TIMEOUT
    """Seconds one rule may run on one target before it is stopped (EAG903)."""
    jobs: int | None = None
    use_cache: bool = True
    progress: bool = False
    on_file: Callable[[], None] | None = None
    """Called once per file analysed (the terminal's progress line)."""
    pairing: Any = None
    """The draft `eagle3lint pair` checks against the target (see `RuleContext.pairing`)."""
    plan_fixes: bool = True
    """Plan the repairs (what `[*]` promises). Off for reports that show verdicts alone (the
    matrix): their findings are then none fixable, which costs nothing to compute."""


@dataclass
class CheckRun:
    """Everything a check produced; `fix` reuses the index and the targets."""

    report: Report
    index: ProjectIndex
    workspace: Workspace
    targets: list[Target]
    plan: Plan = field(default_factory=Plan)
    """What `fix` writes: the repair plan of every target shown with repairs."""


def _index_for(
    workspace: Workspace, options: CheckOptions, ahead: ParsesAhead | None
) -> ProjectIndex:
    roots = [*workspace.extra_roots]
    if workspace.import_root is not None:
        roots.append(workspace.import_root)
    cache = SummaryCache(default_cache_dir()) if options.use_cache else None
    transformers, looked = find_transformers(workspace.import_root)
    libraries = [transformers] if transformers is not None else []
    index = ProjectIndex(roots, cache=cache, jobs=options.jobs, ahead=ahead, libraries=libraries)
    for path in looked:
        index.note_absent(path)
    if transformers is not None:
        # The package's marker is an input: removing or upgrading transformers changes what
        # the config classes say, so the whole-run cache must not replay the old answer.
        with contextlib.suppress(UnreadableSource):
            index.read_outside(transformers.folder / transformers.name / "__init__.py")
    index.on_load = options.on_file
    if workspace.extra_roots:
        index.relative_home = MODELS_PACKAGE
    return index


def _choose_entries(entries: list[RegistryEntry], archs: list[str]) -> list[RegistryEntry]:
    if not archs:
        return entries
    by_arch = {e.arch: e for e in entries}
    unknown = [a for a in archs if a not in by_arch]
    if unknown:
        hints = []
        for arch in unknown:
            close = difflib.get_close_matches(arch, by_arch, n=3, cutoff=0.6)
            hints.append(f"{arch!r}" + (f" (did you mean {', '.join(close)}?)" if close else ""))
        raise UsageError(f"unknown architecture {', '.join(hints)}")
    return [by_arch[a] for a in dict.fromkeys(archs)]


def discover_for(options: CheckOptions) -> Workspace:
    """What the options' paths mean (see `sources.discovery`)."""
    return discover(
        options.paths,
        options.vllm_version,
        excluder_for(options),
        options.progress,
        options.respect_gitignore,
    )


def excluder_for(options: CheckOptions) -> Excluder:
    """`exclude` relative to its configuration's folder and to each folder given as PATH."""
    bases = [p for p in options.paths if os.path.isdir(p)]
    if options.exclude_root is not None:
        bases.append(options.exclude_root)
    return Excluder(options.exclude, bases)


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
    errors = [_missing_path(p) for p in workspace.missing]
    errors += [InputError(str(p), why, code="EAG902") for p, why in workspace.unreadable.items()]
    contract = _contract(index, workspace, errors)
    hf_config = None
    model_type = options.model_type
    if options.hf_config is not None:
        hf_config, file, text = read_config_json(options.hf_config, "--hf-config")
        index.note_outside(file, text.encode("utf-8"))
        model_type = model_type or text_model_type(hf_config) or None
    if contract is None:
        contract = unread_contract(workspace)
        targets = []
    else:
        targets = _targets(index, contract, workspace, options, errors)

    ctx = RuleContext(
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
    rule_objects = _instantiate(rules, options, errors)
    report_paths = {str(p.resolve()) for p in workspace.files} if workspace.only_files else None
    # Suppressions apply before the per-file filter: a comment is used if any target needed it.
    per_target = apply_suppressions(
        [_judge(rule_objects, target, ctx, options) for target in targets],
        None if options.archs else lambda code: selected(code, options.select, options.ignore),
        index.source_bytes,
    )
    asked = Intent(options.archs, ctx.hf_architectures, options.require)
    excluder = excluder_for(options)
    required = [asked.about(t) for t in targets]
    # Fix repairs the targets whose findings are shown with their repairs: the ones asked
    # about or claiming EAGLE-3 support (the others become one info note).
    fix_plan = Plan()
    if options.plan_fixes:
        fix_plan = plan_for_check(
            [
                Chain(label(t), findings)
                for t, findings, asked_about in zip(targets, per_target, required, strict=True)
                if t.role is Role.TARGET and (asked_about or t.claims_eagle3)
            ],
            workspace,
            index,
            options.vllm_version,
            excluder.excludes if excluder else None,
        )
    baseline = None
    if options.baseline:
        baseline = Baseline.load(options.baseline)
        index.note_outside(options.baseline, baseline.source)
    baselined: set[tuple[str, ...]] = set()
    results = []
    reported: list[Target] = []
    for target, findings, asked_about in zip(targets, per_target, required, strict=True):
        ready = readiness(findings) if target.role is Role.TARGET else None
        unverified = [f for f in findings if f.unverified is not None]
        if asked_about:
            findings = demanded(findings)
        if not asked_about and not target.claims_eagle3:
            findings = unclaimed_findings(target, findings)
        elif target.role is Role.TARGET:
            findings = marked(findings, fix_plan.applied, fix_plan.refused.get(label(target)))
        else:
            findings = marked(findings, set(), [f"fix never makes a {target.role} model a target"])
        if baseline is not None:
            accepted = [f for f in findings if baseline.holds(target.arch, f)]
            baselined.update(location_key(f) for f in accepted)
            findings = [f for f in findings if f not in accepted]
        if excluder:
            # Excluded files are not checked in any path form: not their targets, not the
            # findings located in them.
            if excluder.excludes(index.display_path(target.ref.file)):
                continue
            findings = [f for f in findings if not excluder.excludes(f.path)]
        if report_paths is not None:
            # The files given decide a target defined in them: all of its findings, wherever
            # located; of any other target, only what is located in those files.
            defined_here = _resolved(index.display_path(target.ref.file)) in report_paths
            if not defined_here:
                findings = [f for f in findings if _resolved(f.path) in report_paths]
                if not findings:
                    continue
        reported.append(target)
        results.append(
            TargetResult(
                arch=target.arch,
                cls=target.ref.name,
                path=index.display_path(target.ref.file),
                line=target.ref.cls.line,
                implements_eagle3=target.implements_eagle3,
                eagle3_ready=ready,
                unverified=unverified if target.role is Role.TARGET else [],
                claims_eagle3=target.claims_eagle3,
                required=asked_about,
                findings=findings,
                variant=target.variant,
                registered=target.registered,
                pp_aux_relay=target.pp_aux_relay,
                role=str(target.role),
            )
        )
    errors += (
        index.errors
        if report_paths is None
        else _errors_deciding(index, report_paths, reported, index.errors)
    )
    folders = [p for p in options.paths if os.path.isdir(p)]
    if not targets and not errors and workspace.extra_roots and folders:
        errors.append(
            InputError(
                ", ".join(str(p) for p in folders),
                "no vLLM tree (a folder holding model_executor/models/) and no model classes "
                "(a class named *ForCausalLM, *ForConditionalGeneration or *LMHeadModel, or one "
                "using vLLM's model interfaces) were found here",
                code="EAG902",
            )
        )
    report = Report(
        contract=contract,
        targets=results,
        errors=_unique(errors),
        files_analysed=len(index.loaded()),
        focus=sorted(report_paths) if report_paths is not None else None,
        baselined=len(baselined),
    )
    return CheckRun(report, index, workspace, targets, fix_plan)


@dataclass(frozen=True)
class Intent:
    """Which targets the user asked about: `--arch`, the `architectures` of `--hf-config`,
    `--require` / `require = [...]` (where `*` means all of them)."""

    archs: list[str]
    hf_architectures: tuple[str, ...]
    require: list[str]

    def about(self, target: Target) -> bool:
        names = {*self.archs, *self.hf_architectures, *self.require}
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


def _contract(
    index: ProjectIndex, workspace: Workspace, errors: list[InputError]
) -> Contract | None:
    """The tree's contract; the newest known one when there is no tree. None when a file the
    contract depends on cannot be read: another release's contract would give wrong answers
    that look right, so no target is checked."""
    if workspace.vllm_dir is None:
        return newest_contract()
    try:
        return read_contract(index, workspace.vllm_dir, workspace.contract_source)
    except UnreadableSource as exc:
        message = f"{exc}: the tree's EAGLE-3 contract could not be read, so no target was checked"
        where = str(exc.path or workspace.vllm_dir)
        errors.append(InputError(where, message, code=exc.code))
        # The index's own error for that file says less; the file is named once.
        index.errors = [e for e in index.errors if e.path != where]
        return None


def unread_contract(workspace: Workspace) -> Contract:
    """What the report shows as the contract of a tree whose contract could not be read."""
    root = str(workspace.vllm_dir or "")
    return Contract(None, workspace.contract_source, root, None, None, readable=False)


def _targets(
    index: ProjectIndex,
    contract: Contract,
    workspace: Workspace,
    options: CheckOptions,
    errors: list[InputError],
) -> list[Target]:
    """The registered architectures selected, plus model classes of the files given."""
    file_modules = [m for f in workspace.files if (m := index.module_of(f)) is not None]
    # Out-of-tree model files are checked against a contract from elsewhere: the registered
    # architectures of that vLLM are not what the user asked about, unless named with --arch.
    contract_only = workspace.contract_only or (
        workspace.contract_source != "tree" and bool(workspace.extra_roots)
    )
    wants_registry = workspace.vllm_dir is not None and (not contract_only or bool(options.archs))
    entries = registered_architectures(index) if wants_registry else []
    if wants_registry and not entries:
        # An analysis of nothing must not pass as a clean one.
        errors.append(
            InputError(
                str(index.source_file(REGISTRY).path if index.source_file(REGISTRY) else REGISTRY),
                "no registered architecture was found in this tree's model registry",
                code="EAG902",
            )
        )
    chosen = _choose_entries(entries, options.archs) if entries or options.archs else []
    index.preload(file_modules)
    index.preload_closure(
        [
            *((e.module, e.cls) for e in chosen),
            *((m, c) for m in file_modules if (f := index.summary(m)) for c in f.classes),
        ]
    )
    unresolved: list[RegistryEntry] = []
    targets = build_targets(index, contract, chosen, unresolved)
    focus = {str(f.resolve()) for f in workspace.files}
    for entry in unresolved:
        if index.error_for(entry.module) is not None:
            continue  # the file's own error (unreadable, syntax) says why
        source = index.source_file(entry.module)
        deciding = {str(s.path.resolve()) for s in (source, index.source_file(REGISTRY)) if s}
        if workspace.only_files and not deciding & focus:
            continue  # a broken entry elsewhere in the registry is not these files' error
        where = (
            "is not in this tree"
            if index.source_file(entry.module) is None
            else "has no such class"
        )
        message = f"{entry.arch}: the registry points at {entry.module}.{entry.cls}, which {where}"
        errors.append(InputError(entry.module, message, code="EAG903"))
    if not options.archs:
        # Out-of-tree files have no registry of their own, so their model classes are found
        # by shape. Inside a vLLM tree an unregistered class must also be an nn.Module (a
        # model not registered yet): a config hook named DeepseekV32ForCausalLM is not.
        known = {t.ref.qualname for t in targets}
        targets += [
            t
            for t in file_targets(index, contract, file_modules, known)
            if not _in_tree(index, t.ref.file.module, workspace) or t.is_module
        ]
    if workspace.only_files and file_modules:
        # Pre-commit passes changed files: only targets built from them can have findings there.
        touched = set(file_modules)
        targets = [t for t in targets if t.modules() & touched]
    return targets


def _instantiate(
    rules: Iterable[type[Rule]] | None, options: CheckOptions, errors: list[InputError]
) -> list[Rule]:
    """The rules of this run; a plugin that fails to load or to start is an error, not a stop."""
    if rules is None:
        rules, broken = load_plugins()
        errors += [InputError("<plugins>", message, code="EAG903") for message in broken]
    objects = []
    for cls in rules:
        try:
            with plugin_call(options.rule_timeout):
                objects.append(cls(options.rule_options.get(cls.slug)))
        except (Exception, SystemExit, RuleTimeout) as exc:  # third-party constructor
            message = f"rule {cls.slug} failed to start: {exc!r}"
            errors.append(InputError(f"<plugin {cls.plugin}>", message, code="EAG903"))
    return objects


def _judge(
    rules: list[Rule], target: Target, ctx: RuleContext, options: CheckOptions
) -> list[Finding]:
    """Target rules for a target; for a draft or pooling model, only a note when asked for."""
    if target.role is Role.TARGET:
        return _run_rules(rules, target, ctx, options)
    if target.arch not in options.archs or not selected(
        NOT_A_TARGET.code, options.select, options.ignore
    ):
        return []
    why = (
        "the registry lists it with the speculative-decoding models, so vLLM loads it only as "
        "a drafter; `eagle3lint pair` checks it against a target"
        if target.role is Role.DRAFT
        else "its class is a pooling model (`is_pooling_model`), which vLLM runs with the "
        "pooling runner, and that runner takes no drafter"
    )
    message = f"{target.arch} is a {target.role} model; no EAGLE-3 target verdict applies: {why}."
    finding = Finding(
        code=NOT_A_TARGET.code,
        rule=ROLES,
        severity=NOT_A_TARGET.severity,
        message=message,
        path=ctx.index.display_path(target.ref.file),
        line=target.ref.cls.line,
    )
    return [finding]


def _run_rules(
    rules: list[Rule], target: Target, ctx: RuleContext, options: CheckOptions
) -> list[Finding]:
    findings: list[Finding] = []
    for rule in rules:
        findings += [
            f
            for f in _run_rule(rule, target, ctx, options)
            if selected(f.code, options.select, options.ignore)
        ]
    unique: dict[tuple[str, str, int, str], Finding] = {}
    for finding in findings:
        unique.setdefault((finding.code, finding.path, finding.line, finding.message), finding)
    return sorted(unique.values(), key=lambda f: (f.code, f.path, f.line))


def _run_rule(rule: Rule, target: Target, ctx: RuleContext, options: CheckOptions) -> list[Finding]:
    """One rule's findings for one target, or a single EAG903 finding saying why there are
    none: the rule raised, exited, ran out of time or yielded something that is not a finding
    of its own codes (a plugin must not be able to crash the run or forge a result)."""
    produced: list[Finding] = []
    try:
        with plugin_call(options.rule_timeout):
            for finding in rule.check(target, ctx):
                problem = finding_problem(finding, rule)
                if problem is not None:
                    raise _InvalidFinding(problem)
                produced.append(finding)
    except _InvalidFinding as exc:
        why = f"rule {rule.slug} {exc} for {target.arch}"
    except RuleTimeout as exc:
        why = f"rule {rule.slug} {exc} on {target.arch} (see rule-timeout)"
    except (Exception, SystemExit) as exc:
        why = f"internal error in rule {rule.slug} for {target.arch}: {type(exc).__name__}: {exc}"
    else:
        return produced
    return [
        Finding(
            code="EAG903",
            rule=rule.slug,
            severity=Severity.ERROR,
            message=why,
            path=ctx.index.display_path(target.ref.file),
            line=target.ref.cls.line,
        )
    ]


class _InvalidFinding(Exception):
    """A rule yielded something that is not a well-formed finding of its codes."""


def _in_tree(index: ProjectIndex, module: str, workspace: Workspace) -> bool:
    """Whether a module's file lies in the vLLM tree whose registry is read."""
    source = index.source_file(module)
    tree = workspace.vllm_dir if workspace.contract_source == "tree" else None
    return (
        tree is not None
        and source is not None
        and source.path.resolve().is_relative_to(tree.resolve())
    )


def _resolved(path: str) -> str:
    return str(Path(path).resolve())


def _errors_deciding(
    index: ProjectIndex, focus: set[str], targets: list[Target], errors: list[InputError]
) -> list[InputError]:
    """With file arguments, the input errors that matter to them: in those files, or in a file a
    reported target's verdict depends on. A parse error elsewhere in the tree is not this
    commit's error."""
    modules = {m for target in targets for m in target.depends_on()}
    needed = set(focus)
    for module in modules:
        source = index.source_file(module)
        if source is not None:
            needed.add(_resolved(str(source.path)))
    return [e for e in errors if _resolved(e.path) in needed]


def _missing_path(path: Path) -> InputError:
    """A PATH argument that is not there, in the system's words (a symlink loop, no access)."""
    reason = "no such file or directory"
    try:
        path.stat()
    except OSError as exc:
        if exc.strerror:
            reason = exc.strerror[0].lower() + exc.strerror[1:]
    return InputError(str(path), reason, code="EAG902")


def _unique(errors: list[InputError]) -> list[InputError]:
    return list({(e.path, e.message): e for e in errors}.values())
