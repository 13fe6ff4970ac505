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
    Explanation,
    Finding,
    ForwardSummary,
    LayerConvention,
    Rule,
    RuleContext,
    Severity,
    TapSummary,
    Target,
)

AUX_ATTR = AUX_LAYERS_ATTR


_TAP_RUNTIME = (
    "With aux layers requested, the runner unpacks the target's output as `hidden_states, "
    "aux_hidden_states = model_output` and concatenates the aux tensors for the drafter. Aux "
    "index k is the residual stream entering decoder layer k (`hidden_states + residual`), so "
    "the decoder's layer loop must collect the requested indices and return `(hidden_states, "
    "aux_hidden_states)` when it collected any."
)
_TAP_ERROR = (
    "```text\nValueError: too many values to unpack (expected 2)\n```\nbecause the bare "
    "hidden-states tensor is unpacked along its first dimension; the V2 runner asserts "
    "`isinstance(model_output, tuple)` from 0.19.0 (`AssertionError`)."
)
_TAPPED_LOOP = """\
aux_hidden_states = []
for idx, layer in enumerate(
    islice(self.layers, self.start_layer, self.end_layer), start=self.start_layer
):
    if idx in self.aux_hidden_state_layers:
        aux_hidden_states.append(
            hidden_states + residual if residual is not None else hidden_states
        )
    hidden_states, residual = layer(positions, hidden_states, residual)
...
if len(aux_hidden_states) > 0:
    return hidden_states, aux_hidden_states
return hidden_states
"""

_EAG301 = Explanation(
    runtime=_TAP_RUNTIME,
    error=_TAP_ERROR,
    releases="Every release. DeepseekV2Model has no tap before 0.18.0.",
    example="""\
for layer in islice(self.layers, self.start_layer, self.end_layer):
    hidden_states, residual = layer(positions, hidden_states, residual)
...
return hidden_states
""",
    fix=_TAPPED_LOOP,
)

_EAG302 = Explanation(
    runtime="The tap tests `idx in self.aux_hidden_state_layers` on every forward. The attribute "
    "exists only once something assigns it: the decoder's `__init__`, "
    "`set_aux_hidden_state_layers()` (called only when EAGLE-3 is on), or `EagleModelMixin`'s "
    "class default (0.18.0+).",
    error="```text\nAttributeError: 'MyModel' object has no attribute 'aux_hidden_state_layers'"
    "\n```\non the first forward of every run that never sets the layers, that is every run "
    "without EAGLE-3.",
    releases="Every release.",
    example="""\
class MyModel(nn.Module):
    def __init__(self, *, vllm_config, prefix=""):
        # never sets self.aux_hidden_state_layers
        ...
""",
    fix="""\
class MyModel(nn.Module):
    def __init__(self, *, vllm_config, prefix=""):
        ...
        self.aux_hidden_state_layers = tuple[int, ...]()
""",
)

_EAG303 = Explanation(
    runtime=_TAP_RUNTIME,
    error="When the list is never created, the first tap raises `UnboundLocalError` (or "
    "`NameError`); when it is not returned, " + _TAP_ERROR,
    releases="Every release.",
    example="""\
for idx, layer in enumerate(islice(self.layers, self.start_layer, self.end_layer)):
    if idx in self.aux_hidden_state_layers:
        aux_hidden_states.append(hidden_states + residual)
    hidden_states, residual = layer(positions, hidden_states, residual)
...
return hidden_states
""",
    fix=_TAPPED_LOOP,
)

_EAG304 = Explanation(
    runtime="Under pipeline parallelism each rank runs only its slice, `islice(self.layers, "
    "self.start_layer, self.end_layer)`. Without `start=self.start_layer`, `enumerate` counts "
    "from 0 on every rank, so `idx in self.aux_hidden_state_layers` compares positions within "
    "the slice with global layer ids.",
    error="None from the V1 runner: other layers than requested (or none) are captured and the "
    "draft acceptance rate drops silently. The V2 runner refuses pipeline parallelism with "
    "EAGLE-3 (`ValueError: EAGLE3 with pipeline parallel is not supported.`, 0.17.0-0.23.0) and "
    "from 0.30.0 raises `ValueError: MyModelForCausalLM does not support eagle3 with pipeline "
    "parallelism` unless the decoder sets `supports_aux_hidden_states_over_pp = True`.",
    releases="Every release, with `pipeline_parallel_size` > 1. llama and qwen2 enumerate "
    "without `start=` up to 0.29.0.",
    example="""\
for idx, layer in enumerate(islice(self.layers, self.start_layer, self.end_layer)):
    if idx in self.aux_hidden_state_layers:
        ...
""",
    fix="""\
for idx, layer in enumerate(
    islice(self.layers, self.start_layer, self.end_layer), start=self.start_layer
):
    if idx in self.aux_hidden_state_layers:
        ...
""",
)

_EAG305 = Explanation(
    runtime="On the first pipeline rank `residual` is None until the first layer has run. A "
    "tap before layer 0 that captures `hidden_states + residual` adds None to a tensor. The "
    "default layer ids `(2, num_layers // 2, num_layers - 3)` never include 0; a drafter whose "
    "`eagle_aux_hidden_state_layer_ids` lists 0 does. Set the ids your drafters request with "
    "`[tool.eagle3lint.rules.forward-taps] aux-layers = [...]`: the code is then reported only "
    "if 0 is among them, and as an error.",
    error="```text\nTypeError: unsupported operand type(s) for +: 'Tensor' and 'NoneType'\n```\n"
    "on the first forward.",
    releases="Every release with a tap before each layer: llama and qwen2 up to 0.17.0, "
    "DeepseekV2 in every release.",
    example="""\
if idx in self.aux_hidden_state_layers:
    aux_hidden_states.append(hidden_states + residual)
""",
    fix="""\
if idx in self.aux_hidden_state_layers:
    aux_hidden_states.append(hidden_states + residual if residual is not None else hidden_states)
""",
)

_EAG306 = Explanation(
    runtime="Index k is the residual stream entering layer k. A tap before each layer captures "
    "indices 0 to num_layers - 1 but never num_layers, the last layer's output, which the "
    "`EagleModelMixin` taps of 0.18.0+ (after each layer, at `idx + 1`) can capture.",
    error="None while the requested ids stay below num_layers. A drafter that requests "
    "num_layers gets one aux tensor fewer than its `fc` layer expects and fails with a shape "
    "error (`RuntimeError: mat1 and mat2 shapes cannot be multiplied ...`).",
    releases="Every release with a tap before each layer.",
    example="""\
for idx, layer in enumerate(islice(self.layers, self.start_layer, self.end_layer)):
    if idx in self.aux_hidden_state_layers:
        aux_hidden_states.append(hidden_states + residual)
    hidden_states, residual = layer(positions, hidden_states, residual)
""",
    fix="""\
# vLLM 0.18.0+, with the decoder an EagleModelMixin:
aux_hidden_states = self._maybe_add_hidden_state([], 0, hidden_states, residual)
for idx, layer in enumerate(islice(self.layers, self.start_layer, self.end_layer)):
    hidden_states, residual = layer(positions, hidden_states, residual)
    self._maybe_add_hidden_state(aux_hidden_states, idx + 1, hidden_states, residual)
""",
)

_EAG307 = Explanation(
    runtime=_TAP_RUNTIME + " eagle3lint looks for that loop (`for ... in self.layers`, "
    "possibly through `enumerate` and `islice`) in the decoder's forward and found none, so it "
    "can neither check the taps nor add them.",
    error="Without a tap, the `ValueError` of EAG301. With a tap eagle3lint cannot see, none.",
    releases="Every release.",
    example="""\
def forward(self, positions, hidden_states, residual):
    return self.run_layers(positions, hidden_states, residual)  # the loop is elsewhere
""",
    fix="""\
def forward(self, positions, hidden_states, residual):
    aux_hidden_states = []
    for idx, layer in enumerate(self.layers):  # the loop in the forward itself
        ...


# Or, with the taps checked by hand, silence it on the line of the finding:
def forward(self, positions, hidden_states, residual):  # eagle3lint: ignore[EAG307]
    return self.run_layers(positions, hidden_states, residual)
""",
)

_EAG308 = Explanation(
    runtime=_TAP_RUNTIME + " eagle3lint follows `self.model = ...` in the model class's "
    "`__init__` to the decoder class; here it could not resolve which class that is.",
    error="Without a tap, the `ValueError` of EAG301. With a tap eagle3lint cannot see, none.",
    releases="Every release.",
    example="""\
def __init__(self, *, vllm_config, prefix=""):
    ...
    self.model = build_decoder(vllm_config)  # a factory eagle3lint cannot follow
""",
    fix="""\
def __init__(self, *, vllm_config, prefix=""):
    ...
    self.model = MyModel(vllm_config=vllm_config, prefix=maybe_prefix(prefix, "model"))
""",
)


_EAG309 = Explanation(
    runtime="Aux index k is the residual stream entering decoder layer k. Llama-style layers "
    "return `(delta, residual)` and leave the sum to the next layer's fused add-norm, so the "
    "stream is `hidden_states + residual`. Layers that add the residual themselves "
    "(`hidden_states = residual + hidden_states`; PhiMoE, Exaone4, Cohere, StableLM, "
    "GraniteMoeHybrid) return the whole stream in `hidden_states`, and a loop that passes no "
    "residual to its layers has the whole stream there too: adding `residual` again counts it "
    "twice.",
    error="None: the drafter receives states that differ from the ones it was trained on and "
    "the acceptance rate collapses silently.",
    releases="Every release, for decoders whose layers return the full residual stream.",
    example="""\
class MyDecoderLayer(nn.Module):
    def forward(self, positions, hidden_states, residual):
        residual = hidden_states
        hidden_states = residual + self.self_attn(positions, hidden_states)
        return hidden_states, residual
...
    if idx in self.aux_hidden_state_layers:
        aux_hidden_states.append(hidden_states + residual)
""",
    fix="""\
    if idx in self.aux_hidden_state_layers:
        aux_hidden_states.append(hidden_states)
""",
)

_EAG310 = Explanation(
    runtime="A tap before the layer call runs before the first layer has bound anything. A "
    "name the tap reads must be bound on every path to it: a parameter, or assigned before "
    "the loop on every branch.",
    error="```text\nUnboundLocalError: cannot access local variable 'residual' where it is not "
    "associated with a value\n```\non the first forward, with EAGLE-3 off too when the tap's "
    "guard reads the name first.",
    releases="Every release.",
    example="""\
for idx, layer in enumerate(self.layers):
    if idx in self.aux_hidden_state_layers:
        aux_hidden_states.append(hidden_states + residual)
    hidden_states, residual = layer(positions, hidden_states)
""",
    fix="""\
for idx, layer in enumerate(self.layers):
    if idx in self.aux_hidden_state_layers:
        aux_hidden_states.append(hidden_states)
    hidden_states, residual = layer(positions, hidden_states)
""",
)


class ForwardTaps(Rule):
    slug = "forward-taps"
    codes = (
        Code(
            "EAG301",
            "missing-forward-tap",
            "The decoder's layer loop never collects aux hidden states.",
            Severity.ERROR,
            fixable=True,
            explain=_EAG301,
        ),
        Code(
            "EAG302",
            "aux-layers-not-initialised",
            "`aux_hidden_state_layers` is read by the forward but never initialised.",
            Severity.ERROR,
            explain=_EAG302,
        ),
        Code(
            "EAG303",
            "aux-not-returned",
            "The forward does not build and return `(hidden_states, aux_hidden_states)`.",
            Severity.ERROR,
            explain=_EAG303,
        ),
        Code(
            "EAG304",
            "pp-rank-local-index",
            "Tap indices are rank-local under pipeline parallelism.",
            Severity.WARNING,
            explain=_EAG304,
        ),
        Code(
            "EAG305",
            "residual-none-first-layer",
            "`hidden_states + residual` fails for layer 0 where residual is None.",
            Severity.WARNING,
            explain=_EAG305,
        ),
        Code(
            "EAG306",
            "final-layer-unreachable",
            "Taps before each layer cannot capture the last layer's output.",
            Severity.INFO,
            explain=_EAG306,
        ),
        Code(
            "EAG307",
            "no-layer-loop",
            "No loop over `self.layers` was found in the decoder's forward.",
            Severity.WARNING,
            explain=_EAG307,
        ),
        Code(
            "EAG308",
            "decoder-not-found",
            "The inner decoder (`self.model`) could not be resolved.",
            Severity.WARNING,
            explain=_EAG308,
        ),
        Code(
            "EAG309",
            "tap-double-counts-residual",
            "The tap adds a residual its decoder layers have already added.",
            Severity.ERROR,
            explain=_EAG309,
        ),
        Code(
            "EAG310",
            "tap-reads-unbound-name",
            "The tap reads a name that is not bound on every path to it.",
            Severity.ERROR,
            explain=_EAG310,
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
                "`hidden_states, aux_hidden_states = model_output` unpacking fails.",
                path,
                loop.line,
                loop.column,
                hint="Collect `hidden_states + residual` entering each layer listed in "
                "self.aux_hidden_state_layers and return (hidden_states, aux_hidden_states).",
                repair=repair,
                fix_refused=plan.refusal or "",
            )
            return
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
        for each in forward.loops:
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
