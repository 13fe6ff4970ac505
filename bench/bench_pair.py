"""What `eagle3lint pair` costs over `check --arch` of its target, measured in the same run.

    python bench/bench_pair.py [--version 0.18.0] [--repeat 3]

Pairs the Kimi-K2.5 target (examples/kimi-k2.5/config.json) with a generated EAGLE-3 head
(config + a sparse safetensors file: its header, and a hole for its data) and times, best of
--repeat, both commands on the release folder: cold (an empty cache each run) and warm
(summaries cached; `check`'s whole-run cache removed before each run, since `pair` keeps none),
alternating the two commands. The target is pair <= check + 0.2 s; nothing here is a test.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from eagle3lint.sources.wheels import fetch_release

REPO = Path(__file__).resolve().parent.parent
TARGET = REPO / "examples" / "kimi-k2.5" / "config.json"
ARCH = "KimiK25ForConditionalGeneration"
ALLOWED_EXTRA = 0.2


def write_head(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    config = {
        "architectures": ["LlamaForCausalLMEagle3"],
        "model_type": "llama",
        "hidden_size": 7168,
        "num_hidden_layers": 1,
        "vocab_size": 163840,
        "draft_vocab_size": 32000,
        "eagle_aux_hidden_state_layer_ids": [2, 30, 58],
    }
    (folder / "config.json").write_text(json.dumps(config))
    shapes = {"fc.weight": [7168, 21504], "d2t": [32000], "t2d": [163840]}
    header, end = {}, 0
    for name, shape in shapes.items():
        size = 2 * math.prod(shape)  # BF16
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [end, end + size]}
        end += size
    raw = json.dumps(header).encode()
    with (folder / "model.safetensors").open("wb") as weights:
        weights.write(struct.pack("<Q", len(raw)) + raw)
        weights.truncate(8 + len(raw) + end)  # the data: a hole, as pair reads none of it


def timed(command: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def interleaved(
    repeat: int, first: Callable[[], float], second: Callable[[], float]
) -> tuple[float, float]:
    """Best of `repeat` for each, alternating runs so that the machine's load (2 shared cores)
    weighs on both alike."""
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeat):
        times[0].append(first())
        times[1].append(second())
    return min(times[0]), min(times[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", default="0.18.0")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    vllm = fetch_release(args.version)
    exe = [sys.executable, "-m", "eagle3lint"]
    work = Path(tempfile.mkdtemp(prefix="eagle3lint-bench-pair-"))
    try:
        write_head(work / "head")
        check = [*exe, "check", str(vllm), "--arch", ARCH, "--hf-config", str(TARGET)]
        pair = [*exe, "pair", str(vllm), "--target", str(TARGET), "--draft", str(work / "head")]

        def cold(command: list[str]) -> Callable[[], float]:
            def run() -> float:
                cache = work / "cold"
                shutil.rmtree(cache, ignore_errors=True)
                return timed(command, {**os.environ, "EAGLE3LINT_CACHE_DIR": str(cache)})

            return run

        warm_env = {**os.environ, "EAGLE3LINT_CACHE_DIR": str(work / "warm")}
        timed(check, warm_env)
        timed(pair, warm_env)

        def warm(command: list[str]) -> Callable[[], float]:
            def run() -> float:
                shutil.rmtree(work / "warm" / "runs", ignore_errors=True)
                return timed(command, warm_env)

            return run

        print(f"vLLM {args.version}, {ARCH} + EAGLE-3 head, best of {args.repeat}")
        for label, make in (("cold", cold), ("warm", warm)):
            check_s, pair_s = interleaved(args.repeat, make(check), make(pair))
            extra = pair_s - check_s
            verdict = "ok" if extra <= ALLOWED_EXTRA else "OVER"
            print(
                f"{label}: check --arch {check_s:.2f} s, pair {pair_s:.2f} s, "
                f"pair - check {extra:+.2f} s, ratio {pair_s / check_s:.2f} "
                f"(target <= +{ALLOWED_EXTRA} s: {verdict})"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
