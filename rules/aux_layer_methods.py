"""EAG2xx aux-layer-methods: the methods the runner calls must really be implemented."""

from __future__ import annotations

from collections.abc import Iterator

from eagle3lint.api import (
    LANGUAGE_MODEL_ATTR,
    AddAuxMethods,
    AddDelegatingMethods,
    AddMixinTaps,
    ClassRef,
    Code,
    Example,
    Expected,
    Finding,
    MethodSummary,
    RenameMethod,
    Repair,
    Rule,
    RuleContext,
    Severity,
    Target,
)

from . import _aux_layer_methods_explain as explained


class AuxLayerMethods(Rule):
    slug = "aux-layer-methods"
    codes = (
        Code(
            "EAG201",
            "missing-aux-method",
            "A method the runner calls has no real implementation (only the protocol stub).",
            Severity.ERROR,
            fixable=True,
            explain=explained.EAG201,
        ),
        Code(
            "EAG202",
            "wrapper-not-delegating",
            "A multimodal wrapper does not pass the aux-layer calls to its language model.",
            Severity.ERROR,
            fixable=True,
            explain=explained.EAG202,
        ),
        Code(
            "EAG203",
            "dead-override",
            "A getter is defined under a name this release never calls.",
            Severity.WARNING,
            fixable=True,
            explain=explained.EAG203,
        ),
        Code(
            "EAG204",
            "inner-model-not-mixin",
            "The protocol defaults need the inner model to be an EagleModelMixin with layers.",
            Severity.ERROR,
            fixable=True,
            explain=explained.EAG204,
        ),
    )
    valid = (
        Example(
            era="e2_stub",
            source="""
from torch import nn
from .interfaces import SupportsEagle3
class Methods2ForCausalLM(nn.Module, SupportsEagle3):
    def set_aux_hidden_state_layers(self, layers):
        self.model.aux_hidden_state_layers = layers
    def get_eagle3_aux_hidden_state_layers(self):
        return (2, 4, 6)
""",
        ),
    )
    invalid = (
        Example(
            era="e2_stub",
            expect=(
                Expected("EAG201", line=3, message="set_aux_hidden_state_layers()"),
                Expected("EAG201", line=3, message="get_eagle3_aux_hidden_state_layers()"),
            ),
            source="""
from torch import nn
from .interfaces import SupportsEagle3
class StubsForCausalLM(nn.Module, SupportsEagle3):
    pass
""",
            expected_replacement="""
from torch import nn
from .interfaces import SupportsEagle3
class StubsForCausalLM(nn.Module, SupportsEagle3):
    pass

    def set_aux_hidden_state_layers(self, layers: tuple[int, ...]) -> None:
        self.model.aux_hidden_state_layers = layers

    def get_eagle3_aux_hidden_state_layers(self) -> tuple[int, ...]:
        num_layers = len(self.model.layers)
        return (2, num_layers // 2, num_layers - 3)
""",
        ),
        Example(
            era="e3_mixin",
            expect=(Expected("EAG203", line=6, message="is never called by this vLLM release"),),
            source="""
from torch import nn
from .interfaces import SupportsEagle3
class OldNameForCausalLM(nn.Module, SupportsEagle3):
    def set_aux_hidden_state_layers(self, layers):
        self.model.aux_hidden_state_layers = layers
    def get_eagle3_aux_hidden_state_layers(self):
        return (2, 4, 6)
""",
            expected_replacement="""
from torch import nn
from .interfaces import SupportsEagle3
class OldNameForCausalLM(nn.Module, SupportsEagle3):
    def set_aux_hidden_state_layers(self, layers):
        self.model.aux_hidden_state_layers = layers
    def get_eagle3_default_aux_hidden_state_layers(self):
        return (2, 4, 6)

    # Callers of the old name (a wrapper delegating to this model) keep working.
    get_eagle3_aux_hidden_state_layers = get_eagle3_default_aux_hidden_state_layers
""",
        ),
    )

    def check(self, target: Target, ctx: RuleContext) -> Iterator[Finding]:
        # A runner that calls the methods on every target (0.10.0) makes every target a
        # candidate: one without them fails after loading whatever it claims.
        if not target.is_candidate and not ctx.contract.unguarded_aux_calls:
            return
        yield from self._dead_overrides(target, ctx)
        yield from self._defaults_reach_bare_decoder(target, ctx)
        if target.language_model is not None:
            yield from self._wrapper(target, ctx)
            # The runner calls the wrapper; methods that go to the decoder directly (the
            # protocol defaults, Qwen3-VL's) never call the language model's own.
            if target.calls_language_model_methods:
                yield from self._methods(target.language_model, ctx)
        else:
            yield from self._methods(target, ctx)

    def _implementation(self, target: Target, name: str) -> tuple[ClassRef, bool] | None:
        """Where `name` resolves and whether that is a real body (not a protocol stub)."""
        found = target.method(name)
        if found is None:
            return None
        ref, method = found
        return ref, not method.is_stub

    def _methods(self, target: Target, ctx: RuleContext) -> Iterator[Finding]:
        contract = ctx.contract
        owner = target.repair_owner()
        owner_path = ctx.path(owner.ref)
        unguarded = contract.unguarded_aux_calls and not target.implements_eagle3
        for name in contract.required_methods:
            found = self._implementation(target, name)
            if found is None and name in contract.default_methods and not unguarded:
                # Not a SupportsEagle3 yet (EAG101): once it is, the protocol default applies.
                yield from self._default_needs(target, ctx, name)
                continue
            if found is not None and found[1]:
                ref = found[0]
                if ref.file.module == contract.interfaces_module and ref.cls.is_protocol:
                    yield from self._default_needs(target, ctx, name)
                continue
            why = (
                " on every target, with no supports_eagle3 check, so loading fails with "
                "AttributeError"
                if contract.unguarded_aux_calls and found is None
                else " to choose and set the aux hidden-state layers"
            )
            yield self.report(
                "EAG201",
                f"{target.ref.name} has no implementation of {name}()"
                + (" (only the protocol's stub, which does nothing)" if found else "")
                + f": the runner calls it{why}.",
                ctx.path(target.ref),
                target.ref.cls.line,
                target.ref.cls.column,
                hint=f"Define {name} on {owner.ref.name}, as the release's llama.py does.",
                repair=AddAuxMethods(
                    owner_path,
                    cls=owner.ref.name,
                    getter=contract.getter,
                    # A bare decoder holds the layers itself rather than in self.model.
                    inner="" if target.is_bare_decoder else "model",
                ),
            )

    def _default_needs(self, target: Target, ctx: RuleContext, name: str) -> Iterator[Finding]:
        """The protocol defaults assert `<model>.model` is an EagleModelMixin with `.layers`."""
        contract = ctx.contract
        inner = target.decoder_owner.inner_model
        if inner is None:
            return
        inner_mro = {e.qualname for e in target.classes_of(inner)}
        needs_mixin = name == contract.setter and contract.mixin is not None
        if needs_mixin and contract.mixin not in inner_mro:
            yield self.report(
                "EAG204",
                f"{target.ref.name} relies on the protocol's default {name}(), which asserts that "
                f"{inner.name} is an EagleModelMixin; it is not, so loading fails with an "
                "AssertionError.",
                ctx.path(inner),
                inner.cls.line,
                inner.cls.column,
                hint=f"Make {inner.name} an EagleModelMixin (with its tap helper) or override "
                f"{name} on {target.ref.name}.",
                repair=self._mixin_repair(target, inner, ctx),
            )
        has_layers = any(
            e.cls.assigns_layers or "layers" in e.cls.attrs for e in target.classes_of(inner)
        )
        if name == contract.getter and not has_layers:
            yield self.report(
                "EAG204",
                f"The default {name}() reads {inner.name}.layers, which {inner.name} never sets.",
                ctx.path(inner),
                inner.cls.line,
                inner.cls.column,
                hint=f"Override {name} on {target.ref.name}.",
            )

    def _defaults_reach_bare_decoder(self, target: Target, ctx: RuleContext) -> Iterator[Finding]:
        """The protocol defaults take the language model (`get_language_model()` where the
        model has it, else `self.language_model`) and, before vLLM 0.28, assert that it has a
        `.model`: a language model that is the decoder itself (Aria's AriaTextModel, the
        LlamaModel Phi-4-multimodal marks as its language model) fails the runner's first call.
        The repair gives the model its own methods, reaching that decoder."""
        contract = ctx.contract
        if contract.defaults_take_bare_decoder:
            return
        relies = [
            name
            for name in contract.required_methods
            if name in contract.default_methods and self._relies_on_default(target, name, ctx)
        ]
        has_getter = target.method("get_language_model") is not None
        if not relies or not (has_getter or target.language_model is not None):
            return
        attr, reached = (
            (LANGUAGE_MODEL_ATTR, target.language_model.ref)
            if target.language_model is not None
            else ("model", target.inner_model)
        )
        classes = target.classes_of(reached) if reached is not None else []
        is_decoder = any(e.cls.assigns_layers for e in classes)
        if not is_decoder or any("model" in e.cls.init_assigns for e in classes):
            return
        assert reached is not None
        yield self.report(
            "EAG204",
            f"{target.ref.name} relies on the protocol's default {'() and '.join(relies)}(), "
            f"which take its language model {reached.name} and assert that it has a `.model` "
            "(the decoder); "
            f"{reached.name} is the decoder itself, so loading fails with an AssertionError.",
            ctx.path(target.ref),
            target.ref.cls.line,
            target.ref.cls.column,
            hint=f"Define {', '.join(contract.required_methods)} on {target.ref.name}, reaching "
            f"self.{attr}.",
            repair=AddAuxMethods(
                ctx.path(target.ref), cls=target.ref.name, getter=contract.getter, inner=attr
            ),
        )

    def _relies_on_default(self, target: Target, name: str, ctx: RuleContext) -> bool:
        """`name` resolves to the protocol's default (or will, once the model is one)."""
        found = target.method(name)
        if found is None:
            return True
        ref, _ = found
        return ref.file.module == ctx.contract.interfaces_module and ref.cls.is_protocol

    def _mixin_repair(self, target: Target, inner: ClassRef, ctx: RuleContext) -> Repair | None:
        """An untapped decoder becomes a mixin (the release's own style) where `fix` can tap it;
        one with a custom tap keeps it and the model overrides the setter instead, as DeepseekV2
        does upstream (a wrapper delegates it to its language model)."""
        found = target.forward_of(inner)
        tapped = found is not None and any(loop.taps for loop in found[1].loops)
        if not tapped:
            if found is None:
                return None
            # The class that defines the forward gets the mixin; subclasses inherit both.
            where, forward = found
            plan = target.tap_plan(inner, where, forward, mixin=True)
            if plan.refusal is not None:
                return None
            return AddMixinTaps(ctx.path(where), cls=where.name, stream=plan.stream)
        if target.language_model is not None:
            return AddDelegatingMethods(
                ctx.path(target.ref), cls=target.ref.name, getter=ctx.contract.getter
            )
        owner = target.repair_owner()
        return AddAuxMethods(ctx.path(owner.ref), cls=owner.ref.name, getter=ctx.contract.getter)

    def _wrapper(self, target: Target, ctx: RuleContext) -> Iterator[Finding]:
        contract = ctx.contract
        path = ctx.path(target.ref)
        for name in contract.required_methods:
            found = target.method(name)
            if found is None and name in contract.default_methods:
                # Gains the protocol default with SupportsEagle3 (EAG102): check what it needs.
                yield from self._default_needs(target, ctx, name)
                continue
            if found is not None and not found[1].is_stub:
                ref, method = found
                if ref.file.module == contract.interfaces_module and ref.cls.is_protocol:
                    yield from self._default_needs(target, ctx, name)
                    continue
                reaches = (method.delegates_to or "").startswith(LANGUAGE_MODEL_ATTR) or any(
                    a.startswith(f"{LANGUAGE_MODEL_ATTR}.") for a in method.self_attr_assigns
                )
                if name != contract.setter or reaches or "get_language_model" in method.calls_self:
                    continue
            # The codemod adds a delegating method; one the class writes itself is the
            # author's code to change, not eagle3lint's.
            own = name in target.ref.cls.methods
            yield self.report(
                "EAG202",
                f"{target.ref.name} does not pass {name}() on to its language model "
                f"{target.language_model.ref.name if target.language_model else ''}: the "
                "decoder's aux layers are never set and the runner gets a bare tensor.",
                path,
                target.ref.cls.line,
                target.ref.cls.column,
                hint=(
                    f"Make {target.ref.name}.{name} call self.{LANGUAGE_MODEL_ATTR}.{name}(...)."
                    if own
                    else "Delegate to self.language_model, as vLLM 0.18's Kimi-K2.5 wrapper does."
                ),
                repair=None
                if own
                else AddDelegatingMethods(path, cls=target.ref.name, getter=contract.getter),
                fix_refused=f"{target.ref.name} defines {name} itself: its body is the "
                "author's code to change"
                if own
                else "",
            )

    def _dead_overrides(self, target: Target, ctx: RuleContext) -> Iterator[Finding]:
        contract = ctx.contract
        if contract.protocol is None and not contract.getter:
            return
        seen: set[str] = set()
        for candidate in (target, target.language_model):
            if candidate is None:
                continue
            for entry in candidate.mro:
                if not isinstance(entry, ClassRef) or entry.cls.is_protocol:
                    continue
                for name in contract.legacy_getters:
                    method = entry.cls.methods.get(name)
                    key = f"{entry.qualname}.{name}"
                    if method is None or key in seen:
                        continue
                    seen.add(key)
                    path = ctx.path(entry)
                    can_rename = contract.getter not in entry.cls.methods
                    lost = _what_is_lost(method, candidate, contract.getter)
                    yield self.report(
                        "EAG203",
                        f"{entry.name}.{name}() is never called by this vLLM release, which calls "
                        f"{contract.getter}(): {lost or 'its layer choice is silently ignored'}.",
                        path,
                        method.line,
                        method.column,
                        hint=f"Rename it to {contract.getter} (fix keeps the old name as an "
                        "alias, for callers such as a wrapper delegating to this model).",
                        repair=RenameMethod(path, cls=entry.name, old=name, new=contract.getter)
                        if can_rename
                        else None,
                        # Dead code that changes nothing at run time: a note for -v.
                        severity=Severity.INFO if lost else None,
                    )


def _what_is_lost(method: MethodSummary, candidate: Target, getter: str) -> str:
    """Why nothing is lost by a getter vLLM never calls, when nothing is: it only passes the
    call on (its callee's own finding says the rest), or it returns the same tuple as the
    getter vLLM calls instead (the class's, else the protocol's default); "" otherwise."""
    callee, _, called_name = (method.returns_call or "").rpartition(".")
    if callee.startswith("self.") and called_name == method.name:
        return f"dead code, which only passes the call on to {callee}"
    called = next(
        (
            e.cls.methods[getter]
            for e in candidate.mro
            if isinstance(e, ClassRef) and getter in e.cls.methods
        ),
        None,
    )
    if called is not None and method.returns_tuple and called.returns_tuple == method.returns_tuple:
        return f"dead code, as that returns the same {method.returns_tuple}"
    return ""


RULES = [AuxLayerMethods]
