"""Targets: the classes vLLM instantiates for each registered architecture, and what they hold.

A target bundles what every rule needs: the class and its resolved MRO, the inner decoder that
runs the layer loop, the language model of a multimodal wrapper, and the per-platform variants
a `vllm/models/<family>` package chooses between.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from eagle3lint.config_classes import ConfigFacts, config_facts
from eagle3lint.engines import Role
from eagle3lint.engines.vllm.contract.draft_archs import is_draft_architecture
from eagle3lint.engines.vllm.contract.model import KNOWN_GETTERS, Contract
from eagle3lint.engines.vllm.decoder_layers import layer_classes, layer_conventions
from eagle3lint.engines.vllm.hf_models import sub_config_architecture
from eagle3lint.engines.vllm.names import AUX_LAYERS_ATTR, DECODER_ATTR, LANGUAGE_MODEL_ATTR
from eagle3lint.engines.vllm.pp_relay import PpRelay, pp_relay
from eagle3lint.engines.vllm.registry import class_for_arch, registered_architectures
from eagle3lint.engines.vllm.target_paths import RunnerPaths
from eagle3lint.index.model import ForwardSummary, InitAssign, MethodSummary
from eagle3lint.index.project import ProjectIndex
from eagle3lint.index.refs import ClassRef, ExternalRef
from eagle3lint.shapes.model import LayerConvention
from eagle3lint.shapes.plan import TapPlan, plan_tap

MAX_WRAPPER_DEPTH = 4
DRAFT_SECTION = re.compile(r"SPECULATIVE", re.IGNORECASE)
"""The registry dict of speculative-decoding models (`_SPECULATIVE_DECODING_MODELS`)."""
POOLING_SECTION = re.compile(
    r"EMBEDDING|CROSS_ENCODER|LATE_INTERACTION|REWARD|CLASSIFICATION|POOLING", re.IGNORECASE
)
"""Registry dicts of pooling models (embedding, scoring, reward, classification)."""
GENERATION_METHOD = "compute_logits"
"""What vLLM's `is_text_generation_model` looks for on the class."""
POOLING_MARKER = "is_pooling_model"
"""The class attribute vLLM's registry reads (`getattr(cls, "is_pooling_model", False)`) to tell
a pooling model; `VllmModelForPooling` and the pooling adapters set it."""


@dataclass
class Target(RunnerPaths):
    """One architecture as vLLM would build it."""

    arch: str
    ref: ClassRef
    index: ProjectIndex
    contract: Contract
    variant: str | None = None
    """The platform this class is chosen for, when its package picks one per platform."""
    variants: dict[str, ClassRef] = field(default_factory=dict)
    registered: bool = True
    depth: int = 0
    section: str = ""
    """The registry dict that lists this architecture ("" when not registered)."""

    @cached_property
    def mro(self) -> list[ClassRef | ExternalRef]:
        return self.index.mro(self.ref)

    @cached_property
    def mro_names(self) -> set[str]:
        return {e.qualname if isinstance(e, ClassRef) else e.text for e in self.mro}

    def inherits(self, qualname: str | None) -> bool:
        return qualname is not None and qualname in self.mro_names

    @cached_property
    def implements_eagle3(self) -> bool:
        """What vLLM's `supports_eagle3()` answers: every protocol member is on the class."""
        if self.contract.protocol is None:
            return False
        if self.inherits(self.contract.protocol):
            return True
        return all(self.has_attribute(name) for name in self.contract.protocol_members)

    def has_attribute(self, name: str) -> bool:
        for entry in self.mro:
            if isinstance(entry, ClassRef):
                attr = entry.cls.attrs.get(name)
                if name in entry.cls.methods or (attr is not None and attr.has_value):
                    return True
        return False

    @cached_property
    def role(self) -> Role:
        """What vLLM runs the class as (`ModelConfig`'s default runner): a draft when the
        registry lists it with the speculative-decoding models, or when the speculative config
        gives a draft its architecture (the Transformers backend's `TransformersForMTP`, listed
        in the backend's own table); pooling when the class says so
        the way vLLM's registry asks (`is_pooling_model` through the MRO, set by
        `VllmModelForPooling` and the pooling adapters); a target when it is generative
        (`compute_logits`); otherwise pooling if a pooling section of the registry lists it
        (vLLM converts such a bare model with a pooling adapter at load time)."""
        if DRAFT_SECTION.search(self.section) or (
            self.registered and is_draft_architecture(self.arch, self.contract.draft_architectures)
        ):
            return Role.DRAFT
        for entry in self.mro:
            if isinstance(entry, ClassRef):
                attr = entry.cls.attrs.get(POOLING_MARKER)
                if attr is not None and attr.has_value:
                    if attr.value == "True":
                        return Role.POOLING
                    break
        if self.method(GENERATION_METHOD) is None and POOLING_SECTION.search(self.section):
            return Role.POOLING
        return Role.TARGET

    def role_note(self) -> str:
        """Why vLLM gives a draft or a pooling model no target verdict."""
        if self.role is Role.DRAFT:
            return (
                "vLLM loads it only as a drafter (the registry lists it with the "
                "speculative-decoding models, or the speculative config gives a draft its "
                "architecture); `eagle3lint pair` checks it against a target"
            )
        return (
            "its class is a pooling model (`is_pooling_model`), which vLLM runs with the "
            "pooling runner, and that runner takes no drafter"
        )

    @property
    def implements_eagle1(self) -> bool:
        protocol = self.contract.protocol
        return protocol is not None and self.inherits(protocol.replace("Eagle3", "Eagle"))

    @property
    def is_multimodal(self) -> bool:
        return self.inherits(self.contract.multimodal_protocol)

    def method(self, name: str) -> tuple[ClassRef, MethodSummary] | None:
        """The implementation `name` resolves to through the MRO (protocol stubs included)."""
        for entry in self.mro:
            if isinstance(entry, ClassRef) and name in entry.cls.methods:
                return entry, entry.cls.methods[name]
        return None

    def classes_of(self, ref: ClassRef) -> list[ClassRef]:
        """The analysed classes in the MRO of `ref` (a class this target reaches, such as its
        inner decoder), nearest first; bases outside the analysed trees are left out."""
        return [e for e in self.index.mro(ref) if isinstance(e, ClassRef)]

    def forward_of(self, ref: ClassRef) -> tuple[ClassRef, ForwardSummary] | None:
        """The `forward` that `ref` runs, its own or the nearest inherited one, with the class
        that defines it."""
        return self.index.forward_of(ref)

    def layer_conventions(self, decoder: ClassRef) -> list[LayerConvention]:
        """What the layers `decoder` (a class this target reaches) builds return: Llama-style
        `(delta, residual)` or the whole stream (see `eagle3lint.shapes`)."""
        return layer_conventions(self.index, decoder)

    def tap_plan(
        self, decoder: ClassRef, where: ClassRef, forward: ForwardSummary, *, mixin: bool
    ) -> TapPlan:
        """How `fix` would tap `decoder`, whose forward (defined on `where`) is `forward`, or
        why it would refuse."""
        return decoder_tap_plan(self.index, decoder, where, forward, mixin=mixin)

    def imported_class(self, name: str) -> ClassRef | None:
        """The analysed class that `name`, imported into this target's file, resolves to."""
        found = self.imported(name)
        return found if isinstance(found, ClassRef) else None

    def imported(self, name: str, where: ClassRef | None = None) -> ClassRef | ExternalRef | None:
        """What `name`, as the file of `where` (default: this target's class) binds it, resolves
        to: a class of the analysed trees (or of the library sources the index reads), else its
        dotted name; None for a module."""
        found = self.index.resolve((where or self.ref).file.module, name)
        return found if isinstance(found, ClassRef | ExternalRef) else None

    def config_facts(self, ref: ClassRef | ExternalRef) -> ConfigFacts | str:
        """The attributes config class `ref` declares (`eagle3lint.config_classes`), read from
        the tree or from transformers' sources; else why they could not be read."""
        return config_facts(self.index, ref)

    def init_assign(self, attr: str) -> tuple[ClassRef, InitAssign] | None:
        for entry in self.mro:
            if isinstance(entry, ClassRef) and attr in entry.cls.init_assigns:
                return entry, entry.cls.init_assigns[attr]
        return None

    def _built_class(self, attr: str) -> ClassRef | None:
        """The class whose instance `__init__` stores in `self.<attr>`: for a class-valued
        `__init__` parameter, the one a subclass passes up to `super().__init__`, else its
        default."""
        found = self.init_assign(attr)
        if found is None or found[1].callee is None:
            return None
        owner, assign = found
        for entry in self.mro if assign.param is not None else ():
            if entry == owner:
                break
            if isinstance(entry, ClassRef) and assign.param in entry.cls.super_init_classes:
                return self.index.resolve_callee(
                    self.mro, entry, entry.cls.super_init_classes[assign.param]
                )
        return self.index.resolve_callee(self.mro, owner, assign.callee)

    def renamed_layers(self) -> list[tuple[ClassRef, str]]:
        """Where the decoder in `self.model` names modules with a layer index past its layer
        count (`ClassSummary.renamed_layers`): the decoder, its layer classes and the classes
        of their file those build in `__init__` (the attention), each with the index as
        written. Parts are looked for only beside the class that builds them: following every
        callee into other files parsed a tenth more of a release for no model known to need it."""
        decoder = self.inner_model
        if decoder is None:
            return []
        layers = layer_classes(self.index, decoder)
        owners = [
            *self.classes_of(decoder),
            *(c for layer in layers for c in self.classes_of(layer)),
        ]
        built = [
            ClassRef(owner.file, owner.file.classes[assign.callee])
            for owner in owners
            for assign in owner.cls.init_assigns.values()
            if assign.callee in owner.file.classes and assign.callee not in owner.file.unread
        ]
        seen = {each.qualname: each for each in (*owners, *built)}
        return [(each, index) for each in seen.values() for index in each.cls.renamed_layers]

    def part(self, attr: str) -> Target | None:
        """The class whose instance `__init__` stores in `self.<attr>`, as a target of its own
        (unregistered); None when that cannot be resolved."""
        built = self._built_class(attr)
        if built is None:
            return None
        return Target(built.name, built, self.index, self.contract, registered=False)

    @cached_property
    def inner_model(self) -> ClassRef | None:
        """The decoder in `self.model` that runs the layer loop; for the language model of a
        wrapper that is itself a bare decoder (Kimi-K2.5 on 0.15 holds a DeepseekV2Model),
        that class."""
        built = self._built_class("model")
        if built is None and self.is_bare_decoder:
            return self.ref
        return built

    @cached_property
    def is_bare_decoder(self) -> bool:
        """A wrapper's language model that runs the layer loop in its own forward."""
        if self.depth == 0 or self.init_assign(DECODER_ATTR) is not None:
            return False
        found = self.index.forward_of(self.ref)
        return found is not None and bool(found[1].loops)

    @cached_property
    def language_model(self) -> Target | None:
        """For a multimodal wrapper: the model built in `self.language_model`."""
        return self._built_in(LANGUAGE_MODEL_ATTR)

    @cached_property
    def marked_language_model(self) -> Target | None:
        """The model vLLM's default `get_language_model` returns: `self.language_model`, else
        the one attribute `__init__` builds under `with self._mark_language_model(...)`
        (Phi-4-multimodal's `self.model`, its decoder itself)."""
        if self.language_model is not None:
            return self.language_model
        marks = {
            name
            for entry in self.mro
            if isinstance(entry, ClassRef)
            for name in entry.cls.language_model_marks
        }
        return self._built_in(marks.pop()) if len(marks) == 1 else None

    def configured_language_model(self, hf_config: Mapping[str, Any] | None) -> Target | None:
        """The language model `get_language_model` returns for the checkpoint `hf_config`
        describes: the marked one, else the one `__init__` builds from a sub-config of it
        (`init_vllm_registered_model(hf_config=config.text_config)`: BLIP-2's OPT or T5), the
        architecture that sub-config names (`hf_models.sub_config_architecture`)."""
        found = self.marked_language_model
        if found is not None or not hf_config or self.depth >= MAX_WRAPPER_DEPTH:
            return found
        built = self.init_assign(LANGUAGE_MODEL_ATTR)
        if built is None or built[1].architectures or built[1].config_part is None:
            return None
        arch = sub_config_architecture(self.index, hf_config.get(built[1].config_part))
        ref = class_for_arch(self.index, arch) if arch else None
        if arch is None or ref is None:
            return None
        return Target(arch, ref, self.index, self.contract, registered=False, depth=self.depth + 1)

    def _built_in(self, attr: str) -> Target | None:
        """The model `__init__` builds in `self.<attr>`: by the architecture it names, else
        by the class it calls."""
        if self.depth >= MAX_WRAPPER_DEPTH:
            return None
        found = self.init_assign(attr)
        if found is None:
            return None
        owner, assign = found
        ref: ClassRef | None = None
        arch = assign.architectures[0] if assign.architectures else None
        if arch is not None:
            ref = class_for_arch(self.index, arch)
        elif assign.callee is not None:
            ref = self.index.resolve_callee(self.mro, owner, assign.callee)
        if ref is None:
            return None
        return Target(
            arch or ref.name, ref, self.index, self.contract, registered=False, depth=self.depth + 1
        )

    @cached_property
    def calls_language_model_methods(self) -> bool:
        """The runner's aux-layer calls on this wrapper reach its language model's own methods:
        one of them delegates (`self.language_model.<name>(...)`), or is missing with no
        protocol default to stand in (the delegation `fix` adds). False when the wrapper's
        methods, its own or the protocol defaults, go to the decoder directly (Qwen3-VL's
        `self.language_model.model.aux_hidden_state_layers = layers`)."""
        contract = self.contract
        for name in contract.required_methods:
            found = self.method(name)
            if found is None:
                if name not in contract.default_methods:
                    return True
                continue
            ref, method = found
            if method.is_stub:
                return True
            if ref.file.module == contract.interfaces_module and ref.cls.is_protocol:
                continue
            if (method.delegates_to or "").startswith(LANGUAGE_MODEL_ATTR) or (
                "get_language_model" in method.calls_self
            ):
                return True
        return False

    @cached_property
    def is_candidate(self) -> bool:
        """Worth an EAGLE-3 to-do list: claims EAGLE support or owns a decoder layer loop."""
        owner = self.decoder_owner
        if self.implements_eagle3 or owner.implements_eagle3 or self.implements_eagle1:
            return True
        return self.has_layer_loop

    @cached_property
    def is_module(self) -> bool:
        """An `nn.Module` (something vLLM can instantiate as a model), by its MRO."""
        return any(
            isinstance(e, ExternalRef) and e.text.split(".")[-1] == "Module" for e in self.mro
        )

    @cached_property
    def claims_eagle3(self) -> bool:
        """Whether the code says this target is meant to run EAGLE-3: SupportsEagle3 in its MRO,
        an aux-layer method of its own or inherited from a model class (not the protocol's
        stub), or a decoder that taps aux hidden states. A target claiming none of these is
        not broken, only not EAGLE-3 capable (see `engine.apply_intent`)."""
        if self.implements_eagle3:
            return True
        names = {self.contract.setter, *KNOWN_GETTERS}
        for entry in self.mro:
            if not isinstance(entry, ClassRef):
                continue
            protocol = (
                entry.cls.is_protocol and entry.file.module == self.contract.interfaces_module
            )
            if not protocol and names & entry.cls.methods.keys():
                return True
        return self.has_taps

    @cached_property
    def has_taps(self) -> bool:
        """Its own decoder (`self.model`) collects aux hidden states somewhere in forward; a
        wrapper's language model tapping its layers is that model's claim, not the wrapper's,
        and a forward written in another model's file is that model's claim: vLLM 0.33's
        Glm4Model runs LlamaModel's, Phi-4-multimodal builds a LlamaModel; Llama claims
        EAGLE-3, they do not."""
        inner = self.inner_model
        found = self.index.forward_of(inner) if inner is not None else None
        own_files = {e.file.module for e in self.mro if isinstance(e, ClassRef)}
        if found is None or found[0].file.module not in own_files:
            return False
        forward = found[1]
        return bool(forward.pre_loop_taps) or any(loop.taps for loop in forward.loops)

    @cached_property
    def has_layer_loop(self) -> bool:
        """The decoder this target reaches runs a loop over `self.layers` (so it can be tapped)."""
        inner = self.decoder_owner.inner_model
        found = self.index.forward_of(inner) if inner is not None else None
        return found is not None and bool(found[1].loops)

    def other_variants(self) -> list[Target]:
        """The classes its package would choose on other platforms, as targets, by platform."""
        return [
            Target(self.arch, ref, self.index, self.contract, variant=platform)
            for platform, ref in sorted(self.variants.items())
            if ref != self.ref
        ]

    def repair_owner(self) -> Target:
        """The class to edit: the one in the MRO that builds the decoder (`self.model`), so that
        subclasses such as DeepseekV3ForCausalLM inherit the support, else the class itself."""
        found = self.init_assign(DECODER_ATTR)
        if found is None or found[0] == self.ref:
            return self
        return Target(found[0].name, found[0], self.index, self.contract, registered=False)

    def modules(self) -> set[str]:
        """Every module whose code decides this target's verdict."""
        found = {e.file.module for e in self.mro if isinstance(e, ClassRef)}
        if self.inner_model is not None:
            found |= {
                e.file.module for e in self.index.mro(self.inner_model) if isinstance(e, ClassRef)
            }
        if self.language_model is not None:
            found |= self.language_model.modules()
        found |= {ref.file.module for ref in self.variants.values()}
        return found

    def depends_on(self) -> set[str]:
        """`modules()` plus what could not be resolved into it: the modules its files import
        and the registry's module for a language model built by architecture name (a file that
        does not parse breaks the chain, but the target still depends on it)."""
        found = self.modules()
        for module in list(found):
            summary = self.index.summary(module)
            for local in summary.imports if summary else ():
                ref = self.index.imported(summary, local)
                assert ref is not None
                found.add(ref.module)
                if ref.name:
                    found.add(f"{ref.module}.{ref.name}")
        assigned = self.init_assign(LANGUAGE_MODEL_ATTR)
        names = set(assigned[1].architectures) if assigned else set()
        found |= {e.module for e in registered_architectures(self.index) if e.arch in names}
        return found

    @property
    def decoder_owner(self) -> Target:
        """The model whose `self.model` is the decoder: the language model of a wrapper."""
        return self.language_model or self

    @cached_property
    def pp_aux_relay(self) -> bool | None:
        """The decoder relays aux hidden states across pipeline-parallel ranks, as the runner
        requires for EAGLE-3 with PP > 1: it declares so and the forward that runs does it
        (`pp_relay`); None where the release has no relay."""
        if not self.contract.mixin_pp_relay:
            return None
        return self.pp_relay.relays

    @cached_property
    def pp_relay(self) -> PpRelay:
        """What the decoder declares of the relay and which forward breaks it, if one does."""
        inner = self.decoder_owner.inner_model
        return pp_relay(self.index, inner) if inner is not None else PpRelay(None)


def decoder_tap_plan(
    index: ProjectIndex, inner: ClassRef, where: ClassRef, forward: ForwardSummary, *, mixin: bool
) -> TapPlan:
    """How `fix` taps the decoder `inner`, whose forward (defined on `where`) is `forward`."""
    return plan_tap(
        [each.shape for each in forward.loops],
        layer_conventions(index, inner),
        loop_helper=forward.loop_helper,
        ends_with_return_name=forward.ends_with_return_name,
        mixin=mixin,
        has_init="__init__" in where.cls.methods or _inherits_aux_layers(index, where),
    )


def _inherits_aux_layers(index: ProjectIndex, where: ClassRef) -> bool:
    """Whether a base of `where` initialises `self.aux_hidden_state_layers` (MiMo's decoder
    keeps Qwen2's `__init__`): the tap then needs no `__init__` of its own."""
    return any(
        isinstance(base, ClassRef) and AUX_LAYERS_ATTR in base.cls.init_assigns
        for base in index.mro(where)[1:]
    )
