"""EAG3xx forward-taps: the decoder's layer loop must collect and return aux hidden states."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

from eagle3lint.rules.aux_layer_methods import is_candidate

from eagle3lint.findings import Finding, Repair, Severity
from eagle3lint.index.model import ForwardSummary
from eagle3lint.index.project import ClassRef
from eagle3lint.rule import Code, Example, Rule, RuleContext
from eagle3lint.targets import Target

AUX_ATTR = "aux_hidden_state_layers"


def forward_of(target: Target, inner: ClassRef) -> tuple[ClassRef, ForwardSummary] | None:
    """The forward the decoder runs: its own or the nearest inherited one."""
    for entry in target.index.mro(inner):
        if isinstance(entry, ClassRef) and entry.cls.forward is not None:
            return entry, entry.cls.forward
    return None


class ForwardTaps(Rule):
    slug = "forward-taps"
    codes = (
        Code(
            "EAG301",
            "missing-forward-tap",
            "The decoder's layer loop never collects aux hidden states.",
            Severity.ERROR,
            fixable=True,
        ),
        Code(
            "EAG302",
            "aux-layers-not-initialised",
            "`aux_hidden_state_layers` is read by the forward but never initialised.",
            Severity.ERROR,
            fixable=True,
        ),
        Code(
            "EAG303",
            "aux-not-returned",
            "The forward does not build and return `(hidden_states, aux_hidden_states)`.",
            Severity.ERROR,
            fixable=True,
        ),
        Code(
            "EAG304",
            "pp-rank-local-index",
            "Tap indices are rank-local under pipeline parallelism.",
            Severity.WARNING,
        ),
        Code(
            "EAG305",
            "residual-none-first-layer",
            "`hidden_states + residual` fails for layer 0 where residual is None.",
            Severity.WARNING,
        ),
        Code(
            "EAG306",
            "final-layer-unreachable",
            "Taps before each layer cannot capture the last layer's output.",
            Severity.INFO,
        ),
        Code(
            "EAG307",
            "no-layer-loop",
            "No loop over `self.layers` was found in the decoder's forward.",
            Severity.WARNING,
        ),
        Code(
            "EAG308",
            "decoder-not-found",
            "The inner decoder (`self.model`) could not be resolved.",
            Severity.WARNING,
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
            expect=("EAG301",),
            source="""
from itertools import islice
from torch import nn
from .interfaces import SupportsEagle3
class NoTapModel(nn.Module):
    def forward(self, hidden_states, residual):
        for layer in islice(self.layers, self.start_layer, self.end_layer):
            hidden_states, residual = layer(hidden_states, residual)
        return hidden_states
class NoTapForCausalLM(nn.Module, SupportsEagle3):
    def __init__(self):
        self.model = NoTapModel()
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
        if not is_candidate(target):
            return
        owner = target.decoder_owner
        inner = owner.inner_model
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
        found = forward_of(owner, inner)
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
        yield from self._taps(owner, inner, *found, ctx)

    def _taps(
        self,
        owner: Target,
        inner: ClassRef,
        where: ClassRef,
        forward: ForwardSummary,
        ctx: RuleContext,
    ) -> Iterator[Finding]:
        path = ctx.path(where)
        taps = [tap for loop in forward.loops for tap in loop.taps] + forward.pre_loop_taps
        loop = forward.loops[0]
        repair = Repair.make("add-forward-taps", path, cls=where.name)
        if not taps:
            yield self.report(
                "EAG301",
                f"{where.name}.forward never collects aux hidden states in its layer loop: with "
                "aux layers requested it returns a bare tensor and the runner's "
                "`hidden_states, aux_hidden_states = model_output` unpacking fails.",
                path,
                loop.line,
                loop.column,
                hint="Collect `hidden_states + residual` entering each layer listed in "
                "self.aux_hidden_state_layers and return (hidden_states, aux_hidden_states).",
                repair=repair,
            )
            return
        mro = [e for e in owner.index.mro(inner) if isinstance(e, ClassRef)]
        initialised = any(AUX_ATTR in e.cls.init_assigns or AUX_ATTR in e.cls.attrs for e in mro)
        if not initialised and any(t.style == "explicit" for t in taps):
            yield self.report(
                "EAG302",
                f"{inner.name} reads self.{AUX_ATTR} in forward but never initialises it: the "
                "first forward (profiling, before layers are set) raises AttributeError.",
                ctx.path(inner),
                inner.cls.line,
                inner.cls.column,
                hint=f"Set self.{AUX_ATTR} = tuple[int, ...]() in __init__.",
                repair=repair,
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
                repair=repair,
            )
        for each in forward.loops:
            uses_index = any(t.style == "explicit" for t in each.taps) or each.taps
            if each.slices_layers and each.enumerate_start is None and uses_index:
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
                )
        requested = self.options.get("aux-layers")
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
        if all(t.before_layer for t in taps):
            yield self.report(
                "EAG306",
                f"{where.name}.forward taps before each layer, so the last layer's output "
                "(index num_layers) can never be captured.",
                path,
                taps[0].line,
                taps[0].column,
            )


RULES = [ForwardTaps]
