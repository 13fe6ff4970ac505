"""What the PATH arguments mean: which vLLM tree holds the contract, what is reported on.

A tree found above a PATH (the one a model file sits in, or the checkout whose `tests/` it is)
is looked for as the configuration is (`eagle3lint.trust.climb`): up to the repository root,
through folders and into trees that only the user, root or (in their own folders) the PATH's
owner could have written. A `vllm/` planted in /tmp above out-of-tree files would otherwise
become their contract, and a planted `model_executor/models/` would make every check below it
a tree "not named vllm". Such a tree is passed over without a word: the report names the
contract used (`vllm.root`, `vllm.contract_source`).
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass, field
from pathlib import Path

from eagle3lint import trust
from eagle3lint.errors import UsageError as UsageError  # re-exported for older imports
from eagle3lint.sources.walk import Excluder, python_files


@dataclass
class Workspace:
    """The trees to index and the files to report on."""

    vllm_dir: Path | None
    """The `vllm` package folder whose contract applies (None: the newest known contract)."""
    contract_source: str
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
        return self.vllm_dir.parent if self.vllm_dir else None

    def add_files(self, found: list[Path]) -> None:
        """Files to report on; symlinks that lead nowhere (a loop, a missing target) are missing."""
        for path in found:
            (self.files if path.exists() else self.missing).append(path)


def is_vllm_package(folder: Path) -> bool:
    return (folder / "model_executor" / "models").is_dir()


def enclosing_vllm(path: Path) -> Path | None:
    """The vLLM package folder that contains `path`, walking up."""
    return _tree_above(path, ".")


def _tree_above(path: Path, name: str) -> Path | None:
    """The first `FOLDER/name` that is a vLLM package, for the folders at and above `path`
    that `trust.climb` allows, and made by users it trusts there (a folder another user could
    write, /tmp, may hold one planted)."""
    for folder, trusted in trust.climb(path if path.is_dir() else path.parent, named=True):
        tree = folder / name  # "." is the folder itself
        if is_vllm_package(tree) and trust.may_use(tree / "model_executor", trusted):
            return tree
    return None


def installed_vllm() -> Path | None:
    """The installed vLLM package folder, located without importing it."""
    try:
        spec = importlib.util.find_spec("vllm")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations)))
    return folder if is_vllm_package(folder) else None


def _located(path: Path) -> Path:
    """`path` made absolute with its folders resolved, but not a symlinked file itself: the
    tree a model file sits in is where it is linked, not where the link leads."""
    path = Path(os.path.abspath(path))
    return path.resolve() if path.is_dir() else path.parent.resolve() / path.name


def enclosing_checkout(path: Path) -> Path | None:
    """The `vllm` package of a checkout that holds `path` outside that package (its `tests/`,
    `benchmarks/`, `examples/`): such files are checked against the checkout's contract."""
    return _tree_above(path, "vllm")


def discover(
    paths: list[Path],
    vllm_version: str | None = None,
    excluder: Excluder | None = None,
    progress: bool = False,
    respect_gitignore: bool = True,
) -> Workspace:
    """Interpret PATH arguments as the issue's forms; raise UsageError when none applies."""
    excluder = excluder or Excluder([], [])

    def files_of(path: Path) -> list[Path]:
        found = (
            python_files(path, respect_gitignore=respect_gitignore, unreadable=workspace.unreadable)
            if path.is_dir()
            else [path]
        )
        return [f for f in found if not excluder.excludes(f)]

    if vllm_version and not paths:
        from eagle3lint.sources.download import fetch_release

        return Workspace(fetch_release(vllm_version, progress=progress), f"vllm=={vllm_version}")
    if not paths:
        found = installed_vllm()
        if found is None:
            raise UsageError(
                "no vLLM tree to check: pass a vLLM checkout or package folder, model files, or "
                "--vllm X.Y.Z to check a release from PyPI (no installed vllm was found)."
            )
        return Workspace(found, "installed vLLM")

    workspace = Workspace(None, "")
    trees: set[Path] = set()
    inside: set[Path] = set()
    """Trees a path points into (not only the checkout of files outside them)."""
    for raw in paths:
        path = raw.expanduser()
        if not os.path.exists(path):  # False, not an exception, when the path cannot be seen
            workspace.missing.append(raw)
            continue
        path = _located(path)
        if path.is_dir() and is_vllm_package(path):
            trees.add(path)
            inside.add(path)
            continue
        if path.is_dir() and is_vllm_package(path / "vllm"):
            trees.add(path / "vllm")
            inside.add(path / "vllm")
            continue
        tree = enclosing_vllm(path)
        if tree is not None:
            trees.add(tree)
            inside.add(tree)
            workspace.only_files = True
            workspace.add_files(files_of(path))
            continue
        # Out-of-tree model code: its own import root, the contract from elsewhere (from the
        # checkout it sits in, when it is one's tests/ or examples/).
        checkout = enclosing_checkout(path)
        if checkout is not None:
            trees.add(checkout)
        root = path if path.is_dir() else path.parent
        if root not in workspace.extra_roots:
            workspace.extra_roots.append(root)
        workspace.add_files(files_of(path))
    if len(trees) > 1:
        raise UsageError(
            "the paths belong to several vLLM trees ("
            + ", ".join(sorted(str(t) for t in trees))
            + "): check one tree at a time."
        )
    if trees:
        workspace.vllm_dir = trees.pop()
        if workspace.vllm_dir.name != "vllm":
            raise UsageError(
                f"{workspace.vllm_dir} holds a vLLM tree but is not named vllm: vLLM's modules "
                "import each other as vllm.…, so nothing in it would resolve. Check a copy or a "
                "link named vllm (or the folder holding it)."
            )
        workspace.contract_source = "tree"
        workspace.only_files = workspace.only_files or bool(workspace.extra_roots)
        workspace.contract_only = workspace.vllm_dir not in inside
    elif workspace.extra_roots:
        if vllm_version:
            from eagle3lint.sources.download import fetch_release

            workspace.vllm_dir = fetch_release(vllm_version, progress=progress)
            workspace.contract_source = f"vllm=={vllm_version}"
        elif (found := installed_vllm()) is not None:
            workspace.vllm_dir = found
            workspace.contract_source = "installed vLLM"
        else:
            workspace.contract_source = "newest known"
        # The tree only supplies the contract: report on the given files, not on all of vLLM.
        workspace.only_files = True
        if not workspace.files and not workspace.missing:
            raise UsageError(
                f"{', '.join(str(p) for p in paths)}: no vLLM tree (a folder holding "
                "model_executor/models/) and no Python model files were found there."
            )
    elif not workspace.missing and not workspace.unreadable:
        raise UsageError("nothing to check")
    return workspace
