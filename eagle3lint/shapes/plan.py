"""Whether a decoder's layer loop can be tapped, and with which value.

The value is the residual stream entering layer k: `hidden_states + residual` (guarded for the
first layer, where `residual` is None) when the layers return a delta beside the residual, and
`hidden_states` when they return the whole stream or receive no residual at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .model import DELTA, STREAM, LayerConvention, LayerLoop


@dataclass(frozen=True, slots=True)
class TapPlan:
    """How `fix` taps one decoder, or why it cannot."""

    stream: bool
    """The layer's input is the whole stream in `hidden_states` (no residual to add)."""
    refusal: str | None = None


def plan_tap(
    loops: Sequence[LayerLoop],
    conventions: Sequence[LayerConvention],
    *,
    loop_helper: str | None,
    ends_with_return_name: bool,
    mixin: bool,
    has_init: bool,
) -> TapPlan:
    """Plan the taps of a forward with `loops`, whose layers follow `conventions` (one per
    decoder layer class the model builds; none when they could not be found)."""
    refusal = loop_refusal(
        loops,
        loop_helper=loop_helper,
        ends_with_return_name=ends_with_return_name,
        mixin=mixin,
        has_init=has_init,
    )
    if refusal is not None:
        return _refuse(refusal)
    call = loops[0].call
    assert call is not None  # a loop without one carries a refusal
    if not call.passes_residual:
        return TapPlan(stream=True)
    kinds = {c.kind for c in conventions}
    if kinds == {DELTA}:
        return TapPlan(stream=False)
    if kinds == {STREAM}:
        return TapPlan(stream=True)
    reasons = "; ".join(sorted({c.reason for c in conventions})) or "no decoder layer class found"
    return _refuse(f"cannot tell what the decoder layers return ({reasons})")


def loop_refusal(
    loops: Sequence[LayerLoop],
    *,
    loop_helper: str | None,
    ends_with_return_name: bool,
    mixin: bool,
    has_init: bool,
) -> str | None:
    """Why the forward with `loops` cannot be tapped whatever its layers return, or None."""
    if loop_helper is not None:
        return (
            f"the layer loop is in {loop_helper}(); its aux list would have to be returned "
            "through it"
        )
    if not loops:
        return "forward has no loop over self.layers"
    if len(loops) > 1:
        return f"forward has {len(loops)} loops over self.layers; expected exactly one"
    loop = loops[0]
    if loop.refusal is not None:
        return loop.refusal
    if not ends_with_return_name:
        return "forward does not end with `return <name>`; no final return to extend"
    if not mixin and not has_init:
        return "the decoder has no __init__ to initialise self.aux_hidden_state_layers in"
    assert loop.call is not None
    if mixin and loop.call.rebound_after:
        return (
            "the loop changes the hidden state after the layer call; the mixin's tap right "
            "after the call would miss it"
        )
    if mixin and loop.call.rebound_before:
        return (
            "the loop rebinds the hidden state before the layer call; the mixin's tap after "
            "the call would miss it"
        )
    return None


def _refuse(reason: str) -> TapPlan:
    return TapPlan(stream=False, refusal=reason)
