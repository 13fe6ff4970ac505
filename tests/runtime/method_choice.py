"""Ask a real vLLM which speculative method it runs a draft with (run by a release venv's python).

This script runs inside an oracle venv (`venvs.py`), never in eagle3lint's environment. Input (a
JSON object on stdin): `{"target": DIR, "cases": [[MODEL, METHOD_OR_NULL], ...]}`, every folder
holding a config.json only; a case may name its own target folder third (`[MODEL, METHOD,
TARGET]`). For each case it builds vLLM's own `SpeculativeConfig` exactly as
`vllm serve --speculative-config '{"method": METHOD, "model": MODEL, "num_speculative_tokens":
3}'` does (with the target's `ModelConfig`), which runs the release's method choice, the
speculators translation, EAGLEConfig's renaming and the registry lookup of the draft's
architecture. No weights are read; nothing is downloaded (`HF_HUB_OFFLINE`).

Output: one JSON line per case, `{"model", "method", "chosen", "architectures", "layer_ids"}`
or, when vLLM refuses the config, `{"model", "method", "error"}` (exception type and first
line). `layer_ids` holds, for each model runner of the release, the aux layer ids its own reader
returns for that config (`GPUModelRunner._get_eagle3_aux_layers_from_config` for V1, called
with a stand-in `self` holding the speculative config; `get_eagle3_aux_layers_from_config` of
V2's `eagle3_utils`): null when it finds none, or "error: ..." when the reader raised.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
os.environ["CUDA_VISIBLE_DEVICES"] = ""
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    # pydantic wraps the ValueError: its own line comes first, the cause on the next.
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    cause = next((line for line in lines if line.startswith("Value error,")), None)
    shown = cause.removeprefix("Value error,").strip() if cause else (lines[0] if lines else "")
    return f"{type(exc).__name__}: {shown[:300]}"


def _readers() -> dict[str, Any]:
    """Each runner's own reader of the layer ids, by runner (`v1`, `v2`)."""
    import importlib
    import types

    readers: dict[str, Any] = {}
    try:
        runner = importlib.import_module("vllm.v1.worker.gpu_model_runner").GPUModelRunner
        method = runner._get_eagle3_aux_layers_from_config
        readers["v1"] = lambda spec: method(types.SimpleNamespace(speculative_config=spec))
    except (ImportError, AttributeError):
        pass
    try:
        utils = importlib.import_module("vllm.v1.worker.gpu.spec_decode.eagle.eagle3_utils")
        readers["v2"] = utils.get_eagle3_aux_layers_from_config
    except (ImportError, AttributeError):
        pass
    return readers


def _layer_ids(readers: dict[str, Any], spec: Any) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for name, read in readers.items():
        try:
            ids = read(spec)
            found[name] = list(ids) if ids is not None else None
        except Exception as exc:  # the reader's failure is the answer
            found[name] = f"error: {_first_line(exc)}"
    return found


def main() -> None:
    from vllm.config import ModelConfig, ParallelConfig, SpeculativeConfig

    request = json.loads(sys.stdin.read())
    targets: dict[str, Any] = {}
    readers = _readers()
    for model, method, *given in request["cases"]:
        answer: dict[str, Any] = {"model": model, "method": method}
        folder = given[0] if given else request["target"]
        try:
            if folder not in targets:
                targets[folder] = ModelConfig(model=folder, skip_tokenizer_init=True)
            spec = SpeculativeConfig(
                method=method,
                model=model,
                num_speculative_tokens=3,
                target_model_config=targets[folder],
                target_parallel_config=ParallelConfig(),
            )
            draft = spec.draft_model_config
            answer["chosen"] = spec.method
            answer["architectures"] = list(getattr(draft, "architectures", None) or [])
            answer["layer_ids"] = _layer_ids(readers, spec)
        except Exception as exc:  # every refusal is an answer
            answer["error"] = _first_line(exc)
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
