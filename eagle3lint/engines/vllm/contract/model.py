"""The EAGLE-3 target contract of one vLLM tree, as one object the rules consult.

Rules never test a version number: they ask the contract what this tree's interfaces, runner,
gate and proposer require. The reader fills it from the analysed tree's own sources.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from eagle3lint.engines.vllm.contract.setup import ROCM, Setup
from eagle3lint.engines.vllm.layout import REGISTRY as REGISTRY  # re-exported
from eagle3lint.engines.vllm.names import KNOWN_GETTERS, SETTER
from eagle3lint.index.model import to_json

GATE_FILES = ("config/speculative.py", "config.py")
"""Where the model_type allow-list lives (`config.py` in 0.10's single-file config)."""
PROPOSER_FILES = ("v1/spec_decode/llm_base_proposer.py", "v1/spec_decode/eagle.py")
"""Where the proposer's image-token mapping and embedding sharing live (moved in 0.20)."""
V2_EAGLE_LOADER = "v1/worker/gpu/spec_decode/eagle/utils.py"
"""Where model runner V2 loads the EAGLE drafter and shares the target's embedding."""


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
    error: str | None = None
    """The first words of the `ValueError` it raises, as the release writes them
    (`{self.method} is only supported for [...] models`); None when not found."""

    def refused(self, method: str) -> str:
        """The error message a user of `method` reads, with the list elided."""
        text = self.error or "Eagle3 is only supported for [...] models"
        return text.replace("{self.method}", method)

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


V1 = "v1"
"""Model runner V1 (`v1/worker/gpu_model_runner.py`, proposer `v1/spec_decode/`)."""
V2 = "v2"
"""Model runner V2 (`v1/worker/gpu/model_runner.py`, speculators `v1/worker/gpu/spec_decode/`)."""
CUDA_SETUP = Setup()
"""CUDA, vLLM's default platform, with no checkpoint given."""


@dataclass(frozen=True, slots=True)
class Runners:
    """The model runners of a tree that run EAGLE-3, and how vLLM picks one by default
    (`VllmConfig.use_v2_model_runner` in `config/vllm.py`) for the plain EAGLE-3 setup: by
    model, then by platform (`default_for`)."""

    present: tuple[str, ...]
    """`v1`, `v2` or both, oldest first."""
    default: str
    """The default runner on CUDA of an architecture no list below names."""
    path: str = ""
    line: int = 0
    """Where the choice is made; empty when the tree has no choice to make."""
    v2_architectures: tuple[str, ...] = ()
    """Architectures run by V2 by default while others are not (0.22-0.25)."""
    v2_for_dense: bool = False
    """Any model without experts runs V2 too (0.25: `or not model_config.is_moe`)."""
    v2_needs_dense: bool = False
    """A listed architecture runs V2 only without experts (0.22-0.24)."""
    v1_for_kinds: tuple[str, ...] = ()
    """Model kinds the default never runs on V2 (`hybrid`, `attention-free`)."""
    expert_keys: tuple[str, ...] = ()
    """The config attributes vLLM counts experts by (`get_num_experts`), where the choice
    depends on whether the model has experts."""
    checkpoint_conditions: tuple[str, ...] = ()
    """What of the checkpoint also keeps V1 (`quantized`), unknown without its config."""
    rocm_v1_architectures: tuple[str, ...] = ()
    """Architectures ROCm runs on V1 (0.30-0.31)."""
    v1_without_triton: bool = False
    """No Triton (vLLM's CPU build) means V1."""
    v1_features: tuple[str, ...] = ()
    """What V2 lacks, so that V1 runs instead (`_get_v2_model_runner_unsupported_features`)."""
    v2_pp_needs_relay: bool = False
    """V2 refuses pipeline parallelism for a decoder that does not relay its aux hidden states
    (`verify_supports_aux_hidden_states_over_pp`, 0.30 on)."""

    def default_for(
        self,
        arch: str,
        *,
        moe: bool,
        kinds: frozenset[str],
        setup: Setup = CUDA_SETUP,
        quantized: bool = False,
    ) -> str:
        """The runner vLLM picks for `arch` on `setup`'s platform, given whether it has experts,
        which model kinds (`hybrid`, `attention-free`) it is and whether its checkpoint is
        quantized."""
        if len(self.present) == 1:
            return self.present[0]
        chosen = self._model_choice(arch, moe, kinds, quantized)
        if chosen == V2 and not setup.triton and self.v1_without_triton:
            return V1
        if chosen == V2 and setup.platform == ROCM and arch in self.rocm_v1_architectures:
            return V1
        return chosen

    def _model_choice(self, arch: str, moe: bool, kinds: frozenset[str], quantized: bool) -> str:
        """The runner the model decides, before the platform has its say."""
        if not self.v2_architectures and not self.v2_for_dense:
            return self.default
        if kinds & set(self.v1_for_kinds):
            return V1
        dense = not moe and not (quantized and "quantized" in self.checkpoint_conditions)
        listed = arch in self.v2_architectures and (dense or not self.v2_needs_dense)
        return V2 if listed or (self.v2_for_dense and not moe) else V1

    def when_v1(self) -> str:
        """When V1 runs although V2 is the default, for messages."""
        reasons = ["VLLM_USE_V2_MODEL_RUNNER=0"]
        if self.v1_without_triton:
            reasons.append("no Triton (vLLM's CPU build)")
        # Other speculative methods than the ones this contract gates are not the user's case.
        lacks = [f for f in self.v1_features if not f.startswith("speculative method")]
        if lacks:
            shown = ", ".join(lacks[:3])
            more = f", {len(lacks) - 3} more" if len(lacks) > 3 else ""
            reasons.append(f"what V2 lacks: {shown}{more}")
        return "; ".join(reasons)


@dataclass(frozen=True, slots=True)
class TargetEmbedding:
    """What the EAGLE proposer's `load_model` takes from the target's language model to share
    with the drafter (at pipeline-parallel size 1): `<holder>`, its decoder, and the first of
    `embeddings` that decoder has."""

    runner: str
    """The model runner whose proposer reads it."""
    path: str
    line: int
    holder: str
    embeddings: tuple[str, ...]
    holder_error: str | None
    """The proposer's own message when the language model has no `holder`; None: it reads the
    attribute unguarded, and Python's `AttributeError` is what users see."""
    embedding_error: str | None
    """The proposer's message when the decoder has none of `embeddings`; None: unguarded."""
    embedding_exception: str = "AttributeError"
    """What a missing embedding raises; "": nothing, the drafter keeps its own."""
    unless_head_has: str | None = None
    """The drafter's flag that, when true, makes the proposer keep the head's own embedding
    rather than raise (`has_own_embed_tokens`, V2 from 0.30); None: it raises whatever the
    head has."""


@dataclass(frozen=True, slots=True)
class Refusal:
    """How a model runner refuses a target that is not a SupportsEagle3: the error after
    `supports_eagle3(model)` is false, as its code writes it."""

    runner: str
    path: str
    line: int
    exception: str
    message: str
    before_proposer: bool
    """The runner asks before its proposer loads the drafter (V2): a target that is not a
    SupportsEagle3 stops here, before the proposer reads its decoder and embedding. V1 loads
    the drafter first."""

    def quoted(self) -> str:
        """The error as a user reads it: `RuntimeError: '...'`."""
        return f"{self.exception}: '{self.message}'"


@dataclass(frozen=True, slots=True)
class BackendCapture:
    """How the Transformers modeling backend records the aux hidden states
    (`set_aux_hidden_state_layers` of `model_executor/models/transformers/base.py`)."""

    path: str
    line: int
    recorder_module: str | None
    """The transformers module it imports `OutputRecorder` from."""
    min_transformers: str | None
    """The transformers version it checks for before capturing (`check_version`)."""
    version_error: str | None
    """The `ImportError` that check raises, f-string fields as written."""
    input_offset: int
    """It records the input of layer `id - input_offset` (1: id 0 names no layer)."""
    layer_count: str | None
    """The text config's attribute the layer list's length must equal (`num_hidden_layers`)."""


@dataclass(frozen=True, slots=True)
class HeadLayerNames:
    """How vLLM's EAGLE-3 head names its layers: after the target's, from index
    `start_layer_id` = the target's layer count (`model_executor/models/llama_eagle3.py`), in
    the same table of layer names as the target's, which refuses a name twice."""

    path: str
    line: int
    """Where the head is given the target's layer count as its first index."""
    count: str
    """What that count is read with, as written (`get_num_layers`)."""
    refusal_path: str
    refusal_line: int
    refusal: str
    """The exception and the message's text before the layer name
    (`ValueError: Duplicate layer name: `)."""


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
    """Read from V1's proposer: V2 reads no image token."""
    target_embeddings: tuple[TargetEmbedding, ...] = ()
    """What each runner's proposer takes from the target, V1's first."""
    runners: Runners | None = None
    refusals: tuple[Refusal, ...] = ()
    """How each runner refuses a target that is not a SupportsEagle3, V1's first."""
    backend_capture: BackendCapture | None = None
    """How the Transformers modeling backend captures; None where it cannot."""
    head_layers: HeadLayerNames | None = None
    """How the EAGLE-3 head names its layers; None where the tree does not say."""
    methods: tuple[str, ...] = ()
    """The speculative methods that make the runner request the target's aux hidden states
    (so this contract gates them all), as the tree's runners test them."""
    draft_architectures: tuple[str, ...] = ()
    """The architectures the speculative config gives a draft (`fnmatch` patterns,
    `contract/draft_archs.py`): drafts wherever the registry lists them."""
    setup: Setup = CUDA_SETUP
    """The platform and checkpoint the verdicts are for (`--platform`, the installed build,
    `--hf-config`): not read from the tree, set for the run (`setup.setup_for`)."""
    notes: tuple[str, ...] = field(default=())
    readable: bool = True
    """False when a file the contract depends on could not be read (nothing was checked)."""

    @property
    def target_embedding(self) -> TargetEmbedding | None:
        """What the oldest runner's proposer takes from the target (the JSON report's
        `target_embedding`)."""
        return self.target_embeddings[0] if self.target_embeddings else None

    def embedding_for(self, runner: str) -> TargetEmbedding | None:
        """What `runner`'s proposer takes from the target, else another runner's."""
        for each in self.target_embeddings:
            if each.runner == runner:
                return each
        return self.target_embedding

    def refusal_for(self, runner: str | None) -> Refusal | None:
        """How `runner` refuses a target that is not a SupportsEagle3; with no runner named
        (the tree has one), the only one read."""
        for each in self.refusals:
            if each.runner == runner:
                return each
        return self.refusals[0] if runner is None and len(self.refusals) == 1 else None

    @property
    def image_token_runners(self) -> tuple[str, ...]:
        """The runners whose proposer reads the image-token attribute; () when only one runs."""
        present = self.runners.present if self.runners else ()
        return (V1,) if V2 in present else ()

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
            "target_embedding": to_json(self.target_embedding),
            "runners": data["runners"],
            "refusals": data["refusals"],
            "platform": self.setup.to_json(),
            "methods": data["methods"],
        }


def _without(data: object, key: str) -> object:
    """`data` without `key` when it is a dict: facts kept for `fix`, not shown in reports."""
    return {k: v for k, v in data.items() if k != key} if isinstance(data, dict) else data
