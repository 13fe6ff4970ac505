"""EAG1xx protocol-inheritance: the class vLLM instantiates must be a `SupportsEagle3`."""

from __future__ import annotations

from collections.abc import Iterator

from eagle3lint.findings import Finding, Repair, Severity
from eagle3lint.rule import Code, Example, Rule, RuleContext
from eagle3lint.targets import Target

RUNNER_ERROR = "Model does not support EAGLE3 interface but aux_hidden_state_outputs was requested"


def repair_owner(target: Target) -> Target:
    """The class to edit: the one in the MRO that builds the decoder (`self.model`), so that
    subclasses such as DeepseekV3ForCausalLM inherit the support, else the class itself."""
    found = target.init_assign("model")
    if found is None or found[0] == target.ref:
        return target
    return Target(found[0].name, found[0], target.index, target.contract, registered=False)


class ProtocolInheritance(Rule):
    slug = "protocol-inheritance"
    codes = (
        Code(
            "EAG101",
            "missing-supports-eagle3",
            "The model class is not a SupportsEagle3.",
            Severity.ERROR,
            fixable=True,
        ),
        Code(
            "EAG102",
            "wrapper-missing-supports-eagle3",
            "A multimodal wrapper is not a SupportsEagle3 although its language model can be.",
            Severity.ERROR,
            fixable=True,
        ),
        Code(
            "EAG103",
            "language-model-missing-supports-eagle3",
            "The language model a multimodal wrapper delegates to is not a SupportsEagle3.",
            Severity.ERROR,
            fixable=True,
        ),
        Code(
            "EAG104",
            "platform-variant-differs",
            "A platform variant of the architecture answers supports_eagle3() differently.",
            Severity.WARNING,
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
            expect=("EAG101",),
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
                    f"itself and raises '{RUNNER_ERROR}' after loading the weights.",
                    path,
                    cls.line,
                    cls.column,
                    hint="Add SupportsEagle3 to the wrapper's bases and delegate the aux-layer "
                    "methods to self.language_model.",
                    repair=Repair.make("add-protocol-base", path, cls=cls.name, wrapper="1"),
                )
            else:
                owner = repair_owner(target)
                via = (
                    f" (its decoder is built in {owner.ref.name})"
                    if owner.ref != target.ref
                    else ""
                )
                yield self.report(
                    "EAG101",
                    f"{cls.name} is not a SupportsEagle3{only}{via}: vLLM raises "
                    f"'{RUNNER_ERROR}' after loading the weights.",
                    path,
                    cls.line,
                    cls.column,
                    hint=f"Add SupportsEagle3 to the bases of {owner.ref.name}, with the aux-layer "
                    "methods and the forward taps it needs.",
                    repair=Repair.make(
                        "add-protocol-base", ctx.path(owner.ref), cls=owner.ref.name
                    ),
                )
        if language_model is not None and not language_model.implements_eagle3:
            lm = language_model.ref
            owner = repair_owner(language_model)
            yield self.report(
                "EAG103",
                f"The language model {lm.name} of {cls.name} is not a SupportsEagle3: the "
                "aux-layer calls the wrapper delegates have nothing to reach.",
                ctx.path(lm),
                lm.cls.line,
                lm.cls.column,
                hint=f"Make {owner.ref.name} a SupportsEagle3.",
                repair=Repair.make("add-protocol-base", ctx.path(owner.ref), cls=owner.ref.name),
            )
        yield from self._variants(target, ctx)

    def _variants(self, target: Target, ctx: RuleContext) -> Iterator[Finding]:
        for platform, ref in sorted(target.variants.items()):
            if ref == target.ref:
                continue
            variant = Target(target.arch, ref, target.index, target.contract, variant=platform)
            if variant.implements_eagle3 != target.implements_eagle3:
                has = "is" if variant.implements_eagle3 else "is not"
                main = "is" if target.implements_eagle3 else "is not"
                yield self.report(
                    "EAG104",
                    f"The {platform} variant {ref.qualname} {has} a SupportsEagle3 while the "
                    f"{target.variant} variant {target.ref.qualname} {main}: EAGLE-3 works on one "
                    "platform and fails on the other.",
                    ctx.path(ref),
                    ref.cls.line,
                    ref.cls.column,
                    hint="Give every platform variant the same interfaces.",
                )


RULES = [ProtocolInheritance]
