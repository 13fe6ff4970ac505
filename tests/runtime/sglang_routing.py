"""Ask a real SGLang which class it builds for a checkpoint, and whether it serves it as a
generative model (run by an SGLang venv's python).

Input (a JSON object on stdin): `{"configs": [DIR, ...]}`, each folder holding a config.json
only. For each, SGLang's own `ModelConfig(model_path=DIR)` and the loader's
`get_model_architecture` (which may swap the checkpoint's architecture for another under a
model-config flag: EmbeddingGemma, saved as `Gemma3TextModel`, is served as
`EmbeddingGemmaModel` in 0.5.23). No weights are read; nothing is downloaded.

Output: one JSON line per folder, `{"config", "arch", "is_generation"}`, or `{"config",
"error"}` when SGLang refuses the config.
"""

from __future__ import annotations

import json
import os
import sys

from oracle import StubFinder

os.environ["CUDA_VISIBLE_DEVICES"] = ""
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("SGLANG_LOGGING_LEVEL", "ERROR")


def main() -> int:
    # As in sglang_oracle.py: sgl_kernel loads libcuda.so.1 at import (0.5.8's loader imports it).
    sys.meta_path.insert(0, StubFinder({"sgl_kernel"}))
    from sglang.srt.configs.model_config import ModelConfig
    from sglang.srt.model_loader.utils import get_model_architecture

    for folder in json.loads(sys.stdin.read())["configs"]:
        answer: dict[str, object] = {"config": folder}
        try:
            config = ModelConfig(model_path=folder)
            _, arch = get_model_architecture(config)
            answer.update(arch=arch, is_generation=bool(config.is_generation))
        except Exception as exc:  # a refusal is an answer
            answer["error"] = f"{type(exc).__name__}: {str(exc).strip()[:300]}"
        print(json.dumps(answer), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
