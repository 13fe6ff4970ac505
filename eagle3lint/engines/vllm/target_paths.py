"""Which of vLLM's code paths runs a target: the model runner vLLM picks for it, and, for the
Transformers modeling backend, the transformers class its decoder is.

A mixin of `targets.Target`, which provides `arch`, `contract`, `index`, `mro`, `method`,
`init_assign` and `decoder_owner`.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from eagle3lint.engines import Platform
from eagle3lint.engines.vllm.contract.model import V2
from eagle3lint.engines.vllm.contract.setup import CUDA, Setup
from eagle3lint.engines.vllm.contract.transformers_backend import BACKEND_MODULE
from eagle3lint.engines.vllm.hf_models import (
    HfCapture,
    HfDecoder,
    auto_mappings,
    hf_capture,
    hf_decoder,
)
from eagle3lint.engines.vllm.names import AUTO_MODEL_BUILDER, DECODER_ATTR
from eagle3lint.index.refs import ClassRef

if TYPE_CHECKING:
    from eagle3lint.engines.vllm.targets import Target


class RunnerPaths:
    """The code-path facts of a target (see the module's docstring)."""

    @cached_property
    def runner(self: Target) -> str | None:
        """The model runner vLLM runs EAGLE-3 with for this architecture by default on the
        run's platform (`contract.setup`); None when the tree has no choice to make."""
        return self.runner_on(self.contract.setup)

    def runner_on(self: Target, setup: Setup) -> str | None:
        """The default runner on `setup`'s platform. Experts and quantization are the
        checkpoint's (`--hf-config`) when it is this architecture's; else experts are told by
        the class (`MixtureOfExperts`), where vLLM counts them in the checkpoint's config."""
        runners = self.contract.runners
        if runners is None or len(runners.present) < 2:
            return None
        names = {name.rsplit(".", 1)[-1] for name in self.decoder_owner.mro_names}
        names |= {name.rsplit(".", 1)[-1] for name in self.mro_names}
        kinds = frozenset(kind for kind, proto in MODEL_KINDS if proto in names)
        checkpoint = setup.checkpoint_of(self.arch)
        moe = checkpoint.experts if checkpoint is not None else None
        return runners.default_for(
            self.arch,
            moe=self._has_experts(names) if moe is None else moe,
            kinds=kinds,
            setup=setup,
            quantized=checkpoint is not None and checkpoint.quantized,
        )

    def _has_experts(self: Target, names: set[str]) -> bool:
        """vLLM asks the checkpoint's config for a number of experts (`get_num_experts`); a
        model whose code reads one of those attributes has them, as one whose class is a
        `MixtureOfExperts` (GPT-OSS reads `num_local_experts` without being one)."""
        runners = self.contract.runners
        keys = set(runners.expert_keys) if runners else set()
        owner = self.decoder_owner
        classes = [e for e in owner.mro if isinstance(e, ClassRef)]
        if owner.inner_model is not None:
            classes += owner.classes_of(owner.inner_model)
        reads = {name for ref in classes for name in ref.file.config_reads}
        return MOE_PROTOCOL in names or bool(keys & reads)

    @property
    def runner_choices(self: Target) -> tuple[str, ...]:
        runners = self.contract.runners
        return runners.present if runners else ()

    @cached_property
    def platform_runners(self: Target) -> dict[str, str]:
        """The runner on the platforms whose choice differs from the run's platform's (the
        verdict's): ROCm keeps V1 for its own list of architectures (0.30-0.31), and vLLM's CPU
        build has no Triton, which V2 needs."""
        setup = self.contract.setup
        if self.runner is None:
            return {}
        found = {p: self.runner_on(setup.on(p)) for p in map(str, Platform) if p != setup.platform}
        return {p: r for p, r in found.items() if r is not None and r != self.runner}

    def off_runner_note(self: Target, runners: tuple[str, ...]) -> str:
        choice = self.contract.runners
        if choice is None or self.runner is None:
            return ""
        only = " and ".join(f"model runner {r.upper()}" for r in runners)
        default = self.runner.upper()
        platform = self.contract.setup.platform
        elsewhere = [p for p, r in self.platform_runners.items() if r in runners]
        if platform != CUDA and elsewhere:
            # The platform, not the model, keeps this runner from the default here.
            return (
                f"(Only under {only}, which runs on {' and '.join(elsewhere)}, not by default on "
                f"{platform}, where {default} runs.)"
            )
        if choice.default == self.runner:
            when = choice.when_v1() if self.runner == V2 else "VLLM_USE_V2_MODEL_RUNNER=1"
        else:
            when = f"VLLM_USE_V2_MODEL_RUNNER={'0' if self.runner == V2 else '1'}"
        return f"(Only under {only}, which runs instead of the default {default} with {when}.)"

    @cached_property
    def builds_auto_model(self: Target) -> bool:
        """Its `self.model` is transformers' `AutoModel.from_config(...)`, built directly or by
        a method that returns it (vLLM's Transformers modeling backend)."""
        found = self.init_assign(DECODER_ATTR)
        callee = (found[1].callee or "") if found else ""
        if callee.startswith("self."):
            method = self.method(callee.removeprefix("self."))
            callee = (method[1].returns_call or "") if method else ""
        return callee.endswith(AUTO_MODEL_BUILDER)

    def auto_model(self: Target, model_type: str | None) -> HfDecoder | str:
        """The transformers class `AutoModel.from_config` builds for the checkpoint: of
        `model_type` (the checkpoint's), else of the model_type transformers' auto mappings give
        this architecture's name; or why it is not known here."""
        if model_type is None:
            mappings = auto_mappings(self.index)
            if isinstance(mappings, str):
                return mappings
            model_type = mappings.model_types.get(self.arch)
            if model_type is None:
                return f"transformers names no model_type for {self.arch}: the checkpoint's decides"
        return hf_decoder(self.index, model_type)

    def backend_capture(self: Target, model_type: str | None) -> HfCapture | str | None:
        """What the Transformers backend's `set_aux_hidden_state_layers` meets for this target:
        None when the target is not the backend's (its decoder is no `AutoModel`, or its setter
        is not the backend's), the reason when transformers' class is not known here."""
        capture = self.contract.backend_capture
        setter = self.method(self.contract.setter)
        if capture is None or setter is None or not self.builds_auto_model:
            return None
        if not setter[0].file.module.endswith(BACKEND_MODULE):
            return None
        decoder = self.auto_model(model_type)
        return decoder if isinstance(decoder, str) else hf_capture(self.index, decoder, capture)


MODEL_KINDS = (("hybrid", "IsHybrid"), ("attention-free", "IsAttentionFree"))
"""The interfaces that make vLLM's `is_hybrid` and `is_attention_free` true for a class."""
MOE_PROTOCOL = "MixtureOfExperts"
