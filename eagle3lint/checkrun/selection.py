"""What a run checks: the tree's contract (or why it has none), and the targets the options
select, registered architectures and model classes of the files given."""

from __future__ import annotations

import difflib
from collections import Counter

from eagle3lint.checkrun.dependencies import Dependencies, target_key
from eagle3lint.engines import Contract, Target, Wing
from eagle3lint.engines import Entry as RegistryEntry
from eagle3lint.errors import UsageError
from eagle3lint.findings import InputError
from eagle3lint.index.project import ProjectIndex
from eagle3lint.sources.discovery import Workspace
from eagle3lint.sources.files import UnreadableSource


def tree_contract(
    index: ProjectIndex, workspace: Workspace, errors: list[InputError]
) -> Contract | None:
    """The tree's contract; the newest known one when there is no tree. None when a file the
    contract depends on cannot be read: another release's contract would give wrong answers
    that look right, so no target is checked."""
    if workspace.tree is None:
        return workspace.wing.newest_contract()
    try:
        return workspace.wing.read_contract(index, workspace.tree, workspace.contract_source)
    except UnreadableSource as exc:
        message = f"{exc}: the tree's EAGLE-3 contract could not be read, so no target was checked"
        where = str(exc.path or workspace.tree)
        errors.append(InputError(where, message, code=exc.code))
        # The index's own error for that file says less; the file is named once.
        index.errors = [e for e in index.errors if e.path != where]
        return None


def unread_contract(workspace: Workspace) -> Contract:
    """What the report shows as the contract of a tree whose contract could not be read."""
    return workspace.wing.unread_contract(workspace.contract_source, str(workspace.tree or ""))


def select_targets(
    index: ProjectIndex,
    contract: Contract,
    workspace: Workspace,
    archs: list[str],
    errors: list[InputError],
    deps: Dependencies,
) -> list[Target]:
    """The registered architectures selected, plus model classes of the files given; of the
    registered ones, only those `deps` wants judged, each built inside its own recording."""
    file_modules = [m for f in workspace.files if (m := index.module_of(f)) is not None]
    # Out-of-tree model files are checked against a contract from elsewhere: the registered
    # architectures of that vLLM are not what the user asked about, unless named with --arch.
    contract_only = workspace.contract_only or (
        workspace.contract_source != "tree" and bool(workspace.extra_roots)
    )
    wants_registry = workspace.tree is not None and (not contract_only or bool(archs))
    wing = workspace.wing
    with index.recording() as shared:
        entries = wing.registry(index) if wants_registry else []
    deps.shared |= shared
    if wants_registry and not entries:
        # An analysis of nothing must not pass as a clean one.
        errors.append(
            InputError(
                str(
                    registry.path
                    if (registry := index.source_file(wing.registry_module))
                    else wing.registry_module
                ),
                "no registered architecture was found in this tree's model registry",
                code="EAG902",
            )
        )
    chosen = _choose_entries(entries, archs) if entries or archs else []
    # An architecture the registry lists twice is judged: its kept targets are of both.
    listed = Counter(e.arch for e in chosen)
    wanted = {e.arch for e in chosen if listed[e.arch] > 1 or deps.wanted(e.arch)}
    index.preload(file_modules)
    index.preload_closure(
        [
            *((e.module, e.cls) for e in chosen if e.arch in wanted),
            *((m, c) for m in file_modules if (f := index.summary(m)) for c in f.classes),
        ]
    )
    unresolved: list[RegistryEntry] = []
    targets: list[Target] = []
    for entry in chosen:
        if entry.arch not in wanted:
            targets += deps.reused.get(entry.arch, [])
            continue
        with index.recording() as reads:
            built = wing.targets(index, contract, [entry], unresolved)
        with index.recording() as reached:
            index.preload_closure([(entry.module, entry.cls)], waves=False)
        for target in built:
            deps.reads.setdefault(target_key(target), set()).update(reads)
            deps.reached.setdefault(target_key(target), set()).update(reached)
        targets += built
    focus = {str(f.resolve()) for f in workspace.files}
    for entry in unresolved:
        if index.error_for(entry.module) is not None:
            continue  # the file's own error (unreadable, syntax) says why
        source = index.source_file(entry.module)
        deciding = {
            str(s.path.resolve()) for s in (source, index.source_file(wing.registry_module)) if s
        }
        if workspace.only_files and not deciding & focus:
            continue  # a broken entry elsewhere in the registry is not these files' error
        where = (
            "is not in this tree"
            if index.source_file(entry.module) is None
            else "has no such class"
        )
        message = f"{entry.arch}: the registry points at {entry.module}.{entry.cls}, which {where}"
        errors.append(InputError(entry.module, message, code="EAG903"))
    if not archs:
        # Out-of-tree files have no registry of their own, so their model classes are found
        # by shape. Inside the tree whose registry was read, vLLM loads what that registry
        # names, so a file the registered targets are built from (a base such as
        # Qwen3_5ForCausalLMBase, a ROCm variant, a decoder) is judged through them, as in the
        # whole-tree run. A class is a target of its own only in a models-package file no
        # registered target reaches, a model not registered yet, and only as an nn.Module (a
        # config hook named DeepseekV32ForCausalLM is not one).
        known = {t.ref.qualname for t in targets}
        reached = {m for t in targets for m in t.modules()} if workspace.only_files else set()
        with index.recording() as reads:
            found = [
                t
                for t in wing.file_targets(index, contract, file_modules, known)
                if not _in_tree(index, t.ref.file.module, workspace)
                or (t.is_module and _not_registered_yet(t.ref.file.module, wing, reached))
            ]
        for target in found:
            deps.reads.setdefault(target_key(target), set()).update(reads)
        targets += found
    return targets


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


def _not_registered_yet(module: str, wing: Wing, reached: set[str]) -> bool:
    """A module of the tree's models package that no registered target is built from."""
    return module.startswith(f"{wing.models_package}.") and module not in reached


def _in_tree(index: ProjectIndex, module: str, workspace: Workspace) -> bool:
    """Whether a module's file lies in the vLLM tree whose registry is read."""
    source = index.source_file(module)
    tree = workspace.tree if workspace.contract_source == "tree" else None
    return (
        tree is not None
        and source is not None
        and source.path.resolve().is_relative_to(tree.resolve())
    )
