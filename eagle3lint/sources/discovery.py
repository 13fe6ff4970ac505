"""What the PATH arguments mean: which engine tree holds the contract, what is reported on.

A tree is what an engine wing (`eagle3lint.engines`) recognises: vLLM's `vllm/` package, or a
plugin engine's. A tree found above a PATH (the one a model file sits in, or the checkout whose
`tests/` it is) is looked for as the configuration is (`eagle3lint.trust.climb`): up to the
repository root, through folders and into trees that only the user, root or (in their own
folders) the PATH's owner could have written. A tree planted in /tmp above out-of-tree files
would otherwise become their contract, and a planted `model_executor/models/` would make every
check below it a tree "not named vllm". Such a tree is passed over without a word: the report
names the contract used (the `root` and `contract_source` of its engine block).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from eagle3lint import trust
from eagle3lint.engines import Wing, default_wing, wing_named, wings
from eagle3lint.errors import UsageError as UsageError  # re-exported for older imports
from eagle3lint.sources.walk import Excluder, python_files


@dataclass
class Workspace:
    """The trees to index and the files to report on."""

    tree: Path | None
    """The engine's package folder whose contract applies (None: the newest known contract)."""
    contract_source: str
    wing: Wing = field(default_factory=default_wing)
    """The engine whose tree it is (the default engine's newest contract without a tree)."""
    extra_roots: list[Path] = field(default_factory=list)
    """Folders of out-of-tree model files, indexed as import roots of their own."""
    files: list[Path] = field(default_factory=list)
    """Files given explicitly (or found under out-of-tree folders)."""
    only_files: bool = False
    """Report only findings located in `files` (pre-commit passes changed files)."""
    missing: list[Path] = field(default_factory=list)
    unreadable: dict[Path, str] = field(default_factory=dict)
    """Folders under a PATH that could not be listed, with why: their files were not checked."""
    contract_only: bool = False
    """The tree only supplies the contract: every file given lies outside it (out-of-tree
    model files, or a checkout's tests/), so its registered architectures are not reported."""

    @property
    def import_root(self) -> Path | None:
        return self.tree.parent if self.tree else None

    def add_files(self, found: list[Path]) -> None:
        """Files to report on; symlinks that lead nowhere (a loop, a missing target) are missing."""
        for path in found:
            (self.files if path.exists() else self.missing).append(path)


def tree_of(folder: Path, trusted: bool | None = None) -> tuple[Wing, Path] | None:
    """The wing whose tree `folder` is, with `folder`; with `trusted` (from `trust.climb`), only
    a tree made by users it trusts there."""
    for wing in wings():
        if wing.is_tree(folder) and (
            trusted is None or trust.may_use(wing.marker_entry(folder), trusted)
        ):
            return wing, folder
    return None


def _tree_above(path: Path, inside: bool) -> tuple[Wing, Path] | None:
    """The first tree at or above `path` (`inside`: the folder itself is the tree; else the
    folder holds it under the engine's package name), for the folders `trust.climb` allows."""
    for folder, trusted in trust.climb(path if path.is_dir() else path.parent, named=True):
        if inside:
            found = tree_of(folder, trusted)
        else:
            found = next((t for w in wings() if (t := tree_of(folder / w.package, trusted))), None)
        if found is not None:
            return found
    return None


def installed_tree() -> tuple[Wing, Path] | None:
    """The first engine installed (vLLM first), located without importing it."""
    for wing in wings():
        folder = wing.installed_tree()
        if folder is not None:
            return wing, folder
    return None


def _located(path: Path) -> Path:
    """`path` made absolute with its folders resolved, but not a symlinked file itself: the
    tree a model file sits in is where it is linked, not where the link leads."""
    path = Path(os.path.abspath(path))
    return path.resolve() if path.is_dir() else path.parent.resolve() / path.name


def discover(
    paths: list[Path],
    release: str | None = None,
    excluder: Excluder | None = None,
    progress: bool = False,
    respect_gitignore: bool = True,
    release_engine: str = "vllm",
) -> Workspace:
    """Interpret PATH arguments as the issue's forms; raise UsageError when none applies.
    `release` is a version of the engine named `release_engine` (`--vllm`, `--sglang`)."""
    excluder = excluder or Excluder([], [])

    def files_of(path: Path) -> list[Path]:
        found = (
            python_files(path, respect_gitignore=respect_gitignore, unreadable=workspace.unreadable)
            if path.is_dir()
            else [path]
        )
        return [f for f in found if not excluder.excludes(f)]

    released = wing_named(release_engine) if release else default_wing()
    if release and not paths:
        tree = released.fetch_release(release, progress=progress)
        return Workspace(tree, f"{released.package}=={release}", wing=released)
    if not paths:
        installed = installed_tree()
        if installed is None:
            raise UsageError(
                "no vLLM tree to check: pass a vLLM checkout or package folder, model files, or "
                "--vllm X.Y.Z to check a release from PyPI (no installed vllm was found)."
            )
        wing, tree = installed
        return Workspace(tree, f"installed {wing.label}", wing=wing)

    workspace = Workspace(None, "")
    trees: set[tuple[Wing, Path]] = set()
    inside: set[Path] = set()
    """Trees a path points into (not only the checkout of files outside them)."""
    for raw in paths:
        path = raw.expanduser()
        if not os.path.exists(path):  # False, not an exception, when the path cannot be seen
            workspace.missing.append(raw)
            continue
        path = _located(path)
        found = None
        if path.is_dir():
            found = tree_of(path) or next(
                (t for w in wings() if (t := tree_of(path / w.package))), None
            )
        if found is not None:
            trees.add(found)
            inside.add(found[1])
            continue
        found = _tree_above(path, inside=True)
        if found is not None:
            trees.add(found)
            inside.add(found[1])
            workspace.only_files = True
            workspace.add_files(files_of(path))
            continue
        # Out-of-tree model code: its own import root, the contract from elsewhere (from the
        # checkout it sits in, when it is one's tests/ or examples/).
        checkout = _tree_above(path, inside=False)
        if checkout is not None:
            trees.add(checkout)
        root = path if path.is_dir() else path.parent
        if root not in workspace.extra_roots:
            workspace.extra_roots.append(root)
        workspace.add_files(files_of(path))
    if len(trees) > 1:
        raise UsageError(
            "the paths belong to several vLLM trees ("
            + ", ".join(sorted(str(t) for _, t in trees))
            + "): check one tree at a time."
        )
    if trees:
        wing, tree = trees.pop()
        workspace.tree, workspace.wing = tree, wing
        if tree.name != wing.package:
            raise UsageError(
                f"{tree} holds a {wing.label} tree but is not named {wing.package}: "
                f"{wing.label}'s modules import each other as {wing.package}.…, so nothing in it "
                f"would resolve. Check a copy or a link named {wing.package} (or the folder "
                "holding it)."
            )
        workspace.contract_source = "tree"
        workspace.only_files = workspace.only_files or bool(workspace.extra_roots)
        workspace.contract_only = tree not in inside
    elif workspace.extra_roots:
        if release:
            workspace.wing = released
            workspace.tree = released.fetch_release(release, progress=progress)
            workspace.contract_source = f"{released.package}=={release}"
        elif (installed := installed_tree()) is not None:
            workspace.wing, workspace.tree = installed
            workspace.contract_source = f"installed {workspace.wing.label}"
        else:
            workspace.contract_source = "newest known"
        # The tree only supplies the contract: report on the given files, not on all of vLLM.
        workspace.only_files = True
        if not (workspace.files or workspace.missing or workspace.unreadable):
            raise UsageError(
                f"{', '.join(str(p) for p in paths)}: no vLLM tree (a folder holding "
                "model_executor/models/) and no Python model files were found there."
            )
    elif not workspace.missing and not workspace.unreadable:
        raise UsageError("nothing to check")
    return workspace
