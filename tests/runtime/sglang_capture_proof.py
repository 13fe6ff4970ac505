"""Run by an SGLang venv's python: what SGLang's own `set_eagle3_layers_to_capture` does with a
head's ids, target by target.

A target's `__init__` needs a distributed setup and its weights, so the method is called on a
stand-in: an instance of the registered class made without `__init__`, given what the capture
methods read (`config.num_hidden_layers`, also under `text_config`; `pp_group.is_last_rank`, and
the module's `get_parallel()` or `get_pp_group()` where it asks them) and, as `self.model`, an
instance of the decoder class eagle3lint names (or a bare module) holding L `nn.Identity`
layers, also as `self.language_model`. The method's own code then chooses `layers_to_capture`
or raises: the answer is SGLang's.

Input (stdin, JSON): [{"module", "class", "decoder_module", "decoder_class", "layers",
"ids"}, ...] (`ids` null: the call without ids). Output: one JSON object per request,
{"captured": [...]} or {"error": "Type: message"}; a module that does not import gives
{"not_run": "..."}.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from types import SimpleNamespace
from typing import Any

os.environ["CUDA_VISIBLE_DEVICES"] = ""
os.environ.setdefault("SGLANG_LOGGING_LEVEL", "ERROR")

from oracle import StubFinder

CAPTURE = "set_eagle3_layers_to_capture"


def _bare(cls: type) -> Any:
    """An instance of the `nn.Module` class `cls`, its `__init__` not run."""
    from torch import nn

    obj = cls.__new__(cls)
    nn.Module.__init__(obj)
    return obj


def run(request: dict[str, Any]) -> dict[str, Any]:
    from torch import nn

    try:
        module = importlib.import_module(request["module"])
        cls = getattr(module, request["class"])
        decoder_cls = (
            getattr(importlib.import_module(request["decoder_module"]), request["decoder_class"])
            if request["decoder_module"]
            else nn.Module
        )
    except Exception as exc:  # recorded, never counted either way
        return {"not_run": f"{type(exc).__name__}: {exc}"[:300]}
    layers = request["layers"]
    parallel = SimpleNamespace(pp_group=SimpleNamespace(is_last_rank=True))
    if hasattr(module, "get_parallel"):
        module.get_parallel = lambda: parallel
    if hasattr(module, "get_pp_group"):  # 0.5.8's MiniMax-M2 asks it
        module.get_pp_group = lambda: parallel.pp_group
    target = _bare(cls)
    target.config = SimpleNamespace(
        num_hidden_layers=layers, text_config=SimpleNamespace(num_hidden_layers=layers)
    )
    target.pp_group = parallel.pp_group
    decoder = _bare(decoder_cls)
    decoder.layers = nn.ModuleList(nn.Identity() for _ in range(layers))
    decoder.layers_to_capture = []
    target.model = decoder  # where most capture methods put the indices
    target.language_model = decoder  # where Gemma-4's vision-language wrapper puts them
    method = getattr(target, CAPTURE)
    try:
        method() if request["ids"] is None else method(list(request["ids"]))
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}"[:300]}
    return {"captured": list(decoder.layers_to_capture)}


def main() -> int:
    sys.meta_path.insert(0, StubFinder({"sgl_kernel"}))  # loads libcuda.so.1 at import
    for request in json.loads(sys.stdin.read()):
        print(json.dumps(run(request)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
