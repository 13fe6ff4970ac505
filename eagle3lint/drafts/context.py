"""The context a pair is served at and the positions its draft holds, as vLLM derives them.

vLLM's `_get_and_verify_max_len` (config/model.py) takes the smallest length key of a config,
times the RoPE scaling factor unless the type already counts it (YaRN, Llama-3, LongRoPE); a
model config built without `--max-model-len` is served at that length. The target's config has
`--hf-overrides` applied first; the draft's does not (a dict override reaches only the target).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from eagle3lint.errors import UsageError
from eagle3lint.hf_config import text_config

LENGTH_KEYS = (
    "max_position_embeddings",
    "n_positions",
    "max_seq_len",
    "seq_length",
    "model_max_length",
    "max_target_positions",
    "max_sequence_length",
    "max_seq_length",
    "seq_len",
)
"""The keys vLLM's `possible_keys` lists, the smallest of which bounds the length."""
ALREADY_SCALED = frozenset(
    {"su", "longrope", "llama3", "yarn", "deepseek_yarn", "deepseek_llama_scaling"}
)
"""RoPE types whose `max_position_embeddings` is not multiplied by their `factor`."""


@dataclass(frozen=True, slots=True)
class Served:
    """The length a pair is served at, and where it comes from (for messages)."""

    length: int
    source: str


def parse_hf_overrides(text: str | None) -> dict[str, Any]:
    """`--hf-overrides` as `vllm serve` takes it: a JSON object."""
    if text is None:
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"--hf-overrides: not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise UsageError("--hf-overrides: must be a JSON object, as vllm serve takes it")
    return data


def overridden(config: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """`config` with `overrides` applied as vLLM applies a dict: a dict value updates the
    sub-config of that name, anything else replaces the key."""
    merged = dict(config)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = overridden(merged[key], value)
        else:
            merged[key] = value
    return merged


def rope_parameters(config: dict[str, Any]) -> list[dict[str, Any]]:
    """Each RoPE parameter set of a config: transformers 5's `rope_parameters` (one, or one per
    layer type), else `rope_scaling`; the type under `rope_type` or the older `type`."""
    found = config.get("rope_parameters") or config.get("rope_scaling")
    if not isinstance(found, dict):
        return []
    sets = list(found.values()) if all(isinstance(v, dict) for v in found.values()) else [found]
    return [
        {**s, "rope_type": s.get("rope_type") or s.get("type") or "default"}
        for s in sets
        if isinstance(s, dict)
    ]


def rope_types(config: dict[str, Any]) -> list[str]:
    """The RoPE types of a config (`default` when it names none)."""
    return [s["rope_type"] for s in rope_parameters(config)] or ["default"]


def derived_length(config: dict[str, Any]) -> int | None:
    """The length vLLM derives from a (text) config; None when it holds no length key."""
    lengths = [
        v for k in LENGTH_KEYS if isinstance(v := config.get(k), int) and not isinstance(v, bool)
    ]
    if not lengths:
        return None
    length = float(min(lengths))
    sets = rope_parameters(config)
    if sets and "gemma3" not in str(config.get("model_type", "")):
        factors = [s.get("factor") for s in sets if s["rope_type"] not in ALREADY_SCALED]
        factor = next((f for f in factors if isinstance(f, int | float)), 1.0)
        length *= factor
    if any(s["rope_type"] == "longrope" for s in sets):
        original = config.get("original_max_position_embeddings")
        return original if isinstance(original, int) else int(length)
    return int(length)


def served(
    target: dict[str, Any], max_model_len: int | None, overrides: dict[str, Any]
) -> Served | None:
    """What the target is served at: `--max-model-len`, else the length vLLM derives from its
    config with `--hf-overrides` applied; None when the config holds no length."""
    if max_model_len is not None:
        return Served(max_model_len, "--max-model-len")
    length = derived_length(text_config(overridden(target, overrides)))
    if length is None:
        return None
    # Checked in 0.18-0.34: the draft's model config gets a callable override only.
    how = " with --hf-overrides, which vLLM does not apply to the draft's" if overrides else ""
    return Served(length, f"the target's default: its config{how}")
