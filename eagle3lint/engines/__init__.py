"""The face every engine wing implements, and the choice of the wing for a tree.

An engine (vLLM, and later others) is a *wing*: a package under `eagle3lint/engines/` (or a
plugin's, registered under the `eagle3lint.engines` entry-point group) holding everything
that engine spells its own way: what its source tree looks like, where its releases come
from, its model registry, and the contract a target must meet. The engine-neutral core
(sources, index, check run, report, fix) speaks to a wing only through `Wing`. This module
imports nothing of eagle3lint at run time, so that any layer may name the face.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from enum import StrEnum
from functools import cache
from importlib import import_module
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

if TYPE_CHECKING:
    from eagle3lint.index.project import ProjectIndex
    from eagle3lint.index.refs import ClassRef

ENTRY_POINT_GROUP = "eagle3lint.engines"
BUILTIN = ("eagle3lint.engines.vllm.wing:WING", "eagle3lint.engines.sglang.wing:WING")


class Role(StrEnum):
    """What an engine runs an architecture as; only targets take a drafter."""

    TARGET = "target"
    DRAFT = "draft"
    POOLING = "pooling"


class Platform(StrEnum):
    """The platforms `--platform` names, whose choice of model runner an engine may read
    (`Wing.for_setup`)."""

    CUDA = "cuda"
    ROCM = "rocm"
    CPU = "cpu"


class Entry(Protocol):
    """One architecture of an engine's registry."""

    arch: str
    module: str
    cls: str


class Target(Protocol):
    """One architecture as its engine would build it: what the core asks of every wing's
    targets (a wing's rules ask their own targets much more)."""

    arch: str
    ref: ClassRef
    variant: str | None
    registered: bool

    @property
    def role(self) -> Role: ...

    @property
    def claims_eagle3(self) -> bool:
        """Its code says it is meant to run EAGLE-3 (else it is only not capable)."""

    @property
    def implements_eagle3(self) -> bool: ...

    @property
    def is_module(self) -> bool: ...

    @property
    def pp_aux_relay(self) -> bool | None:
        """Its decoder relays aux hidden states across pipeline ranks (None: no such relay)."""

    @property
    def runner(self) -> str | None:
        """The engine's model runner that runs it by default, when the engine has several
        (optional: a wing whose targets lack it has one runner, see `default_runner`)."""

    @property
    def runner_choices(self) -> tuple[str, ...]:
        """Every model runner of the engine that may run it (one or none: no choice)."""

    def off_runner_note(self, runners: tuple[str, ...]) -> str:
        """How a finding on the path of `runners` only (not the default's) is qualified."""

    def role_note(self) -> str:
        """Why its engine gives it no target verdict, for a draft or a pooling model (optional:
        without it the note is `ROLE_NOTES`', which name no engine)."""

    def modules(self) -> set[str]:
        """Every module whose code decides its verdict."""

    def depends_on(self) -> set[str]:
        """`modules()` and what could not be resolved into it."""


ROLE_NOTES = {
    Role.DRAFT: "its engine runs it only as a draft model; `eagle3lint pair` checks it against "
    "a target",
    Role.POOLING: "its engine serves it as a pooling model, which takes no drafter",
}
"""The engine-neutral `Target.role_note` of a wing whose targets have none."""


def role_note(target: Target) -> str:
    """`target.role_note()`, else the engine-neutral note for its role."""
    note = getattr(target, "role_note", None)
    return note() if callable(note) else ROLE_NOTES.get(target.role, "")


def default_runner(target: Target) -> str | None:
    """`target.runner`, for wings whose targets have it (the member came with face 1.2)."""
    return getattr(target, "runner", None)


class Contract(Protocol):
    """What a target must satisfy in one tree, as reports show it."""

    version: str | None
    source: str
    root: str

    def describe(self) -> str: ...

    def to_json(self) -> dict[str, object]: ...


class Wing(ABC):
    """One engine's side of eagle3lint."""

    name: ClassVar[str]
    """Short name, as rules' `engines` and `--engine`-like options spell it (`vllm`)."""
    label: ClassVar[str]
    """How reports name the engine (`vLLM`)."""
    package: ClassVar[str]
    """The import name of the engine's source tree (the folder name its modules need)."""
    registry_module: ClassVar[str]
    """The dotted module that lists the architectures to check."""
    models_package: ClassVar[str]
    """The dotted package model files live in (their relative imports resolve from it)."""

    def __repr__(self) -> str:
        # The same in every process: the whole-run cache keys on the workspace, wing included.
        return f"<{self.name} wing>"

    tree_marker: ClassVar[str]
    """The folder (relative, `/`-separated) whose presence makes a folder this engine's tree."""

    def is_tree(self, folder: Path) -> bool:
        """Whether `folder` is this engine's package folder (named `package` or not); False for
        a folder that cannot be looked into (it is named when it is walked)."""
        return os.path.isdir(folder / self.tree_marker)

    def marker_entry(self, folder: Path) -> Path:
        """The entry of tree `folder` whose writer decides whether the tree may be trusted."""
        return folder / self.tree_marker.split("/", 1)[0]

    def installed_tree(self) -> Path | None:
        """The installed engine's package folder, located without importing it."""
        import importlib.util

        try:
            spec = importlib.util.find_spec(self.package)
        except (ImportError, ValueError):
            return None
        if spec is None or not spec.submodule_search_locations:
            return None
        folder = Path(next(iter(spec.submodule_search_locations)))
        return folder if self.is_tree(folder) else None

    @abstractmethod
    def fetch_release(
        self, version: str, cache_root: Path | None = None, progress: bool = False
    ) -> Path:
        """The package folder of release `version`, fetched (sources only) on first use."""

    @abstractmethod
    def check_version(self, version: str) -> None:
        """Raise `DownloadError` for what is not a release number of this engine."""

    @abstractmethod
    def is_fetched(self, version: str, cache_root: Path | None = None) -> bool:
        """Whether release `version` is already in the cache (no download needed)."""

    @abstractmethod
    def list_releases(self, cache_root: Path | None = None) -> list[str]:
        """The releases its package index lists, oldest first."""

    @abstractmethod
    def read_contract(self, index: ProjectIndex, tree: Path, source: str) -> Contract:
        """The contract `tree`'s own sources set (what the wing's rules ask); raises
        `UnreadableSource` when a file it depends on cannot be read."""

    def for_setup(
        self,
        contract: Contract,
        index: ProjectIndex,
        platform: str | None,
        checkpoint: tuple[Path, dict[str, Any]] | None,
    ) -> Contract:
        """The contract as it applies on `platform` (`--platform`; None: the one the engine
        finds for the tree) with `checkpoint` (`--hf-config`: its file and object), for an
        engine whose runner depends on them; this default: unchanged."""
        return contract

    @abstractmethod
    def newest_contract(self) -> Contract:
        """The contract of the newest release known, for model files with no tree."""

    @abstractmethod
    def unread_contract(self, source: str, root: str) -> Contract:
        """What a report shows as the contract of a tree whose contract could not be read."""

    @abstractmethod
    def registry(self, index: ProjectIndex) -> list[Entry]:
        """The registry's entries (`arch`, `module`, `cls`, `section`), in its order."""

    @abstractmethod
    def targets(
        self, index: ProjectIndex, contract: Any, entries: list[Any], unresolved: list[Any]
    ) -> list[Target]:
        """Targets for registry entries (`arch`, `ref`, `role`, `modules()`, `depends_on()`,
        ...); entries whose class cannot be found go to `unresolved`."""

    @abstractmethod
    def file_targets(
        self, index: ProjectIndex, contract: Any, modules: list[str], known: set[str]
    ) -> list[Target]:
        """Model classes of the given modules the registry does not list, as targets."""


@cache
def wings() -> tuple[Wing, ...]:
    """The built-in wings, then the installed plugins' (a broken plugin is skipped: the
    engines it would bring are not offered, and the rest still work)."""
    found: list[Wing] = [_load(spec) for spec in BUILTIN]
    for point in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda p: p.name):
        try:
            wing = point.load()
        except Exception:  # a third-party import; its trees are simply not recognised
            continue
        if isinstance(wing, Wing) and wing.name not in {w.name for w in found}:
            found.append(wing)
    return tuple(found)


def _load(spec: str) -> Wing:
    module, _, attr = spec.partition(":")
    wing = getattr(import_module(module), attr)
    assert isinstance(wing, Wing)
    return wing


def wing_named(name: str) -> Wing:
    """The wing called `name` (KeyError when none is installed)."""
    for wing in wings():
        if wing.name == name:
            return wing
    raise KeyError(name)


def default_wing() -> Wing:
    """The wing for model files with no tree, and for `--vllm X.Y.Z`."""
    return wings()[0]


def tree_wing(folder: Path) -> Wing | None:
    """The wing whose tree `folder` is."""
    return next((wing for wing in wings() if wing.is_tree(folder)), None)
