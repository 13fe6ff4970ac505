"""Acceptance: the rewritten DeepSeek-V2 decoder returns the inputs of the tapped layers.

The reduced vLLM 0.16 fixture is rewritten, and its `DeepseekV2Model` class is executed with
plain numbers standing in for tensors: layer `i` maps `(h, r)` to `(2h + i, r + 1)` and records
the input it received (`h + r`, or `h` while there is no residual yet).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import islice
from types import SimpleNamespace

import libcst as cst
import pytest

from eagle3lint.codemod import add_forward_taps, add_mixin_taps

NUM_LAYERS = 6
INPUT = 1.0


class Tensors:
    """Stands in for vLLM's IntermediateTensors."""

    def __init__(self, tensors: dict[str, float | None]) -> None:
        self.tensors = tensors

    def __getitem__(self, key: str) -> float | None:
        return self.tensors[key]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Tensors) and self.tensors == other.tensors

    __hash__ = None  # type: ignore[assignment]


class Mixin:
    """Stands in for vLLM 0.18's EagleModelMixin, following its documented behaviour."""

    aux_hidden_state_layers: tuple[int, ...] = ()

    def _maybe_add_hidden_state(
        self, aux: list[float], layer_idx: int, hidden: float, residual: float | None
    ) -> list[float]:
        if layer_idx in self.aux_hidden_state_layers:
            aux.append(hidden if residual is None else hidden + residual)
        return aux


@dataclass(frozen=True)
class Rank:
    is_first_rank: bool
    is_last_rank: bool
    start_layer: int
    end_layer: int


SINGLE = Rank(is_first_rank=True, is_last_rank=True, start_layer=0, end_layer=NUM_LAYERS)
FIRST_OF_TWO = Rank(is_first_rank=True, is_last_rank=False, start_layer=0, end_layer=3)
LAST_OF_TWO = Rank(is_first_rank=False, is_last_rank=True, start_layer=3, end_layer=NUM_LAYERS)


class Layer:
    def __init__(self, index: int, seen: dict[int, float]) -> None:
        self.index = index
        self.seen = seen

    def __call__(
        self, positions: int, hidden: float, residual: float | None, scale: float | None
    ) -> tuple[float, float]:
        self.seen[self.index] = hidden if residual is None else hidden + residual
        return hidden * 2 + self.index, (0 if residual is None else residual) + 1


@dataclass
class Run:
    output: object
    # Input of each layer that ran, by layer index.
    seen: dict[int, float]


def run(
    module: cst.Module,
    rank: Rank,
    aux_layers: tuple[int, ...] | None = None,
    handed_over: Tensors | None = None,
) -> Run:
    """Build the module's DeepseekV2Model on `rank` with stand-ins, and run its forward.

    `handed_over` is what the previous pipeline rank returned, for ranks other than the first.
    """
    [cls] = [
        s for s in module.body if isinstance(s, cst.ClassDef) and s.name.value == "DeepseekV2Model"
    ]
    seen: dict[int, float] = {}
    namespace: dict[str, object] = {
        "support_torch_compile": lambda model_class: model_class,
        "nn": SimpleNamespace(Module=type("Module", (), {})),
        "torch": SimpleNamespace(Tensor=float),
        "VllmConfig": object,
        "IntermediateTensors": Tensors,
        "EagleModelMixin": Mixin,
        "islice": islice,
        "get_pp_group": lambda: rank,
        "VocabParallelEmbedding": lambda *args, **kwargs: float,
        "PPMissingLayer": lambda: None,
        "RMSNorm": lambda *args, **kwargs: lambda hidden, residual: (hidden + residual, hidden),
        "make_layers": lambda num_layers, factory, prefix: (
            rank.start_layer,
            rank.end_layer,
            [Layer(index, seen) for index in range(num_layers)],
        ),
        "make_empty_intermediate_tensors_factory": lambda names, size: None,
    }
    exec(compile(module.code_for_node(cls), "DeepseekV2Model", "exec"), namespace)
    config = SimpleNamespace(
        vocab_size=16, hidden_size=8, num_hidden_layers=NUM_LAYERS, rms_norm_eps=1e-6
    )
    model_class = namespace["DeepseekV2Model"]
    assert callable(model_class)
    model = model_class(vllm_config=SimpleNamespace(model_config=SimpleNamespace(hf_config=config)))
    if aux_layers is not None:
        model.aux_hidden_state_layers = aux_layers
    output = model.forward(INPUT, positions=0, intermediate_tensors=handed_over)
    return Run(output, seen)


Rewrite = Callable[[cst.Module], cst.Module]
REWRITES: dict[str, Rewrite] = {
    "stub": lambda module: add_forward_taps(module, "DeepseekV2Model"),
    "mixin": lambda module: add_mixin_taps(module, "DeepseekV2Model"),
}


@pytest.fixture
def original(fixture_source: Callable[[str], str]) -> cst.Module:
    return cst.parse_module(fixture_source("deepseek_v2_016.py"))


@pytest.mark.parametrize("style", REWRITES)
@pytest.mark.parametrize("aux_layers", [(0, 3), (2, 5), (1, 4)])
def test_returns_the_inputs_of_the_tapped_layers(
    original: cst.Module, style: str, aux_layers: tuple[int, int]
) -> None:
    plain = run(original, SINGLE)
    tapped = run(REWRITES[style](original), SINGLE, aux_layers)
    first, second = aux_layers
    assert tapped.output == (plain.output, [plain.seen[first], plain.seen[second]])


@pytest.mark.parametrize("style", REWRITES)
def test_without_tapped_layers_returns_what_the_original_returned(
    original: cst.Module, style: str
) -> None:
    plain = run(original, SINGLE)
    tapped = run(REWRITES[style](original), SINGLE, ())
    assert isinstance(tapped.output, float)
    assert tapped.output == plain.output


@pytest.mark.parametrize("style", REWRITES)
def test_non_last_rank_returns_intermediate_tensors_unchanged(
    original: cst.Module, style: str
) -> None:
    plain = run(original, FIRST_OF_TWO)
    tapped = run(REWRITES[style](original), FIRST_OF_TWO, (0, 2))
    assert isinstance(plain.output, Tensors)
    assert tapped.output == plain.output


@pytest.mark.parametrize("style", REWRITES)
def test_last_rank_taps_its_own_layers_by_absolute_index(original: cst.Module, style: str) -> None:
    handed_over = run(original, FIRST_OF_TWO).output
    assert isinstance(handed_over, Tensors)
    plain = run(original, LAST_OF_TWO, handed_over=handed_over)
    tapped = run(REWRITES[style](original), LAST_OF_TWO, (1, 3, 5), handed_over)
    # Layer 1 ran on the other rank; its input is not this rank's to return.
    assert tapped.output == (plain.output, [plain.seen[3], plain.seen[5]])
    # The two ranks together compute what one rank does.
    single = run(original, SINGLE)
    assert plain.output == single.output
    assert plain.seen[3] == single.seen[3]
