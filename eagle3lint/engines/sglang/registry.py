"""SGLang's model registry, read as its code builds it: every top-level module of
`sglang/srt/models/` (subpackages are not imported), each `EntryClass` (a class or a list of
classes), the architecture being the class's own name (`tmp.__name__`), so an alias
registers the class it names."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from eagle3lint.engines.sglang.layout import MODELS_PACKAGE, REGISTRY
from eagle3lint.index.refs import ClassRef

if TYPE_CHECKING:
    from eagle3lint.index.model import FileSummary
    from eagle3lint.index.project import ProjectIndex

ENTRY = "EntryClass"


@dataclass(frozen=True, slots=True)
class RegistryEntry:
    arch: str
    module: str
    cls: str
    """The name `EntryClass` lists (an alias or an import of the class)."""
    line: int = 0
    section: str = ENTRY


def registered_architectures(index: ProjectIndex) -> list[RegistryEntry]:
    """Every architecture of the tree, in the order SGLang imports the modules (by name); a
    name listed twice keeps its first module (SGLang itself stops on the duplicate)."""
    # SGLang builds its registry by importing every model module: passed on, those reads made
    # every model file a read of every target, and an edit of one reported all of them. A
    # target reads its own entry's module itself, which is all of the registry its verdict uses.
    return index.remembered("sglang-registry", lambda: _read_registry(index), passed_on=False)


def model_modules(index: ProjectIndex) -> list[str]:
    """The modules `pkgutil.iter_modules` lists in the models package: `.py` files whose names
    are identifiers (SGLang imports each one to read its `EntryClass`)."""
    # A namespace package (no `__init__.py` in the wheels): found by a module of its own.
    anchor = index.source_file(REGISTRY)
    if anchor is None:
        return []
    folder = anchor.path.parent
    try:
        names = sorted(
            entry.stem
            for entry in folder.iterdir()
            if entry.suffix == ".py" and entry.stem.isidentifier() and entry.stem != "__init__"
            if entry.is_file()
        )
    except OSError:
        return []
    return [f"{MODELS_PACKAGE}.{name}" for name in names]


def entry_names(summary: FileSummary) -> list[str] | None:
    """The names a module's `EntryClass` lists (one for a single class); None without one."""
    if ENTRY in summary.name_lists:
        return summary.name_lists[ENTRY]
    return [summary.aliases[ENTRY]] if ENTRY in summary.aliases else None


def _read_registry(index: ProjectIndex) -> list[RegistryEntry]:
    modules = model_modules(index)
    index.preload(modules)  # in parallel; each is read for its EntryClass
    entries: dict[str, RegistryEntry] = {}
    for module in modules:
        summary = index.summary(module)
        if summary is None:
            continue
        line = summary.name_lines.get(ENTRY, 0)
        for name in entry_names(summary) or ():
            found = index.resolve_dotted(module, name)
            arch = found.name if isinstance(found, ClassRef) else name.rsplit(".", 1)[-1]
            entries.setdefault(arch, RegistryEntry(arch, module, name, line))
    return list(entries.values())
