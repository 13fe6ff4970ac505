"""A speculators head's partial rotary factor, when its trainer ignored it.

speculators before 0.7.0 trained the head's layer with full rotation while its
`transformer_layer_config` kept the target's `partial_rotary_factor` (speculators#613); 0.7.0
added `draft_mrope_full_head_hack` (on by default, its train/config/schema.py) and later releases
drop the factor from non-MRoPE configs, so the config and the training agree again
(speculators#733).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from eagle3lint.engines.vllm.contract.draft_rotary import NESTED, TOP

FIXED_IN = (0, 7, 0)
"""The first speculators release whose heads rotate as their config says."""

_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")


@dataclass(frozen=True, slots=True)
class HeadRotary:
    """A factor below 1 in a head trained with full rotation."""

    version: str
    """The config's `speculators_version`."""
    factor: float
    place: str
    """`NESTED` (`transformer_layer_config.rope_parameters`) or `TOP`."""


def untrained_partial_rotary(data: dict[str, Any]) -> HeadRotary | None:
    """The head's partial rotary factor when a speculators release before `FIXED_IN` wrote its
    config; None for any other config, a factor of 1 or one that is not a number."""
    version = data.get("speculators_version")
    found = _VERSION.match(version) if isinstance(version, str) else None
    if found is None or tuple(int(g or 0) for g in found.groups()) >= FIXED_IN:
        return None
    layer = data.get("transformer_layer_config")
    if not isinstance(layer, dict):
        return None
    rope = layer.get("rope_parameters")
    candidates = [(rope.get("partial_rotary_factor"), NESTED)] if isinstance(rope, dict) else []
    candidates.append((layer.get("partial_rotary_factor"), TOP))
    for factor, place in candidates:
        if isinstance(factor, int | float) and not isinstance(factor, bool) and 0 < factor < 1:
            return HeadRotary(version, float(factor), place)
    return None
