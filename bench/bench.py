"""Speed of eagle3lint on a real vLLM release, as ratios to baselines measured in the same run.

    python bench/bench.py [--version 0.33.0] [--repeat 3] [--quick]

Fetches the release through eagle3lint's own download path, then measures (best of --repeat):
cold full check (an empty cache but for the releases downloaded) vs a single-process libcst
parse of the same model files, warm full check vs `ruff check --no-cache` on them, a full
check right after a line of code was added to one model file (a copy of the tree; what a warm
re-run after a change costs) vs the same ruff run, cold single-arch check vs cold full check,
and peak RSS. `--quick` skips the cold rows and the libcst baseline (minutes on a busy machine)
to measure the warm and edited-file ratios alone.
eagle3lint's bytecode is written first, as installing it does.
Machines are noisy, so only ratios are compared with the targets; nothing here is a test.
"""

from __future__ import annotations

import argparse
import compileall
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import eagle3lint.rules

from eagle3lint.sources.wheels import fetch_release

TARGETS = {
    "cold full / libcst parse": 0.40,
    "warm full / ruff --no-cache": 1.0,
    "one file edited / ruff": 2.0,
    "cold --arch / cold full": 0.15,
}
RATIOS = {
    "cold full / libcst parse": ("cold full check", "libcst parse (1 process)"),
    "warm full / ruff --no-cache": ("warm full check", "ruff check --no-cache"),
    "one file edited / ruff": ("one file edited, full check", "ruff check --no-cache"),
    "cold --arch / cold full": ("cold --arch check", "cold full check"),
}
DOWNLOADS = ("releases", "matrix")
"""The cache's folders of downloads (`cachedir`), which a cold run is given."""
PARSE_ALL = """
import sys, libcst
for path in sys.argv[1:]:
    with open(path, encoding="utf-8") as handle:
        libcst.parse_module(handle.read())
"""


def model_files(vllm: Path) -> list[Path]:
    return sorted(
        p for folder in ("model_executor/models", "models") for p in (vllm / folder).rglob("*.py")
    )


def write_bytecode() -> None:
    """Compile eagle3lint and its rules as `pip install` does. From a checkout, with
    PYTHONDONTWRITEBYTECODE set (as in this project's sessions), every measured run would
    otherwise compile each of its modules from source again, which no installed copy does."""
    for package in (eagle3lint, eagle3lint.rules):
        compileall.compile_dir(Path(package.__file__).parent, quiet=1)


def timed(command: list[str], env: dict[str, str] | None = None) -> float:
    start = time.perf_counter()
    subprocess.run(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False
    )
    return time.perf_counter() - start


def best(repeat: int, run: Callable[[], float]) -> float:
    return min(run() for _ in range(repeat))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", default="0.33.0")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--arch", default="KimiK25ForConditionalGeneration")
    parser.add_argument("--quick", action="store_true", help="skip the cold rows")
    args = parser.parse_args()

    vllm = fetch_release(args.version, progress=True)
    write_bytecode()
    files = [str(p) for p in model_files(vllm)]
    check = [
        sys.executable,
        "-m",
        "eagle3lint",
        "check",
        str(vllm),
        "--format",
        "json",
        "--exit-zero",
    ]
    scratch = Path(tempfile.mkdtemp(prefix="eagle3lint-bench-"))

    def fresh_env() -> dict[str, str]:
        cache = tempfile.mkdtemp(dir=scratch)
        return {**os.environ, "EAGLE3LINT_CACHE_DIR": cache}

    warm_env = fresh_env()
    subprocess.run(check, env=warm_env, stdout=subprocess.DEVNULL, check=False)

    def cold_env() -> dict[str, str]:
        """An empty cache but for what the warm run downloaded (the transformers release the
        tree requires, the package index's list): the tree itself is given as a folder, and a
        download's time is the network's, not the analysis's."""
        env = fresh_env()
        for folder in DOWNLOADS:
            source = Path(warm_env["EAGLE3LINT_CACHE_DIR"]) / folder
            if source.is_dir():
                shutil.copytree(source, Path(env["EAGLE3LINT_CACHE_DIR"]) / folder)
        return env

    # A writable copy, checked once (warm), then checked after each edit of one model file.
    copy = scratch / "tree" / "vllm"
    shutil.copytree(vllm, copy)
    edited_check = [*check[:4], str(copy), *check[5:]]
    edited_env = fresh_env()
    subprocess.run(edited_check, env=edited_env, stdout=subprocess.DEVNULL, check=False)
    edited_file = copy / "model_executor" / "models" / "llama.py"
    edits = iter(range(1_000_000))

    def after_one_edit() -> float:
        with edited_file.open("a", encoding="utf-8") as handle:
            # A line of code: a comment would be settled from the run cache without a check.
            handle.write(f"_edit_{next(edits)} = 0\n")
        return timed(edited_check, edited_env)

    measurements: dict[str, Callable[[], float]] = {
        "libcst parse (1 process)": lambda: timed([sys.executable, "-c", PARSE_ALL, *files]),
        "cold full check": lambda: timed(check, cold_env()),
        "warm full check": lambda: timed(check, warm_env),
        "ruff check --no-cache": lambda: timed(
            [shutil.which("ruff") or "ruff", "check", "--no-cache", "--exit-zero", *files]
        ),
        "one file edited, full check": after_one_edit,
        "cold --arch check": lambda: timed([*check, "--arch", args.arch], cold_env()),
    }
    cold = ("libcst parse (1 process)", "cold full check", "cold --arch check")
    results = {
        name: best(args.repeat, run)
        for name, run in measurements.items()
        if not (args.quick and name in cold)
    }
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    shutil.rmtree(scratch, ignore_errors=True)

    cores = os.cpu_count()
    print(f"vLLM {args.version}: {len(files)} model files, {cores} cores, best of {args.repeat}")
    for name, seconds in results.items():
        print(f"  {name:28s} {seconds:7.2f} s")
    ratios = {
        name: results[top] / results[bottom]
        for name, (top, bottom) in RATIOS.items()
        if top in results and bottom in results
    }
    for name, ratio in ratios.items():
        verdict = "ok" if ratio <= TARGETS[name] else "over target"
        print(f"  {name:28s} {ratio:7.2f}  (target ≤ {TARGETS[name]:.2f}: {verdict})")
    print(f"  {'peak RSS of one process':28s} {peak_mb:7.0f} MB  (target ≤ 500 MB)")


if __name__ == "__main__":
    main()
