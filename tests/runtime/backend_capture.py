"""What vLLM's Transformers backend records for transformers' model of each model_type (run by a
release's own venv: vLLM and the transformers it installs).

Reads a JSON request on stdin, `{"types": [...], "layers": N, "ids": [...]}`, and prints one
JSON line per model_type: the outcome of the backend's capture path on a tiny random model of
that type, built on CPU from transformers' own config with small sizes (`tiny.SMALL`):

- the layer names are found as the backend's `recursive_replace` finds them (every ModuleList
  whose length is the text config's `num_hidden_layers`; the class of its last layer kept);
- the release's own `set_aux_hidden_state_layers` is called, unbound, on a stand-in holding
  the model and those names;
- the model is run as the backend's forward runs it (`return_dict=False` and the
  `output_aux_hidden_state_<id>` flags), and what the backend would take as aux hidden states
  (`outputs[1:]`, each `x[0]`) is counted and its shapes checked.

`outcome` is `records` (one state of the hidden size per id), `records-nothing`, `records N of
M`, or the exception the setter or the forward raised (`KeyError`, `ImportError`, ...).
"""

from __future__ import annotations

import contextlib
import json
import sys
import traceback
from pathlib import Path
from types import SimpleNamespace
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))

from tiny import LAYER_COUNTS, SMALL


def shrunk(config: Any, layers: int) -> Any:
    """`config` and every config it holds with `SMALL`'s sizes and `layers` layers."""
    for part in [config, *(v for v in vars(config).values() if hasattr(v, "to_dict"))]:
        for key, value in SMALL.items():
            if getattr(part, key, None) is not None:
                # A derived attribute (Falcon's `head_dim`) is a property without a setter.
                with contextlib.suppress(AttributeError):
                    setattr(part, key, value)
        counts = [k for k in LAYER_COUNTS if isinstance(getattr(part, k, None), int)]
        before = getattr(part, counts[0]) if counts else None
        for key in counts:
            with contextlib.suppress(AttributeError):
                setattr(part, key, layers)
        for key, value in list(vars(part).items()):
            if isinstance(value, list) and before and len(value) == before and before > layers:
                setattr(part, key, value[:layers])
        # Defaults sized for the full model that the small sizes above leave inconsistent.
        vocab, heads = getattr(part, "vocab_size", None), getattr(part, "num_attention_heads", None)
        for key in ("pad_token_id", "bos_token_id", "eos_token_id"):
            token = getattr(part, key, None)
            if isinstance(vocab, int) and isinstance(token, int) and token >= vocab:
                setattr(part, key, 0)
        if isinstance(getattr(part, "rotary_dim", None), int) and isinstance(heads, int):
            part.rotary_dim = min(part.rotary_dim, SMALL["hidden_size"] // heads)
    return config


def layer_names(model: Any, count: int) -> tuple[Any, dict[int, str]]:
    """The backend's `_target_class` and `_layer_names`: the children of every ModuleList of
    `count` modules, named relative to the model (`recursive_replace`)."""
    from torch import nn

    target_class: Any = None
    names: dict[int, str] = {}
    for name, module in model.named_modules():
        if isinstance(module, nn.ModuleList) and len(module) == count:
            for child_name, child in module.named_children():
                target_class = type(child)
                names[int(child_name)] = f"{name}.{child_name}" if name else child_name
    return target_class, names


def capture(model_type: str, layers: int, ids: list[int]) -> dict[str, Any]:
    import torch
    from transformers import AutoConfig, AutoModel
    from vllm.model_executor.models.transformers.base import Base

    config = shrunk(AutoConfig.for_model(model_type), layers)
    text_config = config.get_text_config()
    torch.manual_seed(0)
    model = AutoModel.from_config(config).eval()
    target_class, names = layer_names(model, text_config.num_hidden_layers)
    stand_in = SimpleNamespace(
        model=model,
        text_config=text_config,
        _target_class=target_class,
        _layer_names=names,
        _output_aux_hidden_states_kwargs={},
        check_version=Base.check_version,
    )
    found = {
        "type": model_type,
        "model": type(model).__name__,
        "layer_names": len(names),
        "composite": text_config is not config,
    }
    try:
        Base.set_aux_hidden_state_layers(stand_in, tuple(ids))
    except Exception as error:  # the outcome under test
        return {**found, "outcome": type(error).__name__, "error": str(error)[:300]}
    tokens = torch.randint(0, text_config.vocab_size, (1, 5))
    inputs = {"input_ids": tokens, "position_ids": torch.arange(5)[None, :], "use_cache": False}
    with torch.no_grad():
        model(**inputs, return_dict=False)  # raises when the tiny model cannot run at all
    try:
        with torch.no_grad():
            outputs = model(
                **inputs, return_dict=False, **stand_in._output_aux_hidden_states_kwargs
            )
        aux = [x[0][0, ...] for x in outputs[1:]]
    except Exception as error:  # the outcome under test
        return {**found, "outcome": type(error).__name__, "error": str(error)[:300]}
    hidden = text_config.hidden_size
    states = sum(1 for a in aux if tuple(a.shape) == (5, hidden))
    if states == len(ids) == len(aux):
        outcome = "records"
    elif not aux:
        outcome = "records-nothing"
    else:
        outcome = f"records {states} of {len(ids)}"
    return {**found, "outcome": outcome}


def main() -> int:
    request = json.loads(sys.stdin.read())
    for model_type in request["types"]:
        try:
            answer = capture(model_type, request["layers"], request["ids"])
        except Exception as error:  # the model could not be built here: not an outcome
            answer = {
                "type": model_type,
                "outcome": "unbuilt",
                "error": f"{type(error).__name__}: {error}"[:300],
                "trace": traceback.format_exc()[-600:],
            }
        print(json.dumps(answer), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
