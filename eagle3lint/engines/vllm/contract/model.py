"""The EAGLE-3 target contract of one vLLM tree, as one object the rules consult.

Rules never test a version number: they ask the contract what this tree's interfaces, runner,
gate and proposer require. The reader fills it from the analysed tree's own sources.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from eagle3lint.engines.vllm.names import KNOWN_GETTERS, SETTER
from eagle3lint.index.model import to_json

REGISTRY = "vllm.model_executor.models.registry"
"""The module holding the model registry: which architectures there are to check."""
GATE_FILES = ("config/speculative.py", "config.py")
"""Where the model_type allow-list lives (`config.py` in 0.10's single-file config)."""
PROPOSER_FILES = ("v1/spec_decode/llm_base_proposer.py", "v1/spec_decode/eagle.py")
"""Where the proposer's image-token mapping and embedding sharing live (moved in 0.20)."""


@dataclass(frozen=True, slots=True)
class Gate:
    """The config-time model_type allow-list for EAGLE-3 (`config/speculative.py`)."""

    path: str
    line: int
    variable: str | None
    entries: tuple[str, ...]
    methods: tuple[str, ...]
    refusal: str | None = None
    """Why `fix` cannot add a model type to it (see `shapes.gate`); None when it can."""

    def accepts(self, model_type: str) -> bool:
        """vLLM's test: any entry is a substring of the text config's model_type."""
        return any(entry in model_type for entry in self.entries)


@dataclass(frozen=True, slots=True)
class ImageTokenBranch:
    classes: tuple[str, ...]
    attribute: str
    line: int


@dataclass(frozen=True, slots=True)
class ImageTokenMap:
    """Which target config attribute the EAGLE proposer reads as the image token, by class name."""

    path: str
    line: int
    branches: tuple[ImageTokenBranch, ...]
    fallback: str | None
    refusal: str | None = None
    """Why `fix` cannot add a branch for a class (see `shapes.image_tokens`); None when it can."""

    def attribute_for(self, class_name: str) -> str | None:
        for branch in self.branches:
            if class_name in branch.classes:
                return branch.attribute
        return self.fallback

    def names(self, class_name: str) -> bool:
        return any(class_name in branch.classes for branch in self.branches)


@dataclass(frozen=True, slots=True)
class TargetEmbedding:
    """What the EAGLE proposer's `load_model` takes from the target's language model to share
    with the drafter (at pipeline-parallel size 1): `<holder>`, its decoder, and the first of
    `embeddings` that decoder has."""

    path: str
    line: int
    holder: str
    embeddings: tuple[str, ...]
    holder_error: str | None
    """The proposer's own message when the language model has no `holder`; None: it reads the
    attribute unguarded, and Python's `AttributeError` is what users see."""
    embedding_error: str | None
    """The proposer's message when the decoder has none of `embeddings`; None: unguarded."""


@dataclass(frozen=True, slots=True)
class Contract:
    """What a target model must satisfy to run EAGLE-3 in one vLLM tree."""

    version: str | None
    source: str
    """Where it was read: `tree`, `installed vLLM`, `--vllm-version` or `newest known`."""
    root: str
    interfaces_module: str | None
    protocol: str | None
    """Qualified name of `SupportsEagle3`; None before the protocol existed (0.10)."""
    protocol_members: tuple[str, ...] = ()
    """Every name `isinstance(model, SupportsEagle3)` checks for."""
    default_methods: frozenset[str] = frozenset()
    """Protocol methods with a real default body (the rest are stubs)."""
    defaults_take_bare_decoder: bool = False
    """The defaults take the language model itself as the decoder when it has no `.model`
    (`getattr(parent_ref, "model", parent_ref)`, from vLLM 0.28); before, they assert that it
    has one."""
    setter: str = SETTER
    getter: str = KNOWN_GETTERS[0]
    getter_source: str = ""
    runtime_check: bool = False
    """The runner refuses a model without SupportsEagle3 (`supports_eagle3(...)`)."""
    unguarded_aux_calls: bool = False
    """The runner calls the aux-layer methods on every target, with no `supports_eagle3` check
    (0.10.0): a target without them fails with AttributeError after loading."""
    model_configs: frozenset[str] = frozenset()
    """Config classes of the registry mapping model_type to config (`_CONFIG_REGISTRY`): what a
    model's `config` is built as, unlike the sub-configs of its vision or audio tower."""
    mixin: str | None = None
    """Qualified name of `EagleModelMixin` when the defaults require it."""
    mixin_pp_relay: bool = False
    multimodal_protocol: str | None = None
    gate: Gate | None = None
    gate_location: str | None = None
    image_tokens: ImageTokenMap | None = None
    target_embedding: TargetEmbedding | None = None
    notes: tuple[str, ...] = field(default=())
    readable: bool = True
    """False when a file the contract depends on could not be read (nothing was checked)."""

    @property
    def required_methods(self) -> tuple[str, str]:
        return (self.setter, self.getter)

    @property
    def legacy_getters(self) -> tuple[str, ...]:
        return tuple(name for name in KNOWN_GETTERS if name != self.getter)

    @property
    def era(self) -> str:
        if not self.readable:
            return "unread"
        if self.protocol is None:
            return "pre-protocol"
        if self.mixin is None:
            return "stub-protocol"
        return "mixin-pp-relay" if self.mixin_pp_relay else "mixin-defaults"

    def describe(self) -> str:
        if not self.readable:
            return "contract not read (see the errors below)"
        parts = [self.era, f"getter {self.getter}"]
        if self.gate is not None:
            parts.append(f"gate {self.gate.variable or 'inline'}[{len(self.gate.entries)}]")
        else:
            parts.append("no model_type gate")
        if self.image_tokens is not None:
            parts.append(f"proposer {self.image_tokens.path}")
        return ", ".join(parts)

    def to_json(self) -> dict[str, object]:
        """The contract as the JSON report's `vllm.details` shows it (a public API): a view of
        the one serialisation of the contract, `index.model.to_json`."""
        data = to_json(self)
        tokens = data["image_tokens"]
        if tokens is not None:
            by_class = {cls: b["attribute"] for b in tokens["branches"] for cls in b["classes"]}
            tokens = {**tokens, "branches": by_class}
        shown = ("source", "protocol", "protocol_members", "default_methods", "getter")
        return {
            "era": self.era,
            **{name: data[name] for name in shown},
            "unguarded_aux_calls": data["unguarded_aux_calls"],
            "mixin": data["mixin"],
            "pp_relay": data["mixin_pp_relay"],
            "gate": _without(data["gate"], "refusal"),
            "image_tokens": _without(tokens, "refusal"),
            "target_embedding": data["target_embedding"],
        }


def _without(data: object, key: str) -> object:
    """`data` without `key` when it is a dict: facts kept for `fix`, not shown in reports."""
    return {k: v for k, v in data.items() if k != key} if isinstance(data, dict) else data
