"""Libraries whose sources decide facts about the analysed tree: transformers' config classes
say which attributes a checkpoint's config has when vLLM builds it from them, and its model
classes what the Transformers modeling backend runs.

Only files are read (the index parses them as it parses the tree), never imported, and never
those of the interpreter running eagle3lint: a verdict is the release's, not the machine's.
transformers is the one installed beside the analysed package (an installed vLLM,
`site-packages/vllm` next to `site-packages/transformers`); else the release of it that the
tree's own requirement resolves to (`sources.requirements`: a release's wheel METADATA, a
checkout's requirement files), fetched into the cache (`sources.dependency_release`); else
it is unknown, and what it would decide stays unverified.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from eagle3lint.sources.dependency_release import record_path, resolve
from eagle3lint.sources.requirements import required
from eagle3lint.sources.wheels import fetch_release

TRANSFORMERS = "transformers"
READ_MODULES = re.compile(
    r"transformers\.(configuration_utils|models\.\w+\.(?:configuration|modeling)_\w+)"
)
"""The modules of transformers the index reads: those of its config classes, and of its model
classes for the Transformers modeling backend (its package `__init__` files import lazily, so a
name imported from them is found by `config_classes`). `modeling_utils`, whose
`PreTrainedModel` is the largest file of the package, stays external: what the backend needs
from it is one documented default."""
UNKNOWN = (
    "transformers is unknown here (none is installed beside this tree, and no requirement on it "
    "was read beside it)"
)
"""Why transformers' sources were not read: what a verdict that needs them says instead."""


@dataclass(frozen=True, slots=True)
class Library:
    """A package of which the index reads the modules `modules` matches, from `folder` (the
    folder holding the package); every other module of it stays external."""

    name: str
    folder: Path
    modules: re.Pattern[str]
    version: str | None = None
    """As its metadata folder names it (`transformers-4.57.6.dist-info`), or as resolved."""
    source: str = ""
    """Where it came from, as the report says it."""
    inputs: tuple[Path, ...] = ()
    """The files its choice was read from: a later change to them changes what a check says,
    so the whole-run cache notes them."""

    def reads(self, module: str) -> bool:
        return self.modules.fullmatch(module) is not None

    def to_json(self) -> dict[str, str | None]:
        """The report's account of it (the engine block's `transformers`, docs/json-report.md)."""
        return {"version": self.version, "source": self.source}


def find_transformers(
    import_root: Path | None,
    package: str,
    read: Callable[[Path], str | None],
    progress: bool = False,
) -> tuple[Library | None, list[Path]]:
    """transformers as the analysed `package` tree in `import_root` would import it (see the
    module's docstring), and the paths looked at where it was not (an install there later
    changes what a check says). `read` gives a file's text, None when it is not there."""
    if import_root is None:
        return None, []
    marker = import_root / TRANSFORMERS / "__init__.py"
    if marker.is_file():
        source = f"installed beside {package}"
        folder = import_root.resolve()
        inputs = (marker,)
        return Library(TRANSFORMERS, folder, READ_MODULES, _version(folder), source, inputs), []
    found = required(import_root, package, TRANSFORMERS, read)
    if found is None:
        return None, [marker]
    version = resolve(found.requirement, found.where)
    folder = fetch_release(version, package=TRANSFORMERS, progress=progress, keep=kept)
    source = f"resolved from {found.where}'s requirement '{found.requirement}'"
    inputs = (found.path, record_path(TRANSFORMERS), folder / "__init__.py")
    return Library(TRANSFORMERS, folder.parent, READ_MODULES, version, source, inputs), [marker]


def kept(member: str) -> bool:
    """The files of a transformers wheel kept in the cache: its own modules (those whose
    presence the backend's imports decide among them), and of its models only the
    configuration and modeling modules the index reads (not their tokenizers, processors,
    modular sources or conversion scripts)."""
    models = f"{TRANSFORMERS}/models/"
    if not member.startswith(models) or member.endswith("/__init__.py"):
        return True
    return READ_MODULES.fullmatch(member.removesuffix(".py").replace("/", ".")) is not None


def _version(folder: Path) -> str | None:
    """The version of the package installed in `folder`, from its metadata folder's name."""
    for found in sorted(folder.glob(f"{TRANSFORMERS}-*.dist-info")):
        return found.name.removeprefix(f"{TRANSFORMERS}-").removesuffix(".dist-info")
    return None
