"""The pre-commit hook on one edited file, side by side with ruff's hook on the same file.

    python bench/bench_hook.py [--version 0.33.0] [--repeat 7]

A git copy of the vLLM release set up as the README's recipe says (baseline, `[tool.eagle3lint]`
table), with two hooks run by the real `pre-commit run --files F`: eagle3lint installed from
this checkout into a venv of its own (not editable, as pre-commit installs it), and the ruff
binary with a ruff configuration like vLLM's. Each round edits one model file and runs both
hooks, alternating which goes first; the medians and their ratio are printed, for three edits:
a comment added at the end of the file and one added at its top (the run cache settles both
without a check: the file's code, its quoted lines and suppressions are unchanged, and no line
number of it reaches the output), and a line of code added at its end (the check runs: the
tree's cached summaries are loaded and every architecture judged again). Machines are noisy:
only the ratio, measured in the same run, is compared with the target (≤ 2.0 for the
comments).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

from eagle3lint.sources.wheels import fetch_release

REPO = Path(__file__).resolve().parent.parent
TARGET = 2.0
EDITED = "vllm/model_executor/models/gpt2.py"
RUFF_CONFIG = """
[tool.ruff]
line-length = 88

[tool.ruff.lint]
select = ["E", "F", "UP", "B", "ISC", "SIM", "I", "G"]
ignore = ["F405", "F403", "E731", "B007", "UP032", "SIM108", "SIM102", "G004"]
"""


def run(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> None:
    subprocess.run(command, cwd=cwd, env=env, check=True, capture_output=True)


def timed(command: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def install(into: Path) -> Path:
    """eagle3lint from this checkout's working tree (new files not yet committed included) in a
    venv of its own, its dependencies taken from this environment (nothing downloaded); the
    venv's `bin`."""
    source = into / "source"
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for name in filter(None, listed.split("\0")):
        if not (REPO / name).is_file():
            continue  # deleted in the working tree
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, source / name)
    venv = into / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)], into)
    [site] = (venv / "lib").glob("python3*/site-packages")
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    offline = ["--no-deps", "--no-index", "--no-build-isolation", "-q"]
    run([str(venv / "bin" / "python"), "-m", "pip", "install", *offline, str(source)], into)
    return venv / "bin"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", default="0.33.0")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()

    release = fetch_release(args.version, progress=True)
    scratch = Path(tempfile.mkdtemp(prefix="eagle3lint-hook-bench-"))
    bin_dir = install(scratch)
    ruff = shutil.which("ruff")
    if ruff is None:
        sys.exit("bench_hook: ruff is not installed (pip install -e '.[test]')")
    repo = scratch / "repo"
    shutil.copytree(release, repo / "vllm")
    env = {**os.environ, "EAGLE3LINT_CACHE_DIR": str(scratch / "cache")}
    eagle3lint = str(bin_dir / "eagle3lint")
    run([eagle3lint, "check", "vllm", "--write-baseline", "eagle3lint-baseline.json"], repo, env)
    (repo / "pyproject.toml").write_text(
        '[tool.eagle3lint]\nbaseline = "eagle3lint-baseline.json"\n' + RUFF_CONFIG
    )
    (repo / ".pre-commit-config.yaml").write_text(
        "repos:\n  - repo: local\n    hooks:\n"
        f"      - {{id: eagle3lint, name: eagle3lint, entry: {eagle3lint} check,"
        " language: system, types: [python], require_serial: true}\n"
        f"      - {{id: ruff, name: ruff, entry: {ruff} check --force-exclude,"
        " language: system, types_or: [python, pyi], require_serial: true}\n"
    )
    identity = ["-c", "user.name=bench", "-c", "user.email=bench@eagle3lint.invalid"]
    run(["git", "init", "-q"], repo)
    run(["git", *identity, "add", "-A"], repo)
    run(["git", *identity, "commit", "-q", "-m", "vLLM"], repo)
    os.environ["EAGLE3LINT_CACHE_DIR"] = env["EAGLE3LINT_CACHE_DIR"]
    hook = [sys.executable, "-m", "pre_commit", "run", "--files", EDITED]
    edited = repo / EDITED
    original = edited.read_text()

    def rounds(edit: str) -> tuple[float, float]:
        edited.write_text(original)
        timed([*hook[:4], "eagle3lint", *hook[4:]], repo)  # the cache holds the file as it is
        ours, theirs = [], []
        for n in range(args.repeat):
            text = edited.read_text()
            added = f"_EDIT_{n} = {n}\n" if edit == "code" else f"# edit {n}\n"
            edited.write_text(added + text if edit == "top" else text + added)
            first, second = ("eagle3lint", "ruff") if n % 2 == 0 else ("ruff", "eagle3lint")
            times = {name: timed([*hook[:4], name, *hook[4:]], repo) for name in (first, second)}
            ours.append(times["eagle3lint"])
            theirs.append(times["ruff"])
        return statistics.median(ours), statistics.median(theirs)

    print(f"vLLM {args.version}, {EDITED}, median of {args.repeat}, {os.cpu_count()} cores")
    edits = {
        "end": "comment added at the end",
        "top": "comment added at the top",
        "code": "code line added at the end",
    }
    for edit, label in edits.items():
        ours, theirs = rounds(edit)
        ratio = ours / theirs
        target = f"  (target ≤ {TARGET:.1f}: {'ok' if ratio <= TARGET else 'over'})"
        print(
            f"  {label:26s} eagle3lint hook {ours:5.2f} s  ruff hook {theirs:5.2f} s"
            f"  ratio {ratio:4.2f}{target if edit != 'code' else ''}"
        )
    shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
