"""SGLang behind the engine face: an `sglang/` package with `srt/models/`, releases from PyPI
(the `sglang` wheels: platform-tagged, but every one ships all Python sources), the registry
of `EntryClass` names, and the duck-typed contract of its model runner and draft workers."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eagle3lint.engines import Wing
from eagle3lint.engines.sglang.layout import MODELS_PACKAGE, REGISTRY
from eagle3lint.sources.pypi_releases import PypiReleases

if TYPE_CHECKING:
    from eagle3lint.engines.sglang.contract import SglangContract
    from eagle3lint.engines.sglang.registry import RegistryEntry
    from eagle3lint.engines.sglang.targets import SglangTarget
    from eagle3lint.index.project import ProjectIndex

MODEL_NAME = re.compile(r"(ForCausalLM|ForConditionalGeneration|LMHeadModel)$")
"""Class names of generative models: in a model file with no `EntryClass`, such a class is a
model not registered yet."""


class SglangWing(PypiReleases, Wing):
    name = "sglang"
    label = "SGLang"
    package = "sglang"
    registry_module = REGISTRY
    models_package = MODELS_PACKAGE
    tree_marker = "srt/models"

    def read_contract(self, index: ProjectIndex, tree: Path, source: str) -> SglangContract:
        from eagle3lint.engines.sglang.contract import read_contract

        return read_contract(index, tree, source)

    def newest_contract(self) -> SglangContract:
        from eagle3lint.engines.sglang.contract import CallSite, SglangContract
        from eagle3lint.engines.sglang.layout import CAPTURE_METHOD, EMBED_HEAD_PREFIX

        # sglang 0.5.23, the newest release read; for model files checked without a tree.
        runner = "sglang/srt/model_executor/model_runner_components/attention_backend_setup.py"
        embed = "sglang/srt/speculative/pp_draft_embedding.py"
        return SglangContract(
            "0.5.23",
            "newest known",
            "",
            capture_method=CAPTURE_METHOD,
            capture_calls=(CallSite(runner, 61, CAPTURE_METHOD),),
            capture_error=f"Model {{}} does not implement {CAPTURE_METHOD}, which EAGLE3 aux "
            "hidden-state capture requires.",
            capture_error_type="ValueError",
            embed_head=(f"{EMBED_HEAD_PREFIX}_for_draft", EMBED_HEAD_PREFIX),
            embed_head_calls=(
                CallSite(embed, 94, f"{EMBED_HEAD_PREFIX}_for_draft"),
                CallSite(embed, 95, EMBED_HEAD_PREFIX),
            ),
        )

    def unread_contract(self, source: str, root: str) -> SglangContract:
        from eagle3lint.engines.sglang.contract import SglangContract

        return SglangContract(None, source, root, readable=False)

    def registry(self, index: ProjectIndex) -> list[RegistryEntry]:
        from eagle3lint.engines.sglang.registry import registered_architectures

        return registered_architectures(index)

    def targets(
        self, index: ProjectIndex, contract: Any, entries: list[Any], unresolved: list[Any]
    ) -> list[SglangTarget]:
        from eagle3lint.engines.sglang.targets import SglangTarget
        from eagle3lint.index.refs import ClassRef

        found = []
        for entry in entries:
            ref = index.resolve_dotted(entry.module, entry.cls)
            if isinstance(ref, ClassRef):
                found.append(SglangTarget(entry.arch, ref, index, contract))
            else:
                unresolved.append(entry)
        return found

    def file_targets(
        self, index: ProjectIndex, contract: Any, modules: list[str], known: set[str]
    ) -> list[SglangTarget]:
        """The classes a model file's `EntryClass` lists (what SGLang would register once the
        file is in its models package), else its model-named `nn.Module` classes."""
        from eagle3lint.engines.sglang.registry import entry_names
        from eagle3lint.engines.sglang.targets import SglangTarget
        from eagle3lint.index.refs import ClassRef

        found = []
        for module in modules:
            summary = index.summary(module)
            if summary is None:
                continue
            listed = entry_names(summary)
            names = (
                listed
                if listed is not None
                else [n for n in summary.classes if MODEL_NAME.search(n)]
            )
            for name in names:
                ref = index.resolve_dotted(module, name)
                if not isinstance(ref, ClassRef) or ref.qualname in known:
                    continue
                target = SglangTarget(ref.name, ref, index, contract, registered=False)
                if listed is not None or target.is_module:
                    found.append(target)
        return found


WING = SglangWing()
