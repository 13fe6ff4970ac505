"""EAG1xx protocol-inheritance: the class vLLM instantiates must be a `SupportsEagle3`."""

from __future__ import annotations

from collections.abc import Iterator

from eagle3lint.api import (
    AddProtocolBase,
    Code,
    Example,
    Expected,
    Explanation,
    Finding,
    Rule,
    RuleContext,
    Severity,
    Target,
)

_RUNTIME_CHECK = (
    "vLLM asks the target for aux hidden states when the drafter is EAGLE-3 (unless its "
    "`eagle_config` sets `use_aux_hidden_state` to false), and for `extract_hidden_states` "
    "(0.17.0+) and `dflash` (0.20.0+). Right after loading the target's weights the model runner "
    "checks `supports_eagle3(model)`: an `isinstance` test against the runtime-checkable "
    "`SupportsEagle3` protocol, made on the top-level model class it serves "
    "(`GPUModelRunner.load_model`, from 0.22.0 `_setup_eagle3_aux_hidden_state_outputs`; the V2 "
    "runner's `set_eagle3_aux_hidden_state_layers` from 0.17.0)."
)
_RUNTIME_ERROR = (
    "```text\nRuntimeError: Model does not support EAGLE3 interface but aux_hidden_state_outputs "
    "was requested\n```\nThe V2 model runner raises `RuntimeError: Model does not support EAGLE3 "
    "interface`. Either comes after the whole weight load; a report quotes the one of the runner "
    "that runs the target (V2 by default from 0.30.0, the only one in 0.34.0), as that runner's "
    "code writes it."
)

_EAG101 = Explanation(
    runtime=_RUNTIME_CHECK,
    error=_RUNTIME_ERROR,
    releases="0.11.0 and later (0.10.0 had no protocol and called the methods unchecked). "
    "DeepseekV2ForCausalLM, which serves DeepSeek-V2/V3 and Kimi-K2, only implements "
    "SupportsEagle (EAGLE-1/2) before 0.18.0.",
    example="""\
from vllm.model_executor.models.interfaces import SupportsEagle, SupportsPP


class MyModelForCausalLM(nn.Module, SupportsPP, SupportsEagle): ...
""",
    fix="""\
from vllm.model_executor.models.interfaces import SupportsEagle, SupportsEagle3, SupportsPP


class MyModelForCausalLM(nn.Module, SupportsPP, SupportsEagle, SupportsEagle3):
    # with the aux-layer methods (EAG2xx) and the forward taps (EAG3xx) the release needs
    ...
""",
)

_EAG102 = Explanation(
    runtime=_RUNTIME_CHECK
    + " For a multimodal model that class is the wrapper (`...ForConditionalGeneration`), not "
    "the language model inside it: only the wrapper's own bases count.",
    error=_RUNTIME_ERROR,
    releases="0.11.0 and later. KimiK25ForConditionalGeneration (Kimi-K2.5) is not a "
    "SupportsEagle3 before 0.18.0.",
    example="""\
class KimiK25ForConditionalGeneration(nn.Module, SupportsMultiModal, SupportsPP, SupportsQuant):
    def __init__(self, *, vllm_config, prefix=""):
        ...
        self.language_model = DeepseekV2ForCausalLM(...)
""",
    fix="""\
class KimiK25ForConditionalGeneration(
    nn.Module, SupportsMultiModal, SupportsPP, SupportsQuant, SupportsEagle3
):
    ...

    # The names of 0.11.0-0.17.0; later releases call get_eagle3_default_aux_hidden_state_layers.
    def set_aux_hidden_state_layers(self, layers: tuple[int, ...]) -> None:
        self.language_model.set_aux_hidden_state_layers(layers)

    def get_eagle3_aux_hidden_state_layers(self) -> tuple[int, ...]:
        return self.language_model.get_eagle3_aux_hidden_state_layers()
""",
)

_EAG103 = Explanation(
    runtime="The runner's aux-layer calls go to the wrapper, which passes them on to its "
    "language model; the language model's decoder is what taps the layers. When the language "
    "model class has no EAGLE-3 support, the calls reach nothing that sets or taps a layer.",
    error="`AttributeError: 'DeepseekV2ForCausalLM' object has no attribute "
    "'set_aux_hidden_state_layers'` when the wrapper delegates explicitly; with the protocol "
    "defaults of 0.18.0+, `AssertionError: Model instance must inherit from EagleModelMixin to "
    "set auxiliary layers`. Both after the weight load.",
    releases="0.11.0 and later. Kimi-VL and Kimi-K2.5 wrap DeepseekV2ForCausalLM, which is not "
    "a SupportsEagle3 before 0.18.0.",
    example="""\
class DeepseekV2ForCausalLM(nn.Module, SupportsPP, SupportsEagle):  # no SupportsEagle3
    ...


class KimiK25ForConditionalGeneration(nn.Module, SupportsMultiModal, SupportsEagle3):
    def set_aux_hidden_state_layers(self, layers: tuple[int, ...]) -> None:
        self.language_model.set_aux_hidden_state_layers(layers)
""",
    fix="""\
class DeepseekV2ForCausalLM(nn.Module, SupportsPP, SupportsEagle, SupportsEagle3):
    # with its own aux-layer methods (EAG2xx) and the decoder's taps (EAG3xx)
    ...
""",
)

_EAG104 = Explanation(
    runtime="A model module may pick its class per platform when it is imported (`if "
    "current_platform.is_rocm(): from .my_model_rocm import MyModelForCausalLM`). The registry "
    "then serves that variant on that platform, and `supports_eagle3()` is asked about it.",
    error="On the platform whose variant is not a SupportsEagle3, the `RuntimeError` of EAG101; "
    "on the other platforms EAGLE-3 works. A variant that is a stub whose `__init__` raises "
    "(0.33's DeepSeek-V4 vision model on CPU and XPU) does not run the model at all: that "
    "finding is an info note (`--verbose`).",
    releases="Any release with a model module that chooses its class per platform.",
    example="""\
if current_platform.is_rocm():
    from .my_model_rocm import MyModelForCausalLM  # class MyModelForCausalLM(nn.Module)
else:

    class MyModelForCausalLM(nn.Module, SupportsEagle3): ...
""",
    fix="""\
# my_model_rocm.py
class MyModelForCausalLM(nn.Module, SupportsEagle3):
    # the same interfaces, methods and taps on every platform
    ...
""",
)


class ProtocolInheritance(Rule):
    slug = "protocol-inheritance"
    codes = (
        Code(
            "EAG101",
            "missing-supports-eagle3",
            "The model class is not a SupportsEagle3.",
            Severity.ERROR,
            fixable=True,
            explain=_EAG101,
        ),
        Code(
            "EAG102",
            "wrapper-missing-supports-eagle3",
            "A multimodal wrapper is not a SupportsEagle3 although its language model can be.",
            Severity.ERROR,
            fixable=True,
            explain=_EAG102,
        ),
        Code(
            "EAG103",
            "language-model-missing-supports-eagle3",
            "The language model a multimodal wrapper delegates to is not a SupportsEagle3.",
            Severity.ERROR,
            fixable=True,
            explain=_EAG103,
        ),
        Code(
            "EAG104",
            "platform-variant-differs",
            "A platform variant of the architecture answers supports_eagle3() differently.",
            Severity.WARNING,
            explain=_EAG104,
        ),
    )
    valid = (
        Example(
            era="e2_stub",
            source="""
from torch import nn
from .interfaces import SupportsEagle3
class GoodForCausalLM(nn.Module, SupportsEagle3):
    pass
""",
        ),
    )
    invalid = (
        Example(
            era="e2_stub",
            expect=(Expected("EAG101", line=3, message="implements only SupportsEagle"),),
            source="""
from torch import nn
from .interfaces import SupportsEagle
class OnlyEagleForCausalLM(nn.Module, SupportsEagle):
    pass
""",
        ),
    )

    def check(self, target: Target, ctx: RuleContext) -> Iterator[Finding]:
        contract = ctx.contract
        if contract.protocol is None or not contract.runtime_check:
            return
        path = ctx.path(target.ref)
        cls = target.ref.cls
        language_model = target.language_model
        if not target.implements_eagle3:
            only = (
                " (it implements only SupportsEagle, i.e. EAGLE-1/2)"
                if target.implements_eagle1
                else ""
            )
            if language_model is not None:
                state = (
                    f"its language model {language_model.ref.name} does"
                    if language_model.implements_eagle3
                    else f"nor does its language model {language_model.ref.name} yet"
                )
                yield self.report(
                    "EAG102",
                    f"{cls.name} is not a SupportsEagle3{only}; {state}. vLLM checks the wrapper "
                    f"itself and {_refuses(target, ctx)} after loading the weights.",
                    path,
                    cls.line,
                    cls.column,
                    hint="Add SupportsEagle3 to the wrapper's bases and delegate the aux-layer "
                    "methods to self.language_model.",
                    # Only a chain that can end with a tapped decoder is worth starting.
                    repair=AddProtocolBase(path, cls=cls.name) if target.has_layer_loop else None,
                    fix_refused=""
                    if target.has_layer_loop
                    else "no decoder layer loop was found under it to tap",
                )
            else:
                owner = target.repair_owner()
                via = (
                    f" (its decoder is built in {owner.ref.name})"
                    if owner.ref != target.ref
                    else ""
                )
                yield self.report(
                    "EAG101",
                    f"{cls.name} is not a SupportsEagle3{only}{via}: vLLM "
                    f"{_refuses(target, ctx)} after loading the weights.",
                    path,
                    cls.line,
                    cls.column,
                    hint=f"Add SupportsEagle3 to the bases of {owner.ref.name}, with the aux-layer "
                    "methods and the forward taps it needs.",
                    repair=AddProtocolBase(ctx.path(owner.ref), cls=owner.ref.name)
                    if target.has_layer_loop
                    else None,
                )
        if (
            language_model is not None
            and not language_model.implements_eagle3
            and target.calls_language_model_methods
        ):
            lm = language_model.ref
            owner = language_model.repair_owner()
            yield self.report(
                "EAG103",
                f"The language model {lm.name} of {cls.name} is not a SupportsEagle3: the "
                "aux-layer calls the wrapper delegates have nothing to reach.",
                ctx.path(lm),
                lm.cls.line,
                lm.cls.column,
                hint=f"Make {owner.ref.name} a SupportsEagle3.",
                repair=AddProtocolBase(ctx.path(owner.ref), cls=owner.ref.name)
                if language_model.has_layer_loop
                else None,
            )
        yield from self._variants(target, ctx)

    def _variants(self, target: Target, ctx: RuleContext) -> Iterator[Finding]:
        for variant in target.other_variants():
            platform, ref = variant.variant, variant.ref
            if variant.implements_eagle3 != target.implements_eagle3:
                has = "is" if variant.implements_eagle3 else "is not"
                main = "is" if target.implements_eagle3 else "is not"
                lacking = target if variant.implements_eagle3 else variant
                init = lacking.ref.cls.methods.get("__init__")
                stub = init.raises if init is not None else None
                yield self.report(
                    "EAG104",
                    f"The {platform} variant {ref.qualname} {has} a SupportsEagle3 while the "
                    f"{target.variant} variant {target.ref.qualname} {main}: "
                    + (
                        f"the {lacking.variant} one is a stub whose __init__ raises {stub}, so "
                        f"the architecture does not run there at all."
                        if stub
                        else "EAGLE-3 works on one platform and fails on the other."
                    ),
                    ctx.path(ref),
                    ref.cls.line,
                    ref.cls.column,
                    hint="Give every platform variant the same interfaces.",
                    # Nothing to act on where the model itself never runs: a note for -v.
                    severity=Severity.INFO if stub else None,
                )


def _refuses(target: Target, ctx: RuleContext) -> str:
    """What the model runner that runs `target` does with a model that is not a
    SupportsEagle3, as its code says it (V2's message is not V1's)."""
    refusal = ctx.contract.refusal_for(target.runner)
    return f"raises '{refusal.message}'" if refusal else "refuses it (supports_eagle3() is false)"


RULES = [ProtocolInheritance]
