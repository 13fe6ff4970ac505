"""Run the index over every `.py` file of several vLLM releases: speed, and anything that breaks.

    python bench/fuzz_index.py [--version 0.16.0 --version 0.33.0] [--jobs N]

Each release is fetched through eagle3lint's own download path (and cached), then every file is
summarised as a check would (decode, nesting limits, libcst parse, summary) with no cache. Per
release it prints files/s and MB/s, how many files were analysed, refused as syntax errors
(EAG901) or unreadable (EAG902), and lists every internal error (EAG903) and crash: those are
bugs. A worker that dies (libcst overflowing the C stack) is reported too. Not a test: run it by
hand after changing the extractor or the source reader.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from eagle3lint.index.parsing import ParseResult, parse_job
from eagle3lint.sources.wheels import fetch_release

DEFAULT_VERSIONS = ("0.16.0", "0.33.0")


def jobs_for(vllm: Path) -> list[tuple[str, bytes, str]]:
    """Every `.py` file of the release as a parse job (relpath from the import root, bytes)."""
    return [
        (path.relative_to(vllm.parent).as_posix(), path.read_bytes(), "")
        for path in sorted(vllm.rglob("*.py"))
    ]


def run(jobs: list[tuple[str, bytes, str]], workers: int) -> list[ParseResult]:
    if workers <= 1:
        return [parse_job(job) for job in jobs]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(parse_job, jobs, chunksize=4))


def fuzz_release(version: str, workers: int) -> bool:
    """Index one release; prints its figures and returns whether nothing broke."""
    vllm = fetch_release(version)
    jobs = jobs_for(vllm)
    size = sum(len(data) for _, data, _ in jobs)
    start = time.perf_counter()
    try:
        results = run(jobs, workers)
    except BrokenProcessPool:
        print(f"vllm {version}: CRASH, a parser process died (run with --jobs 1 to find the file)")
        return False
    except Exception as exc:  # an exception that escaped the per-file guard is the bug sought
        print(f"vllm {version}: CRASH {type(exc).__name__}: {exc}")
        return False
    seconds = time.perf_counter() - start
    outcomes = Counter("analysed" if summary else code for _, summary, _, _, code in results)
    print(
        f"vllm {version}: {len(jobs)} files, {size / 1e6:.1f} MB in {seconds:.1f} s "
        f"({len(jobs) / seconds:.0f} files/s, {size / 1e6 / seconds:.2f} MB/s, "
        f"{workers} process{'es' if workers > 1 else ''}); "
        + ", ".join(f"{name}: {count}" for name, count in sorted(outcomes.items()))
    )
    for relpath, summary, message, line, code in results:
        if summary is None:
            where = f"{relpath}:{line}" if line else relpath
            print(f"  {code} {where}: {message}")
    return outcomes["EAG903"] == 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="append", help="a vLLM release (repeatable)")
    parser.add_argument("--jobs", type=int, default=1, help="parser processes (default 1)")
    args = parser.parse_args()
    ok = [fuzz_release(version, args.jobs) for version in args.version or DEFAULT_VERSIONS]
    return 0 if all(ok) else 1


if __name__ == "__main__":
    sys.exit(main())
