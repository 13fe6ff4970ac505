"""A draft config's layer-id lists, as `pair` reads them for either engine: bounded when the
config is read, and shown a few ids at a time in messages and tables."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from eagle3lint.errors import UsageError

MAX_LAYER_IDS = 1024
"""Most ids a layer-id list of a draft config may hold. EAGLE-3 taps three layers and no model
has more than a few hundred; every list is compared, shown and handed to the rules whole
(10^6 ids took over two minutes in either engine's `pair`)."""
SHOWN = 5
"""Ids a message shows of a longer list, before `…` and the last one."""

T = TypeVar("T")


def check_layer_ids(data: dict[str, Any], file: Path) -> None:
    """Refuse a draft config holding a layer-id list (a `*layer_ids` key, at any depth of its
    objects) of more than `MAX_LAYER_IDS` ids: each engine reads them from another place
    (vLLM's runners from the top level, `eagle_config`, `dflash_config` or a speculators
    config's `transformer_layer_config`; SGLang's from `eagle_config`)."""
    # An explicit stack: the config's nesting is its author's to choose.
    stack: list[tuple[str, dict[str, Any]]] = [("", data)]
    while stack:
        prefix, holder = stack.pop()
        for key, value in holder.items():
            if isinstance(value, dict):
                stack.append((f"{prefix}{key}.", value))
            elif (
                key.endswith("layer_ids") and isinstance(value, list) and len(value) > MAX_LAYER_IDS
            ):
                raise UsageError(
                    f"--draft: {file}: {prefix}{key} holds {len(value):,} layer ids "
                    f"(at most {MAX_LAYER_IDS:,} are read)"
                )


def listed(
    values: Sequence[T],
    show: Callable[[T], str] = repr,
    *,
    brackets: bool = True,
    noun: str = "ids",
) -> str:
    """`values` as a message shows them: all of them when there are at most `SHOWN` + 2, else
    the first `SHOWN`, `…`, the last and the count (`[0, 1, 2, 3, 4, …, 999] (1,000 ids)`)."""
    few = len(values) <= SHOWN + 2
    parts = [show(v) for v in (values if few else [*values[:SHOWN], values[-1]])]
    if not few:
        parts.insert(SHOWN, "…")
    text = ", ".join(parts)
    text = f"[{text}]" if brackets else text
    return text if few else f"{text} ({len(values):,} {noun})"
