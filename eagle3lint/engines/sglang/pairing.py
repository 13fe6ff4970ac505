"""An EAGLE-3 head paired with an SGLang target: which layers SGLang taps for it.

SGLang's model runner reads the head's layer ids from its config's `eagle_config` only
(`eagle_config["eagle_aux_hidden_state_layer_ids"]`, a bare `except` falling back to None)
and hands them to the target's `set_eagle3_layers_to_capture`, whose body decides what they
mean. Most model files add one (`[val + 1 for val in layer_ids]`: SGLang captures the state
entering a layer, so id i names the output of layer i); DeepSeek-V2's and GLM-4-MoE-Lite's add
one only when the first id is 1; a wrapper passes them to its language model. With no ids the
target taps `[2, L // 2, L - 3]` as they are. The decoder collects the state entering layer c
for every c in `layers_to_capture`, so an index of L or more is never reached.

vLLM reads the same ids as the index of the state entering a layer (id i: the output of layer
i - 1), so the same head can tap other layers in the two engines; `pair` says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eagle3lint.engines.sglang.targets import SglangTarget
from eagle3lint.hf_config import read_config_json
from eagle3lint.index.refs import ClassRef
from eagle3lint.layer_ids import check_layer_ids, listed
from eagle3lint.sources.source_text import block_end, strip_comments

IDS_KEY = "eagle_aux_hidden_state_layer_ids"
PLUS_ONE = re.compile(r"\+\s*1\b")
IF_FIRST_IS_ONE = re.compile(r"\[\s*0\s*\]\s*==\s*1\b")
DELEGATE = re.compile(r"self\.(\w+)\.set_eagle3_layers_to_capture\(")
SHIFT, SHIFT_IF_FIRST_IS_ONE, AS_GIVEN = "+1", "+1 if the first id is 1", "as given"


@dataclass
class SglangPairing:
    """`pair`'s inputs for an SGLang tree: the head's and the target's config.json."""

    draft_path: Path
    draft: dict[str, Any]
    target_path: Path
    target: dict[str, Any]
    draft_text: str = ""
    analysis: SglangAnalysis | None = None
    """Set by the sglang-pairing rule when it judges the target."""

    @classmethod
    def load(cls, draft: Path, target: Path) -> SglangPairing:
        draft_config, draft_file, text = read_config_json(draft, "--draft")
        check_layer_ids(draft_config, draft_file)
        target_config, target_file, _ = read_config_json(target, "--target")
        return cls(draft_file, draft_config, target_file, target_config, text)

    def line_of(self, key: str) -> int:
        """The line of the head's config that names `key` (1 when none does)."""
        for number, text in enumerate(self.draft_text.splitlines(), 1):
            if f'"{key}"' in text:
                return number
        return 1

    def target_architecture(self) -> str:
        architectures = self.target.get("architectures") or []
        return str(architectures[0]) if architectures else ""

    def target_layers(self) -> int | None:
        text = self.target.get("text_config")
        config = text if isinstance(text, dict) and "num_hidden_layers" in text else self.target
        value = config.get("num_hidden_layers")
        return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass
class SglangAnalysis:
    """What SGLang does with the pair."""

    layers: int | None
    ids: list[int] | None
    """The ids SGLang hands the target (None: the head's config gives none under eagle_config)."""
    top_level_ids: list[int] | None
    """Ids at the head config's top level, which SGLang does not read."""
    convention: str
    convention_owner: str
    """The class whose `set_eagle3_layers_to_capture` decides the convention."""
    captured: list[int] = field(default_factory=list)
    """`layers_to_capture`: the indices of the layers whose input state is collected."""

    @property
    def outputs(self) -> list[int]:
        """The layers whose output is tapped (-1: the embedding), in the order given."""
        return [c - 1 for c in self.captured]

    listed = staticmethod(listed)
    """A list of ids as messages show it: a few of a long one, and the count."""

    @staticmethod
    def layers_listed(outputs: list[int], prefix: str = "", brackets: bool = True) -> str:
        """Tapped `outputs` as messages and tables show them: `embedding` for -1, else `prefix`
        and the layer; a few of a long list, and the count."""
        return listed(
            outputs,
            lambda o: "embedding" if o < 0 else f"{prefix}{o}",
            brackets=brackets,
            noun="layers",
        )

    @property
    def unreachable(self) -> list[int]:
        """Captured indices the decoder's loop over its L layers never reaches."""
        if self.layers is None:
            return []
        return [c for c in self.captured if c >= self.layers or c < 0]

    def vllm_outputs(self) -> list[int] | None:
        """The layers whose outputs vLLM taps for the same ids (id i: entering layer i)."""
        ids = self.ids if self.ids is not None else self.top_level_ids
        if ids is None:
            return None if self.layers is None else [c - 1 for c in default_ids(self.layers)]
        return [i - 1 for i in ids]


def default_ids(layers: int) -> list[int]:
    """What a target taps with no ids: `[2, L // 2, L - 3]`, unshifted."""
    return [2, layers // 2, layers - 3]


def _int_list(value: Any) -> list[int] | None:
    if isinstance(value, list) and all(
        isinstance(v, int) and not isinstance(v, bool) for v in value
    ):
        return list(value)
    return None


def analyse(pairing: SglangPairing, target: SglangTarget) -> SglangAnalysis:
    eagle_config = pairing.draft.get("eagle_config")
    ids = _int_list(eagle_config.get(IDS_KEY)) if isinstance(eagle_config, dict) else None
    top = _int_list(pairing.draft.get(IDS_KEY))
    convention, owner = convention_of(target)
    layers = pairing.target_layers()
    analysis = SglangAnalysis(layers, ids, top, convention, owner)
    if ids is None:
        analysis.captured = default_ids(layers) if layers is not None else []
    elif convention == SHIFT or (convention == SHIFT_IF_FIRST_IS_ONE and ids[:1] == [1]):
        analysis.captured = [i + 1 for i in ids]
    else:
        analysis.captured = list(ids)
    return analysis


def convention_of(target: SglangTarget, depth: int = 0) -> tuple[str, str]:
    """How the target's capture method reads the ids, and the class whose method says so
    (following a wrapper's delegation to its language model)."""
    found = target.capture
    if found is None or found.method is None:
        return AS_GIVEN, target.ref.name
    body = _method_text(target, found.owner, found.method.line)
    if IF_FIRST_IS_ONE.search(body):
        return SHIFT_IF_FIRST_IS_ONE, found.owner.name
    if PLUS_ONE.search(body):
        return SHIFT, found.owner.name
    delegate = DELEGATE.search(body)
    inner = _built(target, found.owner, delegate.group(1)) if delegate else None
    if inner is not None and depth < 4:
        part = SglangTarget(inner.name, inner, target.index, target.contract, registered=False)
        return convention_of(part, depth + 1)
    return AS_GIVEN, found.owner.name


def _method_text(target: SglangTarget, owner: ClassRef, line: int) -> str:
    data = target.index.source_bytes(target.index.display_path(owner.file)) or b""
    text = strip_comments(data.decode("utf-8", "replace"))
    lines = text.splitlines(keepends=True)
    start = sum(len(x) for x in lines[: max(line - 1, 0)])
    header = lines[line - 1] if 0 < line <= len(lines) else ""
    indent = len(header) - len(header.lstrip())
    return text[start : block_end(text, start, indent)]


def _built(target: SglangTarget, owner: ClassRef, attr: str) -> ClassRef | None:
    """The class `__init__` stores in `self.<attr>` (the last call assigned to it)."""
    for entry in target.index.mro(owner):
        if not isinstance(entry, ClassRef):
            continue
        assign = entry.cls.init_assigns.get(attr)
        if assign is not None and assign.callee:
            found = target.index.resolve_dotted(entry.file.module, assign.callee)
            return found if isinstance(found, ClassRef) else None
    return None
