"""The differential harness: what real vLLM says about each registered architecture, beside what
eagle3lint says statically about the same installed tree.

vLLM's answers come from `oracle.py` run by the release's own venv (the only place analysed code
runs). A class whose optional third-party dependency is not installed is retried with a stub for
that module, and its answer records the stubs it needed; a class whose model file needs newer
packages than the release allows is asked again with those in front (`venvs.MODEL_OVERLAYS`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from venvs import install, installed_package, overlay

ORACLE = Path(__file__).resolve().parent / "oracle.py"
ORACLE_TIMEOUT = 3600
NEVER_STUBBED = frozenset({"vllm", "torch", "transformers"})
"""Packages the verdicts depend on: a failure there is a real failure, not a missing extra."""
MAX_STUB_ROUNDS = 8


def _ask(
    python: Path, archs: list[str] | None, stubs: set[str], packages: Path | None = None
) -> dict[str, dict[str, Any]]:
    """One oracle process over `archs` (all when None), with `packages` first on its path;
    restarted past a class that kills it."""
    answers: dict[str, dict[str, Any]] = {}
    pending = archs
    env = dict(os.environ, PYTHONPATH=str(packages)) if packages else None
    while True:
        request = json.dumps({"archs": pending, "stubs": sorted(stubs)})
        done = subprocess.run(
            [str(python), str(ORACLE)],
            input=request,
            capture_output=True,
            text=True,
            timeout=ORACLE_TIMEOUT,
            check=False,
            env=env,
        )
        asked: list[str] = []
        for line in done.stdout.splitlines():
            if not line.startswith("{"):
                continue
            record = json.loads(line)
            if "archs" in record and "arch" not in record:
                asked = record["archs"]
            else:
                answers[record["arch"]] = record
        if not asked:
            raise RuntimeError(f"the oracle could not start:\n{done.stderr[-3000:]}")
        left = [a for a in asked if a not in answers]
        if done.returncode == 0 or not left:
            return answers
        # The first unanswered class took the process down (a crash in native code).
        crashed, *rest = left
        answers[crashed] = {
            "arch": crashed,
            "ok": False,
            "error": f"process died ({done.returncode}): {done.stderr[-300:]}",
            "missing": "",
            "stubs": sorted(stubs),
        }
        if not rest:
            return answers
        pending = rest


def ask_vllm(version: str) -> dict[str, dict[str, Any]]:
    """vLLM `version`'s answer for every registered architecture (installing it if needed)."""
    python = install(version)
    answers = _ask(python, None, set())
    stubs: set[str] = set()
    for _ in range(MAX_STUB_ROUNDS):
        wanted = {
            record["missing"].split(".")[0]
            for record in answers.values()
            if not record["ok"] and record.get("missing")
        } - NEVER_STUBBED
        if wanted <= stubs:
            break
        stubs |= wanted
        retry = [arch for arch, record in answers.items() if not record["ok"]]
        answers.update(_ask(python, retry, stubs))
    # Model files that need newer packages than the release allows, with those packages.
    overlaid: dict[Path, list[str]] = {}
    for arch, record in answers.items():
        # A class that took the process down has no module in its record.
        packages = None if record["ok"] else overlay(version, record.get("module", ""))
        if packages is not None:
            overlaid.setdefault(packages, []).append(arch)
    for packages, archs in overlaid.items():
        answers.update(_ask(python, archs, stubs, packages))
    return answers


def in_venv(
    python: Path,
    script: Path,
    request: Any,
    *,
    timeout: float,
    packages: Path | None = None,
    cwd: Path | None = None,
) -> list[dict[str, Any]]:
    """Run `script` (one of this folder's) with a release venv's `python`, `request` as JSON on
    its stdin (`packages` first on its path); the JSON objects it prints, one a line. A script
    that fails raises, with the end of its stderr."""
    env = dict(os.environ, PYTHONHASHSEED="0")
    if packages is not None:
        env["PYTHONPATH"] = str(packages)
    done = subprocess.run(
        [str(python), str(script)],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env=env,
        cwd=cwd,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{script.name} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def installed_tree(version: str) -> Path:
    """The `vllm` package the oracle imports: the tree eagle3lint analyses for the comparison."""
    return installed_package(version)


@dataclass
class Comparison:
    """One property compared arch by arch: who agrees, who does not and why, who was skipped."""

    name: str
    agree: list[str] = field(default_factory=list)
    disagree: dict[str, str] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)

    def summary(self) -> str:
        reasons: dict[str, int] = {}
        for reason in self.skipped.values():
            key = reason.split(":")[0]
            reasons[key] = reasons.get(key, 0) + 1
        skipped = ", ".join(f"{n} {why}" for why, n in sorted(reasons.items()))
        return (
            f"{self.name}: {len(self.agree) + len(self.disagree)} compared, "
            f"{len(self.agree)} agree, {len(self.disagree)} disagree"
            + (f"; not compared: {skipped}" if skipped else "")
        )


def main(argv: list[str]) -> int:
    """Print vLLM's answers for a release as JSON (for reading them by hand)."""
    json.dump(ask_vllm(argv[0]), sys.stdout, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
