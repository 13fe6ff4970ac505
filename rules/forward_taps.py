"""EAG3xx forward-taps: the decoder's layer loop must collect and return aux hidden states."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

from eagle3lint.api import (
    AUX_LAYERS_ATTR,
    STREAM,
    AddForwardTaps,
    AddMixinTaps,
    ClassRef,
    Code,
    Example,
    Expected,
    Finding,
    ForwardSummary,
    LayerConvention,
    Rule,
    RuleContext,
    Severity,
    TapSummary,
    Target,
)

from . import _forward_taps_explain as explained
from ._forward_taps_paths import pp_runners, requested_ids, unresolved_decoder_note

AUX_ATTR = AUX_LAYERS_ATTR


class ForwardTaps(Rule):
    slug = "forward-taps"
    codes = (
        Code(
            "EAG301",
            "missing-forward-tap",
            "The decoder's layer loop never collects aux hidden states.",
            Severity.ERROR,
            fixable=True,
            explain=explained.EAG301,
        ),
        Code(
            "EAG302",
            "aux-layers-not-initialised",
            "`aux_hidden_state_layers` is read by the forward but never initialised.",
            Severity.ERROR,
            explain=explained.EAG302,
        ),
        Code(
            "EAG303",
            "aux-not-returned",
            "The forward does not build and return `(hidden_states, aux_hidden_states)`.",
            Severity.ERROR,
            explain=explained.EAG303,
        ),
        Code(
            "EAG304",
            "pp-rank-local-index",
            "Tap indices are rank-local under pipeline parallelism.",
            Severity.WARNING,
            explain=explained.EAG304,
        ),
        Code(
            "EAG305",
            "residual-none-first-layer",
            "`hidden_states + residual` fails for layer 0 where residual is None.",
            Severity.WARNING,
            explain=explained.EAG305,
        ),
        Code(
            "EAG306",
            "final-layer-unreachable",
            "Taps before each layer cannot capture the last layer's output.",
            Severity.INFO,
            explain=explained.EAG306,
        ),
        Code(
            "EAG307",
            "no-layer-loop",
            "No loop over `self.layers` was found in the decoder's forward.",
            Severity.WARNING,
            explain=explained.EAG307,
        ),
        Code(
            "EAG308",
            "decoder-not-found",
            "The inner decoder (`self.model`) could not be resolved.",
            Severity.WARNING,
            explain=explained.EAG308,
        ),
        Code(
            "EAG309",
            "tap-double-counts-residual",
            "The tap adds a residual its decoder layers have already added.",
            Severity.ERROR,
            explain=explained.EAG309,
        ),
        Code(
            "EAG310",
            "tap-reads-unbound-name",
            "The tap reads a name that is not bound on every path to it.",
            Severity.ERROR,
            explain=explained.EAG310,
        ),
    )
    option_help: ClassVar[Mapping[str, str]] = {
        "aux-layers": "The layer ids your drafters request (eagle_aux_hidden_state_layer_ids). "
        "EAG305 is then reported only if 0 is among them, and as an error.",
    }
    valid = (
        Example(
            era="e2_stub",
            source="""
from itertools import islice
from torch import nn
from .interfaces import SupportsEagle3
class TapModel(nn.Module):
    def __init__(self):
        self.aux_hidden_state_layers = tuple[int, ...]()
    def forward(self, hidden_states, residual):
        aux_hidden_states = []
        for idx, layer in enumerate(
            islice(self.layers, self.start_layer, self.end_layer), start=self.start_layer
        ):
            if idx in self.aux_hidden_state_layers:
                aux_hidden_states.append(
                    hidden_states + residual if residual is not None else hidden_states
                )
            hidden_states, residual = layer(hidden_states, residual)
        if len(aux_hidden_states) > 0:
            return hidden_states, aux_hidden_states
        return hidden_states
class TapForCausalLM(nn.Module, SupportsEagle3):
    def __init__(self):
        self.model = TapModel()
""",
        ),
    )
    invalid = (
        Example(
            era="e2_stub",
            expect=(Expected("EAG301", line=18, message="never collects aux hidden states"),),
            source="""
from itertools import islice
from torch import nn
from .interfaces import SupportsEagle3
class NoTapLayer(nn.Module):
    def forward(self, hidden_states, residual):
        if residual is None:
            residual = hidden_states
            hidden_states = self.input_layernorm(hidden_states)
        else:
            hidden_states, residual = self.input_layernorm(hidden_states, residual)
        hidden_states = self.mlp(hidden_states)
        return hidden_states, residual
class NoTapModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([NoTapLayer() for _ in range(2)])
    def forward(self, hidden_states, residual):
        for layer in islice(self.layers, self.start_layer, self.end_layer):
            hidden_states, residual = layer(hidden_states, residual)
        return hidden_states
class NoTapForCausalLM(nn.Module, SupportsEagle3):
    def __init__(self):
        self.model = NoTapModel()
""",
            expected_replacement="""
from itertools import islice
from torch import nn
from .interfaces import SupportsEagle3
class NoTapLayer(nn.Module):
    def forward(self, hidden_states, residual):
        if residual is None:
            residual = hidden_states
            hidden_states = self.input_layernorm(hidden_states)
        else:
            hidden_states, residual = self.input_layernorm(hidden_states, residual)
        hidden_states = self.mlp(hidden_states)
        return hidden_states, residual
class NoTapModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([NoTapLayer() for _ in range(2)])

        self.aux_hidden_state_layers = tuple[int, ...]()
    def forward(self, hidden_states, residual):
        aux_hidden_states = []
        for idx, layer in enumerate(
            islice(self.layers, self.start_layer, self.end_layer),
            start=self.start_layer,
        ):
            if idx in self.aux_hidden_state_layers:
                aux_hidden_states.append(
                    hidden_states + residual if residual is not None else hidden_states
                )
            hidden_states, residual = layer(hidden_states, residual)
        if len(aux_hidden_states) > 0:
            return hidden_states, aux_hidden_states
        return hidden_states
class NoTapForCausalLM(nn.Module, SupportsEagle3):
    def __init__(self):
        self.model = NoTapModel()
""",
        ),
        Example(
            era="e2_stub",
            expect=("EAG309",),
            source="""
from torch import nn
from .interfaces import SupportsEagle3
class SumLayer(nn.Module):
    def forward(self, positions, hidden_states, residual):
        residual = hidden_states
        hidden_states = residual + self.mlp(hidden_states)
        return hidden_states, residual
class SumModel(nn.Module):
    def __init__(self):
        self.layers = nn.ModuleList([SumLayer() for _ in range(2)])
        self.aux_hidden_state_layers = tuple[int, ...]()
    def forward(self, positions, hidden_states):
        residual = None
        aux_hidden_states = []
        for idx, layer in enumerate(self.layers):
            if idx in self.aux_hidden_state_layers:
                aux_hidden_states.append(
                    hidden_states + residual if residual is not None else hidden_states
                )
            hidden_states, residual = layer(positions, hidden_states, residual)
        if len(aux_hidden_states) > 0:
            return hidden_states, aux_hidden_states
        return hidden_states
class SumForCausalLM(nn.Module, SupportsEagle3):
    def __init__(self):
        self.model = SumModel()
""",
        ),
        Example(
            era="e2_stub",
            expect=("EAG309", "EAG310"),
            source="""
from torch import nn
from .interfaces import SupportsEagle3
class StreamModel(nn.Module):
    def __init__(self):
        self.aux_hidden_state_layers = tuple[int, ...]()
    def forward(self, positions, hidden_states):
        aux_hidden_states = []
        for idx, layer in enumerate(self.layers):
            if idx in self.aux_hidden_state_layers:
                aux_hidden_states.append(
                    hidden_states + residual if residual is not None else hidden_states
                )
            hidden_states, residual = layer(positions, hidden_states)
        if len(aux_hidden_states) > 0:
            return hidden_states, aux_hidden_states
        return hidden_states
class StreamForCausalLM(nn.Module, SupportsEagle3):
    def __init__(self):
        self.model = StreamModel()
""",
        ),
    )

    @classmethod
    def validate_options(cls, options: Mapping[str, Any]) -> None:
        super().validate_options(options)
        layers = options.get("aux-layers")
        if layers is not None and not (
            isinstance(layers, list)
            and all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in layers)
        ):
            raise ValueError(
                f"rule {cls.slug}: aux-layers must be a list of layer ids (integers >= 0), "
                f"not {layers!r}"
            )

    def check(self, target: Target, ctx: RuleContext) -> Iterator[Finding]:
        if not target.is_candidate:
            return
        owner = target.decoder_owner
        inner = owner.inner_model
        note = unresolved_decoder_note(owner) if inner is None else None
        if note is not None:
            message, hint = note
            cls = owner.ref.cls
            path = ctx.path(owner.ref)
            yield self.report(
                "EAG308", message, path, cls.line, cls.column, hint=hint, severity=Severity.INFO
            )
            return
        if inner is None:
            yield self.report(
                "EAG308",
                f"Cannot tell which decoder {owner.ref.name} builds in self.model, so its "
                "forward taps cannot be checked.",
                ctx.path(owner.ref),
                owner.ref.cls.line,
                owner.ref.cls.column,
            )
            return
        found = owner.forward_of(inner)
        loops = found[1].loops if found else []
        if found is None or not loops:
            where = found[0] if found else inner
            line = found[1].line if found else inner.cls.line
            yield self.report(
                "EAG307",
                f"{where.name}.forward has no loop over self.layers: the aux hidden-state taps "
                "cannot be checked (or added).",
                ctx.path(where),
                line,
            )
            return
        yield from self._taps(owner, inner, *found, ctx, target)

    def _taps(
        self,
        owner: Target,
        inner: ClassRef,
        where: ClassRef,
        forward: ForwardSummary,
        ctx: RuleContext,
        target: Target,
    ) -> Iterator[Finding]:
        path = ctx.path(where)
        taps = [
            *(tap for loop in forward.loops for tap in loop.taps),
            *forward.pre_loop_taps,
            *forward.post_loop_taps,
        ]
        loop = forward.loops[0]
        conventions = owner.layer_conventions(inner)
        if not taps:
            plan = owner.tap_plan(inner, where, forward, mixin=bool(ctx.contract.mixin))
            # Where the release has EagleModelMixin, a new tap uses it (the protocol defaults
            # then work without overrides); older releases get the explicit tap of llama.py.
            repair: AddMixinTaps | AddForwardTaps | None = None
            if plan.refusal is None and ctx.contract.mixin:
                repair = AddMixinTaps(path, cls=where.name, stream=plan.stream)
            elif plan.refusal is None:
                inherited = "__init__" not in where.cls.methods
                repair = AddForwardTaps(
                    path, cls=where.name, stream=plan.stream, inherited_init=inherited
                )
            yield self.report(
                "EAG301",
                f"{where.name}.forward never collects aux hidden states in its layer loop: with "
                "aux layers requested it returns a bare tensor and the runner's "
                "`hidden_states, aux_hidden_states = model_output` unpacking fails (a ValueError, "
                "'too many values to unpack (expected 2)' for a batch of more than two tokens).",
                path,
                loop.line,
                loop.column,
                hint="Collect `hidden_states + residual` entering each layer listed in "
                "self.aux_hidden_state_layers and return (hidden_states, aux_hidden_states).",
                repair=repair,
                fix_refused=plan.refusal or "",
            )
            return
        if not any(each.taps for each in forward.loops):
            # A tap before (or after) the loop captures one stream, the embeddings entering
            # the first layer: the default ids ask for three layers inside the loop.
            yield self.report(
                "EAG301",
                f"{where.name}.forward collects aux hidden states only outside its layer loop "
                "(the stream before the first layer or after the last): the layers the runner "
                "asks for are never captured, and it returns fewer aux states than the drafter "
                "takes.",
                path,
                loop.line,
                loop.column,
                hint="Collect the stream entering each layer listed in "
                "self.aux_hidden_state_layers inside the loop.",
                fix_refused="the forward already collects outside its loop: a tap added to the "
                "loop could capture a layer twice, so the in-loop tap is left to you",
            )
        yield from self._tap_values(where, forward, conventions, taps, path)
        mro = owner.classes_of(inner)
        initialised = any(AUX_ATTR in e.cls.init_assigns or AUX_ATTR in e.cls.attrs for e in mro)
        if not initialised and any(t.style == "explicit" for t in taps):
            yield self.report(
                "EAG302",
                f"{inner.name} reads self.{AUX_ATTR} in forward but never initialises it: only "
                "set_aux_hidden_state_layers assigns it, so every run without EAGLE-3 raises "
                "AttributeError on its first forward.",
                ctx.path(inner),
                inner.cls.line,
                inner.cls.column,
                hint=f"Set self.{AUX_ATTR} = tuple[int, ...]() in __init__.",
            )
        if not forward.aux_list_initialised or not forward.returns_aux_tuple:
            missing = (
                "initialise the aux list"
                if not forward.aux_list_initialised
                else ("return (hidden_states, aux_hidden_states)")
            )
            yield self.report(
                "EAG303",
                f"{where.name}.forward taps layers but does not {missing}.",
                path,
                forward.line,
                forward.column,
                hint="Return (hidden_states, aux_hidden_states) when the list is non-empty.",
            )
        on_runners = pp_runners(owner, ctx)
        for each in forward.loops if on_runners is not None else ():
            if each.shape.slices_layers and each.shape.enumerate_start is None and each.taps:
                yield self.report(
                    "EAG304",
                    f"{where.name}.forward enumerates only this pipeline rank's layers without "
                    "start=self.start_layer: under pipeline parallelism the tap indices are "
                    "rank-local and select the wrong layers.",
                    path,
                    each.line,
                    each.column,
                    hint="Use enumerate(islice(self.layers, self.start_layer, self.end_layer), "
                    "start=self.start_layer).",
                    runners=on_runners or (),
                )
        requested = requested_ids(target, ctx, self.options.get("aux-layers"))
        # Known requested ids settle EAG305: without layer 0 the None residual is never added,
        # with it the TypeError is certain.
        if requested is None or 0 in requested:
            severity = None if requested is None else Severity.ERROR
            for tap in taps:
                if not tap.residual_guarded:
                    yield self.report(
                        "EAG305",
                        f"The tap captures `{tap.value_expr}`, but residual is None entering the "
                        "first layer on the first rank: requesting layer 0 raises TypeError.",
                        path,
                        tap.line,
                        tap.column,
                        hint="Capture `hidden_states + residual if residual is not None else "
                        "hidden_states`.",
                        severity=severity,
                    )
        # Under `pair` the requested ids are known: EAG623 reports the one id this concerns.
        if all(t.before_layer for t in taps) and ctx.pairing is None:
            yield self.report(
                "EAG306",
                f"{where.name}.forward taps before each layer, so the last layer's output "
                "(index num_layers) can never be captured.",
                path,
                taps[0].line,
                taps[0].column,
            )

    def _tap_values(
        self,
        where: ClassRef,
        forward: ForwardSummary,
        conventions: list[LayerConvention],
        taps: list[TapSummary],
        path: str,
    ) -> Iterator[Finding]:
        """EAG309/EAG310: taps whose value is not the stream entering the layer."""
        loop = forward.loops[0].shape
        stream = loop.call is not None and (
            not loop.call.passes_residual
            or (conventions and all(c.kind == STREAM for c in conventions))
        )
        for tap in taps:
            if stream and tap.adds_residual:
                why = (
                    "its loop passes the layers no residual"
                    if loop.call is not None and not loop.call.passes_residual
                    else "its decoder layers return the whole stream (they add the residual)"
                )
                value = f"`{tap.value_expr}`" if tap.value_expr else "the residual"
                yield self.report(
                    "EAG309",
                    f"{where.name}.forward's tap adds {value} to hidden_states, but {why}: "
                    "the captured state counts the residual twice.",
                    path,
                    tap.line,
                    tap.column,
                    hint="Capture `hidden_states` alone (pass None as the mixin's residual).",
                )
            if tap.unbound:
                names = ", ".join(tap.unbound)
                yield self.report(
                    "EAG310",
                    f"{where.name}.forward's tap reads {names}, not bound on every path to it: "
                    "the first forward raises UnboundLocalError.",
                    path,
                    tap.line,
                    tap.column,
                    hint="Capture only names bound before the tap.",
                )


RULES = [ForwardTaps]
