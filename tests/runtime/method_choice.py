"""Ask a real vLLM which speculative method it runs a draft with (run by a release venv's python).

This script runs inside an oracle venv (`venvs.py`), never in eagle3lint's environment. Input (a
JSON object on stdin): `{"target": DIR, "cases": [[MODEL, METHOD_OR_NULL], ...]}`, every folder
holding a config.json only. For each case it builds vLLM's own `SpeculativeConfig` exactly as
`vllm serve --speculative-config '{"method": METHOD, "model": MODEL, "num_speculative_tokens":
3}'` does (with the target's `ModelConfig`), which runs the release's method choice, the
speculators translation, EAGLEConfig's renaming and the registry lookup of the draft's
architecture. No weights are read; nothing is downloaded (`HF_HUB_OFFLINE`).

Output: one JSON line per case, `{"model", "method", "chosen", "architectures"}` or, when vLLM
refuses the config, `{"model", "method", "error"}` (exception type and first line).
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


def main() -> None:
    from vllm.config import ModelConfig, ParallelConfig, SpeculativeConfig

    request = json.loads(sys.stdin.read())
    target = ModelConfig(model=request["target"], skip_tokenizer_init=True)
    for model, method in request["cases"]:
        answer: dict[str, Any] = {"model": model, "method": method}
        try:
            spec = SpeculativeConfig(
                method=method,
                model=model,
                num_speculative_tokens=3,
                target_model_config=target,
                target_parallel_config=ParallelConfig(),
            )
            draft = spec.draft_model_config
            answer["chosen"] = spec.method
            answer["architectures"] = list(getattr(draft, "architectures", None) or [])
        except Exception as exc:  # every refusal is an answer
            answer["error"] = _first_line(exc)
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
