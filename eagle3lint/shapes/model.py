"""The descriptions the recognisers return: plain frozen data, no syntax trees and no libcst,
so summaries holding them load on warm runs without importing the parser."""

from __future__ import annotations

from dataclasses import dataclass

INDEX_NAMES = ("idx", "layer_idx")
"""Names a rewritten header gives the layer index, the first not taken in the function."""


@dataclass(frozen=True, slots=True)
class LayerCall:
    """The statement of the loop body that runs the layer: `hidden, residual = layer(...)`."""

    position: int
    """Index of the statement in the loop body (top level of the body)."""
    hidden: str
    residual: str | None
    """The second name the call binds; None for `hidden = layer(...)` or `hidden, _ = ...`."""
    passes_residual: bool
    """The call passes the residual in (a third `residual` argument): without it the layer
    receives the whole stream in `hidden`."""
    rebound_before: bool
    """A statement before the call in the loop body rebinds the hidden or residual name
    (Solar's pre-layer blending): a tap must come after it."""
    rebound_after: bool = False
    """A statement after the call rebinds the hidden or residual name (Qwen3-Omni's deepstack
    embeddings, Zamba2's `hidden_states = layer_outputs`): a tap right after the call would
    miss it."""


@dataclass(frozen=True, slots=True)
class LayerLoop:
    """A loop over the decoder layers and what a tap needs to know about it."""

    spelling: str
    """`layers`, `slice`, `islice`, `enumerate`, `range`, `islice-enumerate` (a slice of
    `enumerate(self.layers)`) or `other`."""
    index: str | None
    """The loop's index variable (None when it has none)."""
    layer: str | None
    """The variable holding the layer (None for `self.layers[i](...)` called directly)."""
    layers: str
    """Source of the iterable of layers (`islice(self.layers, ...)`); for `range`, the range."""
    start: str | None
    """Source of the first global layer index the loop visits, None when 0."""
    enumerate_start: str | None
    """`start` as enumerate (or range) gives it: None when the index counts from 0."""
    slices_layers: bool
    """The loop walks only this rank's layers (`islice(self.layers, start, end)` or a slice)."""
    runs_layers: bool
    """The body calls the layer; a loop that only mentions `self.layers` does not."""
    call: LayerCall | None
    nested: bool
    """The loop sits inside another block of the function, not at its top level."""
    refusal: str | None
    """Why `fix` cannot tap this loop, None when it can."""

    @property
    def global_index(self) -> bool:
        """The index counts global layer ids (what `aux_hidden_state_layers` holds)."""
        return self.index not in (None, "_") and (
            self.spelling == "range" or self.enumerate_start is not None or self.start is None
        )


DELTA = "delta"
STREAM = "stream"
UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class LayerConvention:
    """The residual convention of one decoder layer class's forward."""

    kind: str
    """`delta`, `stream` or `unknown` (module constants)."""
    reason: str
    """What the classification rests on, or why it could not be made."""
