"""vLLM's model registry, read as text: the architectures and where their classes live."""

from __future__ import annotations

from dataclasses import dataclass

from eagle3lint.engines.vllm.contract.model import REGISTRY
from eagle3lint.engines.vllm.layout import MODELS_PACKAGE as MODELS_PACKAGE  # re-exported
from eagle3lint.index.model import DictLiteral
from eagle3lint.index.project import ProjectIndex
from eagle3lint.index.refs import ClassRef


@dataclass(frozen=True, slots=True)
class RegistryEntry:
    arch: str
    module: str
    cls: str
    section: str = ""
    """The registry dict the entry comes from (the last one wins, as the `**` merge does)."""


def registered_architectures(index: ProjectIndex) -> list[RegistryEntry]:
    """Every arch → (module, class) of the registry, following `**` merges of its dicts."""
    return index.remembered("registry", lambda: _read_registry(index))


def _read_registry(index: ProjectIndex) -> list[RegistryEntry]:
    summary = index.summary(REGISTRY)
    if summary is None:
        return []
    dicts = summary.registry_dicts
    merged = [name for name, literal in dicts.items() if literal.splats]
    roots = [n for n in merged if not any(n in dicts[m].splats for m in merged)]
    order: list[str] = []

    def expand(name: str, seen: frozenset[str]) -> None:
        literal: DictLiteral | None = dicts.get(name)
        if literal is None or name in seen:
            return
        for splat in literal.splats:
            expand(splat, seen | {name})
        order.append(name)

    for name in roots or list(dicts):
        expand(name, frozenset())
    entries: dict[str, RegistryEntry] = {}
    for name in order:
        for entry in dicts[name].entries:
            module = entry.module if "." in entry.module else f"{MODELS_PACKAGE}.{entry.module}"
            entries[entry.key] = RegistryEntry(entry.key, module, entry.cls, name)
    return list(entries.values())


def class_for_arch(index: ProjectIndex, arch: str) -> ClassRef | None:
    for entry in registered_architectures(index):
        if entry.arch == arch:
            found = index.resolve(entry.module, entry.cls)
            return found if isinstance(found, ClassRef) else None
    return None
