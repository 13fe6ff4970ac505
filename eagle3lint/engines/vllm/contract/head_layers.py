"""How vLLM's EAGLE-3 head names its layers, read from a vLLM tree.

The head (`Eagle3LlamaForCausalLM`, `model_executor/models/llama_eagle3.py`) builds its
decoder with `start_layer_id=target_layer_num`, the target's layer count, and names its layers
`layers.{layer_idx + start_layer_id}`: the names right after the target's. Its attention
registers that name in the same table as the target's attention layers, which raises on a name
given twice (`attention/layer.py`, from 0.16 `model_executor/layers/attention/attention.py`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from eagle3lint.engines.vllm.contract.model import HeadLayerNames

HEAD = "model_executor/models/llama_eagle3.py"
ATTENTION_LAYERS = ("model_executor/layers/attention/attention.py", "attention/layer.py")
_START = re.compile(r"start_layer_id\s*=\s*(\w+)")
_NAMED_AFTER = re.compile(r"""layers\.\{[^}]*start_layer_id\}""")
_REFUSAL = re.compile(r"""raise\s+(\w+)\(\s*f["'](Duplicate layer name: )\{prefix\}["']\s*\)""")


def read_head_layers(vllm_dir: Path, read: Callable[[Path], str | None]) -> HeadLayerNames | None:
    """The head's layer naming in the tree at `vllm_dir`; None where the head is not named
    after the target's layer count or no refusal of a repeated name is found. `read` returns a
    file's text, or None when it is not there."""
    head_path = vllm_dir / HEAD
    head = read(head_path) or ""
    if not _NAMED_AFTER.search(head):
        return None
    start = count = None
    for found in _START.finditer(head):
        counted = re.search(
            rf"^\s*{re.escape(found.group(1))}\s*=\s*[^\n]*?\.(\w+)\(", head, re.MULTILINE
        )
        if counted is not None:
            start, count = found, counted.group(1)
            break
    if start is None or count is None:
        return None
    for rel in ATTENTION_LAYERS:
        path = vllm_dir / rel
        text = read(path)
        refusal = _REFUSAL.search(text) if text else None
        if text is not None and refusal is not None:
            return HeadLayerNames(
                str(head_path),
                head.count("\n", 0, start.start()) + 1,
                count,
                str(path),
                text.count("\n", 0, refusal.start()) + 1,
                f"{refusal.group(1)}: {refusal.group(2)}",
            )
    return None
