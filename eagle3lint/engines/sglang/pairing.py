"""An EAGLE-3 head paired with an SGLang target: which layers SGLang taps for it.

SGLang's model runner reads the head's layer ids from its config's `eagle_config` only
(`eagle_config["eagle_aux_hidden_state_layer_ids"]`, a bare `except` falling back to None;
`use_aux_hidden_state: false` there skips the capture call altogether) and hands them to the
target's `set_eagle3_layers_to_capture`, whose body decides what they mean. Most model files add
one (`[val + 1 for val in layer_ids]`: SGLang captures the state entering a layer, so id i names
the output of layer i); DeepSeek-V2's and GLM-4-MoE-Lite's add one only when the first id is 1;
0.5.23's GPT-OSS keeps them as given when the largest is L; a wrapper passes them to its language
model. With no ids the target taps `[2, L // 2, L - 3]` as they are (shifted too where a method
writes them over its argument). The decoder collects the state entering layer c for every c in
`layers_to_capture`, so an index above L is never reached, nor L unless the forward collects the
last layer's output at its final norm; a decoder whose capture method indexes its layers with
each c stops the server with IndexError instead.

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
KEEP_IF_LARGEST_IS_L = re.compile(r"max\(\s*\w+\s*\)\s*==\s*\w+")
DELEGATE = re.compile(r"self\.(\w+)\.set_eagle3_layers_to_capture\(")
DECODER = re.compile(r"self\.(\w+)\.(?:layers_to_capture\s*=|set_eagle3_layers_to_capture\()")
"""Where a capture method hands the indices on: the decoder whose forward collects them."""
FINAL_CAPTURE = re.compile(
    r"(?:self\.end_layer|len\(self\.layers\)|num_layers|self\.config\.num_hidden_layers)"
    r"\s+in\s+self\.layers_to_capture"
)
"""A decoder forward that also collects index L: the last layer's output, at the final norm
(GPT-OSS and MiniMax-M3 in 0.5.23, Gemma-3's and Gemma-4's causal models)."""
INDEXES_LAYERS = re.compile(r"self\.layers\[\s*\w+\s*\]")
GUARDED = re.compile(r"<\s*len\(\s*self\.layers\s*\)")
"""A capture method that marks each layer it is given (`setattr(self.layers[layer_id], ...)`)
raises IndexError for an index of L or more, unless it checks the bound first (MiniMax-M3)."""
DEFAULTS_AS_IDS = re.compile(r"^\s*layer_ids\s*=\s*\[", re.MULTILINE)
"""A method that writes its defaults over its `layer_ids` argument, so they are shifted like
given ids (MiniMax-M3's vision-language wrapper in 0.5.23: `[3, L // 2 + 1, L - 2]`)."""
SHIFT, SHIFT_IF_FIRST_IS_ONE, AS_GIVEN = "+1", "+1 if the first id is 1", "as given"
SHIFT_UNLESS_LARGEST_IS_L = "as given if the largest id is L, else +1"
UNREAD = "not read"
"""The method hands the ids to a model built by something not found (MindSpore's wrapper asks
its `get_arch`): what they mean is that class's, so nothing is said of the taps."""


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

    def uses_aux_hidden_states(self) -> bool:
        """Whether SGLang calls the target's capture method for this head: it does unless the
        head's `eagle_config` sets `use_aux_hidden_state` to something false (read only
        there, defaulting to true, as the model runner reads it)."""
        eagle_config = self.draft.get("eagle_config")
        if not isinstance(eagle_config, dict):
            return True
        return bool(eagle_config.get("use_aux_hidden_state", True))

    def target_architecture(self) -> str:
        architectures = self.target.get("architectures") or []
        return str(architectures[0]) if architectures else ""

    def target_layers(self) -> int | None:
        text = self.target.get("text_config")
        config = text if isinstance(text, dict) and "num_hidden_layers" in text else self.target
        value = config.get("num_hidden_layers")
        return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class CaptureReading:
    """What a target's `set_eagle3_layers_to_capture` does, read from its body (and from the
    language model's, for a wrapper that hands the ids on)."""

    convention: str
    owner: str
    """The class whose method decides the convention."""
    decoder: ClassRef | None = None
    """The class the indices are handed to, whose forward collects the states."""
    reaches_final: bool = False
    """The decoder's forward also collects index L (the last layer's output, at the final
    norm)."""
    raises: str | None = None
    """The class whose capture method indexes its layers with each index (an IndexError at
    start-up for L or more); None when none does."""
    shifts_defaults: bool = False
    """The default ids go through the convention too."""


@dataclass
class SglangAnalysis:
    """What SGLang does with the pair."""

    layers: int | None
    ids: list[int] | None
    """The ids SGLang hands the target (None: the head's config gives none under eagle_config)."""
    top_level_ids: list[int] | None
    """Ids at the head config's top level, which SGLang does not read."""
    reading: CaptureReading
    captured: list[int] = field(default_factory=list)
    """`layers_to_capture`: the indices of the layers whose input state is collected (empty
    when the convention is not read)."""

    @property
    def read(self) -> bool:
        """The taps are known: the class that decides what the ids mean was read."""
        return self.reading.convention != UNREAD

    @property
    def convention(self) -> str:
        return self.reading.convention

    @property
    def convention_owner(self) -> str:
        """The class whose `set_eagle3_layers_to_capture` decides the convention."""
        return self.reading.owner

    @property
    def outputs(self) -> list[int]:
        """The layers whose output is tapped (-1: the embedding), in the order given."""
        return self.outputs_of(self.captured)

    @staticmethod
    def outputs_of(captured: list[int]) -> list[int]:
        """The layers whose output the state entering each captured index is."""
        return [c - 1 for c in captured]

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
        """Captured indices the decoder never collects: below 0, above L, and L itself unless
        its forward collects the last layer's output at the final norm."""
        if self.layers is None:
            return []
        last = self.layers if self.reading.reaches_final else self.layers - 1
        return [c for c in self.captured if c > last or c < 0]

    @property
    def out_of_range(self) -> list[int]:
        """Captured indices the capture method itself indexes the layers with and fails on
        (an IndexError at start-up, once the weights are loaded)."""
        if self.layers is None or self.reading.raises is None:
            return []
        return [c for c in self.captured if c >= self.layers]

    def default_captured(self) -> list[int]:
        """`layers_to_capture` when the method is called without ids: the defaults, shifted
        where the method writes them over its argument."""
        defaults = default_ids(self.layers) if self.layers is not None else []
        return [c + self.reading.shifts_defaults for c in defaults]

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
    reading = read_capture(target)
    layers = pairing.target_layers()
    analysis = SglangAnalysis(layers, ids, top, reading)
    convention = reading.convention
    if convention == UNREAD:
        analysis.captured = []
    elif ids is None:
        analysis.captured = analysis.default_captured()
    elif (
        convention == SHIFT
        or (convention == SHIFT_IF_FIRST_IS_ONE and ids[:1] == [1])
        or (convention == SHIFT_UNLESS_LARGEST_IS_L and max(ids, default=-1) != layers)
    ):
        analysis.captured = [i + 1 for i in ids]
    else:
        analysis.captured = list(ids)
    return analysis


def read_capture(target: SglangTarget, depth: int = 0) -> CaptureReading:
    """How the target's capture method reads the ids, the class whose method says so, and
    what its decoder does with the indices (following a wrapper's delegation to its language
    model)."""
    found = target.capture
    if found is None or found.method is None:
        return CaptureReading(AS_GIVEN, target.ref.name)
    body = _method_text(target, found.owner, found.method.line)
    if KEEP_IF_LARGEST_IS_L.search(body) and PLUS_ONE.search(body):
        convention = SHIFT_UNLESS_LARGEST_IS_L
    elif IF_FIRST_IS_ONE.search(body):
        convention = SHIFT_IF_FIRST_IS_ONE
    elif PLUS_ONE.search(body):
        convention = SHIFT
    else:
        delegate = DELEGATE.search(body)
        inner = _built(target, delegate.group(1)) if delegate else None
        if inner is not None and depth < 4:
            part = SglangTarget(inner.name, inner, target.index, target.contract, registered=False)
            return read_capture(part, depth + 1)
        convention = UNREAD if delegate else AS_GIVEN
    handed = DECODER.search(body)
    decoder = _built(target, handed.group(1)) if handed else None
    reaches, raises = _decoder_facts(target, decoder)
    shifts = convention == SHIFT and bool(DEFAULTS_AS_IDS.search(body))
    return CaptureReading(convention, found.owner.name, decoder, reaches, raises, shifts)


def _decoder_facts(target: SglangTarget, decoder: ClassRef | None) -> tuple[bool, str | None]:
    """Whether `decoder`'s forward collects index L, and the class whose capture method
    indexes its layers with every index unchecked (None if it has no such method)."""
    if decoder is None:
        return False, None
    part = SglangTarget(decoder.name, decoder, target.index, target.contract, registered=False)
    forward = part.lookup("forward")
    reaches = (
        forward is not None
        and forward.method is not None
        and bool(FINAL_CAPTURE.search(_method_text(part, forward.owner, forward.method.line)))
    )
    capture = part.capture
    raises = None
    if capture is not None and capture.method is not None:
        body = _method_text(part, capture.owner, capture.method.line)
        if INDEXES_LAYERS.search(body) and not GUARDED.search(body):
            raises = capture.owner.name
    return reaches, raises


def _method_text(target: SglangTarget, owner: ClassRef, line: int) -> str:
    data = target.index.source_bytes(target.index.display_path(owner.file)) or b""
    text = strip_comments(data.decode("utf-8", "replace"))
    lines = text.splitlines(keepends=True)
    start = sum(len(x) for x in lines[: max(line - 1, 0)])
    header = lines[line - 1] if 0 < line <= len(lines) else ""
    indent = len(header) - len(header.lstrip())
    return text[start : block_end(text, start, indent)]


def _built(target: SglangTarget, attr: str) -> ClassRef | None:
    """The class the instance's `__init__` stores in `self.<attr>` (the last call assigned to
    it): imported at the top of the file, inside `__init__` itself (Llama-4's wrapper imports
    its language model there), or held by a class attribute (Qwen3.5's `self.body_cls(...)`,
    which its MoE subclass overrides)."""
    for entry in target.mro:
        if not isinstance(entry, ClassRef):
            continue
        assign = entry.cls.init_assigns.get(attr)
        if assign is not None and assign.callee:
            found = target.index.resolve_callee(target.mro, entry, assign.callee)
            return found or _imported_in_init(target, entry, assign.callee)
    return None


def _imported_in_init(target: SglangTarget, entry: ClassRef, name: str) -> ClassRef | None:
    """The class `name` as a `from module import name` inside `entry`'s `__init__` gives it."""
    init = entry.cls.methods.get("__init__")
    if init is None or "." in name:
        return None
    body = _method_text(target, entry, init.line)
    match = re.search(rf"^\s*from\s+([\w.]+)\s+import\s+[^\n]*\b{name}\b", body, re.MULTILINE)
    return target.index.class_ref(match.group(1), name) if match else None
