"""One check run: discover sources, index them, read the contract, run the rules, report."""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eagle3lint.contract.known import newest_contract
from eagle3lint.contract.model import Contract
from eagle3lint.contract.reader import read_contract
from eagle3lint.findings import Finding, InputError, Severity
from eagle3lint.index.cache import SummaryCache, default_cache_dir
from eagle3lint.index.project import ProjectIndex
from eagle3lint.report.model import Report, TargetResult
from eagle3lint.rule import Rule, RuleContext, finding_problem, load_plugins, selected
from eagle3lint.sandbox import DEFAULT_RULE_TIMEOUT, RuleTimeout, plugin_call
from eagle3lint.sources.discovery import UsageError, Workspace, discover
from eagle3lint.sources.files import (
    MAX_CONFIG_BYTES,
    SourceNotFound,
    UnreadableSource,
    read_regular,
)
from eagle3lint.suppressions import apply_suppressions
from eagle3lint.targets import (
    REGISTRY,
    RegistryEntry,
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
    hf_config: Path | None = None
    model_type: str | None = None
    select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
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


@dataclass
class CheckRun:
    """Everything a check produced; `fix` reuses the index and the targets."""

    report: Report
    index: ProjectIndex
    workspace: Workspace
    targets: list[Target]


def read_config_json(path: Path, option: str) -> tuple[dict[str, Any], Path, str]:
    """A config.json (or the folder holding one): its object, its file and its text.

    `option` names the command-line option in messages (`--hf-config`, `--draft`)."""
    file = path / "config.json" if path.is_dir() else path
    try:
        text = read_regular(file, MAX_CONFIG_BYTES, "config").decode("utf-8")
        data = json.loads(text)
    except SourceNotFound as exc:
        raise UsageError(f"{option}: {file} does not exist") from exc
    except UnreadableSource as exc:
        raise UsageError(f"{option}: {file} {exc}") from exc
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(f"{option}: {file} is not a readable JSON file ({exc})") from exc
    except RecursionError as exc:
        raise UsageError(f"{option}: {file} nests too deeply to be a model config") from exc
    if not isinstance(data, dict):
        raise UsageError(f"{option}: {file} does not hold a JSON object")
    return data, file, text


def text_config(data: dict[str, Any]) -> dict[str, Any]:
    """transformers' get_text_config(): the text sub-config of a multimodal config."""
    for key in ("text_config", "language_config", "llm_config", "thinker_config"):
        sub = data.get(key)
        if isinstance(sub, dict):
            inner = sub.get("text_config", sub) if key == "thinker_config" else sub
            return inner if isinstance(inner, dict) else sub
    return data


def load_hf_config(path: Path) -> tuple[dict[str, Any], str]:
    """A config.json (or the folder holding one) and the text model_type vLLM gates on."""
    data, _, _ = read_config_json(path, "--hf-config")
    model_type = text_config(data).get("model_type") or data.get("model_type")
    return data, str(model_type) if model_type else ""


def _index_for(workspace: Workspace, options: CheckOptions) -> ProjectIndex:
    roots = [*workspace.extra_roots]
    if workspace.import_root is not None:
        roots.append(workspace.import_root)
    cache = SummaryCache(default_cache_dir()) if options.use_cache else None
    index = ProjectIndex(roots, cache=cache, jobs=options.jobs)
    index.on_load = options.on_file
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
    return discover(options.paths, options.vllm_version, options.exclude, options.progress)


def run_check(
    options: CheckOptions,
    rules: Iterable[type[Rule]] | None = None,
    workspace: Workspace | None = None,
) -> CheckRun:
    """Check the targets the options select; `workspace` when the caller discovered it."""
    workspace = workspace or discover_for(options)
    index = _index_for(workspace, options)
    errors = [_missing_path(p) for p in workspace.missing]
    errors += [InputError(str(p), why, code="EAG902") for p, why in workspace.unreadable.items()]
    contract = _contract(index, workspace, errors)
    hf_config = None
    model_type = options.model_type
    if options.hf_config is not None:
        hf_config, text_type = load_hf_config(options.hf_config)
        model_type = model_type or text_type or None
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
        [_run_rules(rule_objects, target, ctx, options) for target in targets],
        None if options.archs else lambda code: selected(code, options.select, options.ignore),
    )
    results = []
    for target, findings in zip(targets, per_target, strict=True):
        if report_paths is not None:
            findings = [f for f in findings if str(Path(f.path).resolve()) in report_paths]
            in_files = str(Path(index.display_path(target.ref.file)).resolve()) in report_paths
            if not findings and not in_files:
                continue
        results.append(
            TargetResult(
                arch=target.arch,
                cls=target.ref.name,
                path=index.display_path(target.ref.file),
                line=target.ref.cls.line,
                implements_eagle3=target.implements_eagle3,
                findings=findings,
                variant=target.variant,
                registered=target.registered,
                pp_aux_relay=target.pp_aux_relay,
            )
        )
    errors += index.errors
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
    )
    return CheckRun(report, index, workspace, targets)


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
    contract_only = workspace.contract_source != "tree" and bool(workspace.extra_roots)
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
    for entry in unresolved:
        if index.error_for(entry.module) is not None:
            continue  # the file's own error (unreadable, syntax) says why
        where = (
            "is not in this tree"
            if index.source_file(entry.module) is None
            else "has no such class"
        )
        message = f"{entry.arch}: the registry points at {entry.module}.{entry.cls}, which {where}"
        errors.append(InputError(entry.module, message, code="EAG903"))
    if not options.archs:
        known = {t.ref.qualname for t in targets}
        targets += file_targets(index, contract, file_modules, known)
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
