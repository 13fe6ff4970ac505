"""Speed of `eagle3lint matrix`, as ratios to baselines measured in the same run.

    python bench/bench_matrix.py [--vllm 0.17.0..0.18.1] [--jobs N]

Releases are fetched once through eagle3lint's download path; every measurement then starts
from its own empty cache folder holding only those downloads. Measured: a cold matrix of the
releases vs the same releases checked one by one, each with an empty cache (what the matrix
would cost if releases shared nothing), and a warm matrix vs one warm `check` per release.
Machines are noisy, so only ratios are compared with the targets; nothing here is a test.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from eagle3lint.index.cache import default_cache_dir
from eagle3lint.matrix.columns import expand_specs
from eagle3lint.sources.wheels import fetch_release

TARGETS = {"cold matrix / independent cold checks": 0.5, "warm matrix / warm checks": 1.5}
EAGLE3LINT = [sys.executable, "-m", "eagle3lint"]


def fresh_cache(versions: list[str], under: Path) -> Path:
    """An empty cache folder that already holds the downloaded releases (as links)."""
    root = Path(tempfile.mkdtemp(prefix="cache-", dir=under))
    (root / "releases").mkdir()
    for version in versions:
        source = default_cache_dir() / "releases" / version
        (root / "releases" / version).symlink_to(source, target_is_directory=True)
    return root


def timed(args: list[str], cache: Path) -> float:
    env = {**os.environ, "EAGLE3LINT_CACHE_DIR": str(cache)}
    start = time.perf_counter()
    result = subprocess.run(
        [*EAGLE3LINT, *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    if result.returncode not in (0, 1):
        sys.exit(f"eagle3lint {' '.join(args)} failed: {result.stderr.strip()}")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vllm", default="0.17.0..0.18.1")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    options = parser.parse_args()
    versions = expand_specs([options.vllm])
    for version in versions:
        fetch_release(version)
    jobs = ["--jobs", str(options.jobs)]
    matrix = ["matrix", *(f"--vllm={v}" for v in versions), "--format", "json", *jobs]

    independent = sum(
        timed(["check", "--vllm", v, "--format", "json", *jobs], fresh_cache([v])) for v in versions
    )
    cache = fresh_cache(versions)
    cold = timed(matrix, cache)
    warm_checks = sum(
        timed(["check", "--vllm", v, "--format", "json", *jobs], cache) for v in versions
    )
    warm = timed(matrix, cache)

    print(f"{len(versions)} releases {versions[0]} … {versions[-1]}, --jobs {options.jobs}")
    rows = [
        ("cold matrix / independent cold checks", cold, independent),
        ("warm matrix / warm checks", warm, warm_checks),
    ]
    for name, measured, baseline in rows:
        ratio = measured / baseline
        verdict = "ok" if ratio <= TARGETS[name] else "over target"
        print(
            f"{name:40} {measured:7.2f} / {baseline:7.2f} s = {ratio:4.2f}"
            f"  (target ≤ {TARGETS[name]:.2f}: {verdict})"
        )


if __name__ == "__main__":
    main()
