"""The shape recognisers on small sources: loop spellings, layer conventions, taps."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from eagle3lint.index.extract import summarize
from eagle3lint.shapes.loop import running_loops
from eagle3lint.shapes.model import DELTA, STREAM, UNKNOWN
from eagle3lint.shapes.residual import classify


def _function(source: str) -> cst.FunctionDef:
    func = cst.parse_module(textwrap.dedent(source)).body[0]
    assert isinstance(func, cst.FunctionDef)
    return func


@pytest.mark.parametrize(
    ("header", "call", "spelling", "index", "start"),
    [
        ("for layer in self.layers:", "layer(h, r)", "layers", None, None),
        ("for layer in self.layers[a:b]:", "layer(h, r)", "slice", None, "a"),
        ("for layer in islice(self.layers, a, b):", "layer(h, r)", "islice", None, "a"),
        ("for i, layer in enumerate(self.layers):", "layer(h, r)", "enumerate", "i", None),
        ("for i in range(a, b):", "self.layers[i](h, r)", "range", "i", "a"),
        (
            "for i, layer in islice(enumerate(self.layers), a, b):",
            "layer(h, r)",
            "islice-enumerate",
            "i",
            "a",
        ),
    ],
)
def test_layer_loop_spellings(
    header: str, call: str, spelling: str, index: str | None, start: str | None
) -> None:
    source = f"def forward(self, h, r):\n    {header}\n        h, r = {call}\n    return h\n"
    func = _function(source)
    ((_, loop),) = running_loops(func.body)
    assert (loop.spelling, loop.index, loop.start) == (spelling, index, start)
    assert loop.refusal is None and loop.call is not None
    assert (loop.call.hidden, loop.call.residual, loop.call.passes_residual) == ("h", "r", True)


@pytest.mark.parametrize(
    ("body", "hidden"),
    [
        ("h = layer(h, p)", "h"),
        # Zamba2 (0.16.0): the stream enters as `h`; `out` is bound by the call itself.
        ("out = layer(h, original=o)\n        h = out", "h"),
        ("out = layer(h)", None),
    ],
)
def test_the_tapped_name_is_what_enters_the_layer(body: str, hidden: str | None) -> None:
    header = "def forward(self, h, o, p):\n    for layer in self.layers:\n"
    source = f"{header}        {body}\n    return h\n"
    ((_, loop),) = running_loops(_function(source).body)
    assert (loop.call.hidden if loop.call else None) == hidden


def test_a_loop_rebinding_its_index_is_refused() -> None:
    """Qwen3-Omni's `layer_idx = layer_idx + self.start_layer`: `start=` would add it twice."""
    source = (
        "def forward(self, h, r):\n"
        "    for i, layer in enumerate(self.layers[self.start_layer : self.end_layer]):\n"
        "        i = i + self.start_layer\n"
        "        h, r = layer(h, r)\n"
        "    return h\n"
    )
    ((_, loop),) = running_loops(_function(source).body)
    assert loop.refusal is not None and "rebinds its index" in loop.refusal


def test_a_rebinding_after_the_layer_call_is_recorded() -> None:
    """Qwen3-Omni adds deepstack embeddings after the call: the mixin's tap there misses them."""
    source = (
        "def forward(self, h, r):\n"
        "    for layer in self.layers:\n"
        "        h, r = layer(h, r)\n"
        "        h = h + self.deepstack\n"
        "    return h\n"
    )
    ((_, loop),) = running_loops(_function(source).body)
    assert loop.call is not None and loop.call.rebound_after


def test_a_loop_that_only_walks_the_layers_is_not_a_layer_loop() -> None:
    func = _function(
        "def forward(self):\n    for layer in self.layers:\n        layer.x = 1\n    return 0\n"
    )
    assert [loop.runs_layers for _, loop in running_loops(func.body)] == [False]


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        # Llama: the sublayer output beside the residual, summed by the next layer's norm.
        ("h, r = self.norm(h, r)\nh = self.mlp(h)\nreturn h, r", DELTA),
        # PhiMoE / Exaone4: the layer adds the residual itself.
        ("r = h\nh = self.mlp(h)\nh = r + h\nreturn h, r", STREAM),
        # DeepseekV2: scaling in place keeps the convention.
        ("h = self.mlp(h)\nif x:\n    h *= 0.5\nreturn h, r", DELTA),
        ("if x:\n    h = h + r\nelse:\n    h = self.mlp(h)\nreturn h, r", UNKNOWN),
        ("return self.mlp(h)", UNKNOWN),
        # LongCat-Flash: the MoE branch added to the MLP's output, the residual beside it.
        ("m = self.moe(h)\nh = self.mlp(h)\nh = h + m\nreturn h, r", DELTA),
        # StableLM: the residual added and the stream returned alone.
        ("residual = h\nh = self.mlp(h)\nh = residual + h\nreturn h", STREAM),
        ("m = self.moe(h)\nh = h + m\nreturn h", UNKNOWN),
    ],
)
def test_layer_conventions(body: str, kind: str) -> None:
    source = "def forward(self, h, r):\n" + textwrap.indent(body, "    ") + "\n"
    assert classify(_function(source)).kind == kind


DICT_CAPTURE = """
class Model:
    def forward(self, h):
        by_layer: dict[int, object] = {}
        h = self._run(range(self.start_layer, self.end_layer), h, by_layer)
        aux_hidden_states = [by_layer[i] for i in self.aux_hidden_state_layers if i in by_layer]
        if len(aux_hidden_states) > 0:
            return h, aux_hidden_states
        return h

    def _run(self, ids, h, by_layer):
        for idx in ids:
            h, aux = self.layers[idx](h, capture=idx in self.aux_hidden_state_layers)
            if aux is not None:
                by_layer[idx] = aux.mean(dim=1)
        return h
"""


def test_dict_capture_is_a_tap() -> None:
    forward = summarize(DICT_CAPTURE, "m.py").classes["Model"].forward
    assert forward is not None and forward.loop_helper == "_run"
    ((tap,),) = [loop.taps for loop in forward.loops]
    assert (tap.style, tap.before_layer, tap.unbound) == ("dict", False, [])
    assert forward.aux_list_initialised and forward.returns_aux_tuple


def test_tap_reading_a_name_bound_only_by_the_layer_call_is_unbound() -> None:
    source = """
class Model:
    def forward(self, h):
        aux = []
        for idx, layer in enumerate(self.layers):
            if idx in self.aux_hidden_state_layers:
                t = h + r
                aux.append(t)
            h, r = layer(h)
        return h
"""
    forward = summarize(source, "m.py").classes["Model"].forward
    assert forward is not None
    ((tap,),) = [loop.taps for loop in forward.loops]
    assert tap.unbound == ["r"] and tap.adds_residual
