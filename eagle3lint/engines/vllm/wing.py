"""vLLM behind the engine face: what a vLLM tree is, where releases come from, its registry
and contract, and how its registry entries become targets."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eagle3lint.engines import Wing
from eagle3lint.engines.vllm.layout import MODELS_PACKAGE, REGISTRY
from eagle3lint.sources.pypi_releases import PypiReleases

if TYPE_CHECKING:
    from eagle3lint.engines.vllm.contract.model import Contract
    from eagle3lint.engines.vllm.registry import RegistryEntry
    from eagle3lint.engines.vllm.targets import Target
    from eagle3lint.index.project import ProjectIndex

ENTRY_CLASS = re.compile(r"(ForCausalLM|ForConditionalGeneration|LMHeadModel)$")
"""Class names vLLM's registry gives generative models: an unregistered class so named is a
model not registered yet."""


class VllmWing(PypiReleases, Wing):
    name = "vllm"
    label = "vLLM"
    package = "vllm"
    registry_module = REGISTRY
    models_package = MODELS_PACKAGE
    tree_marker = "model_executor/models"

    def read_contract(self, index: ProjectIndex, tree: Path, source: str) -> Contract:
        from eagle3lint.engines.vllm.contract.reader import read_contract

        return read_contract(index, tree, source)

    def for_setup(
        self,
        contract: Contract,
        index: ProjectIndex,
        platform: str | None,
        checkpoint: tuple[Path, dict[str, Any]] | None,
    ) -> Contract:
        from dataclasses import replace

        from eagle3lint.engines.vllm.contract.reader import read_if_there
        from eagle3lint.engines.vllm.contract.setup import checkpoint_facts, setup_for

        keys = contract.runners.expert_keys if contract.runners else ()
        facts = checkpoint_facts(checkpoint[1], str(checkpoint[0]), keys) if checkpoint else None
        tree = Path(contract.root) if contract.root else None
        read = lambda path: read_if_there(index, path)  # noqa: E731
        return replace(contract, setup=setup_for(tree, platform, contract.source, read, facts))

    def newest_contract(self) -> Contract:
        from eagle3lint.engines.vllm.contract.known import newest_contract

        return newest_contract()

    def unread_contract(self, source: str, root: str) -> Contract:
        from eagle3lint.engines.vllm.contract.model import Contract

        return Contract(None, source, root, None, None, readable=False)

    def registry(self, index: ProjectIndex) -> list[RegistryEntry]:
        from eagle3lint.engines.vllm.registry import registered_architectures

        return registered_architectures(index)

    def targets(
        self,
        index: ProjectIndex,
        contract: Contract,
        entries: list[RegistryEntry],
        unresolved: list[RegistryEntry],
    ) -> list[Target]:
        return build_targets(index, contract, entries, unresolved)

    def file_targets(
        self, index: ProjectIndex, contract: Contract, modules: list[str], known: set[str]
    ) -> list[Target]:
        return file_targets(index, contract, modules, known)


WING = VllmWing()


def build_targets(
    index: ProjectIndex,
    contract: Contract,
    entries: list[RegistryEntry],
    unresolved: list[RegistryEntry],
) -> list[Target]:
    """Targets for registry entries; entries whose class cannot be found go to `unresolved`."""
    from eagle3lint.engines.vllm.targets import Target
    from eagle3lint.index.refs import ClassRef

    targets: list[Target] = []
    for entry in entries:
        variants = index.variants(entry.module, entry.cls)
        if variants:
            platform = next((p for p in ("cuda", "default") if p in variants), next(iter(variants)))
            chosen = variants[platform]
            targets.append(
                Target(
                    entry.arch,
                    chosen,
                    index,
                    contract,
                    variant=platform,
                    variants=variants,
                    section=entry.section,
                )
            )
            continue
        found = index.resolve(entry.module, entry.cls)
        if isinstance(found, ClassRef):
            targets.append(Target(entry.arch, found, index, contract, section=entry.section))
        else:
            unresolved.append(entry)
    return targets


def file_targets(
    index: ProjectIndex, contract: Contract, modules: list[str], known: set[str]
) -> list[Target]:
    """Model entry classes defined in the given files that the registry does not list."""
    from eagle3lint.engines.vllm.targets import Target
    from eagle3lint.index.refs import ClassRef

    targets = []
    for module in modules:
        summary = index.summary(module)
        if summary is None:
            continue
        for name in list(summary.classes):
            ref = index.class_ref(module, name)
            if ref is None or ref.qualname in known:
                continue
            cls = ref.cls
            target = Target(cls.name, ref, index, contract, registered=False)
            interfaces = contract.interfaces_module or ""
            # A model is an nn.Module with vLLM interfaces; a mixin of interface methods alone
            # (DeepseekV2MixtureOfExperts) is not something vLLM instantiates.
            uses_interfaces = any(
                isinstance(e, ClassRef) and e.file.module == interfaces and e.cls.is_protocol
                for e in target.mro[1:]
            )
            if ENTRY_CLASS.search(cls.name) or (
                uses_interfaces and target.is_module and not cls.is_protocol
            ):
                targets.append(target)
    return targets
