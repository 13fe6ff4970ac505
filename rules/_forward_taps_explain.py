"""The long forms of the forward-taps codes (`eagle3lint explain EAG3xx`)."""

from __future__ import annotations

from eagle3lint.api import Explanation

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

EAG301 = Explanation(
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

EAG302 = Explanation(
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

EAG303 = Explanation(
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

EAG304 = Explanation(
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

EAG305 = Explanation(
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

EAG306 = Explanation(
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

EAG307 = Explanation(
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

EAG308 = Explanation(
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


EAG309 = Explanation(
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

EAG310 = Explanation(
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
