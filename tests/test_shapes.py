"""The shape recognisers on small sources: loop spellings, layer conventions, taps, the gate
list, the proposer's image-token mapping and layer names past the layer count."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import libcst as cst
import pytest

from eagle3lint.index.extract import summarize
from eagle3lint.shapes.gate import find_gate
from eagle3lint.shapes.image_tokens import find_image_token_map
from eagle3lint.shapes.layer_names import renamed_layer_indices
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


def _module(source: str) -> cst.Module:
    return cst.parse_module(textwrap.dedent(source))


_GATE = """
class SpeculativeConfig:
    def _verify_args(self):
        {assignments}
        if self.method == "eagle3" and self.target_model_config and not any(
            supported in self.target_model_config.hf_text_config.model_type
            for supported in {listed}
        ):
            raise ValueError("not supported")
"""


def test_gate_allow_list_is_read_and_extendable() -> None:
    gate = find_gate(_module(_GATE.format(assignments='ok = ["llama", "qwen"]', listed="ok")))
    assert gate is not None
    assert (gate.variable, gate.entries, gate.methods) == ("ok", ("llama", "qwen"), ("eagle3",))
    assert gate.function == "_verify_args"
    assert gate.refusal is None and gate.assignment is not None


@pytest.mark.parametrize(
    ("assignments", "entries", "refusal"),
    [
        ("ok = names()", None, "assigned a list of strings 0 times"),
        ('ok = ["llama"]\n        ok = ["qwen"]', ("qwen",), "2 times"),
    ],
)
def test_gate_lists_fix_cannot_extend_say_why(
    assignments: str, entries: tuple[str, ...] | None, refusal: str
) -> None:
    gate = find_gate(_module(_GATE.format(assignments=assignments, listed="ok")))
    assert gate is not None and gate.entries == entries
    assert gate.refusal is not None and refusal in gate.refusal


def test_single_model_type_gate_is_read_but_not_extendable() -> None:
    gate = find_gate(
        _module(
            """
            def check(self):
                if self.method == "eagle3" and "llama" not in self.model_config.model_type:
                    raise ValueError("llama only")
            """
        )
    )
    assert gate is not None
    assert (gate.variable, gate.entries, gate.methods) == (None, ("llama",), ("eagle3",))
    assert gate.refusal is not None and "single" in gate.refusal


def test_no_gate() -> None:
    assert find_gate(_module("def check(self):\n    return True\n")) is None


_PROPOSER = """
class EagleProposer:
    def load_model(self, target_model):
        if supports_multimodal(target_model):
            {body}
"""


def test_image_token_dispatch_is_read_and_extendable() -> None:
    body = """if self.get_model_name(target_model) in ["Qwen2_5_VL", "Qwen3VL"]:
                self.model.config.image_token_index = target_model.config.image_token_id
            elif self.get_model_name(target_model) == "Pixtral":
                self.model.config.image_token_index = target_model.config.vision.image_token_id
            else:
                self.model.config.image_token_index = target_model.config.image_token_index"""
    shape = find_image_token_map(_module(_PROPOSER.format(body=body)))
    assert shape is not None and shape.refusal is None
    assert [(b.classes, b.attribute) for b in shape.branches] == [
        (("Qwen2_5_VL", "Qwen3VL"), "image_token_id"),
        (("Pixtral",), "vision.image_token_id"),
    ]
    assert shape.fallback == "image_token_index"
    assert shape.assigned == "self.model.config.image_token_index"
    assert shape.target_model == "target_model"


def test_image_token_without_dispatch_is_read_but_not_extendable() -> None:
    body = "self.model.config.image_token_index = target_model.config.image_token_index"
    shape = find_image_token_map(_module(_PROPOSER.format(body=body)))
    assert shape is not None and shape.branches == ()
    assert shape.fallback == "image_token_index"
    assert shape.refusal is not None and "does not dispatch" in shape.refusal


def test_no_image_token_map() -> None:
    assert find_image_token_map(_module("def load_model(self, m):\n    pass\n")) is None


def test_the_extractor_does_not_import_libcst_matchers() -> None:
    """The parse worker imports the extractor after every edit; `libcst.matchers` alone would
    add a few tenths of a second to each of those runs (only the gate, the proposer mapping and
    the codemods match nodes with it)."""
    code = "import sys, eagle3lint.index.extract; print('libcst.matchers' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.strip() == "False", result.stderr


@pytest.mark.parametrize(
    ("body", "found"),
    [
        # IQuest-Coder's loop model: through two locals, in a `.replace` of the prefix.
        (
            """
            total = config.num_hidden_layers
            for loop_idx in range(2):
                unique = loop_idx * total + base
                named = prefix.replace(f"layers.{base}", f"layers.{unique}")
            """,
            ["unique = loop_idx * total + base"],
        ),
        # Straight into a `prefix=` argument.
        (
            'self.extra = Layer(prefix=f"{prefix}.layers.{config.num_hidden_layers + i}")',
            ["config.num_hidden_layers + i"],
        ),
        # The EAGLE-3 head's own naming: after the target's, but not from its config.
        ('self.layer = Layer(prefix=f"{prefix}.layers.{i + start_layer_id}")', []),
        # A checkpoint's weight names in a mapper (GLM-4's dropped MTP layers): no module.
        (
            'self.mapper = Mapper({f"model.layers.{config.num_hidden_layers + i}.": None})',
            [],
        ),
        # Another list's index (`cache_only_layers`) is not the decoder's.
        ('self.c = Layer(prefix=f"cache_only_layers.{config.num_hidden_layers}")', []),
    ],
)
def test_layer_names_past_the_layer_count(body: str, found: list[str]) -> None:
    source = "def __init__(self, config, prefix, base, i):\n" + textwrap.indent(
        textwrap.dedent(body).strip(), "    "
    )
    assert renamed_layer_indices(_function(source)) == found
