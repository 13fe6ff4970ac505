"""`eagle3lint fix` on a copy of an installed release, then the fixed models run for real.

The copy holds the installed `vllm` package's Python files (what the oracle venv imports); `fix`
runs on it as a user would (`eagle3lint fix <tree> --require '*'`, no `--arch`). `proof.py` then
runs twice in the release's venv: once on the installed (unfixed) code, saving each model's
outputs, and once with the changed modules loaded from the fixed copy, comparing with them.
"""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runtime import in_venv, installed_tree
from venvs import copy_python_files, install, overlay

from eagle3lint.engine import CheckOptions, run_check
from eagle3lint.engines import Role
from eagle3lint.engines.vllm.targets import Target

PROOF = Path(__file__).resolve().parent / "proof.py"
PROOF_TIMEOUT = 1800
MODELS_PACKAGE = "vllm.model_executor.models."
NOT_FIXED = re.compile(r"^not fixed: (\w+): (.*)$")


@dataclass
class FixedRelease:
    """What `fix` did to one release's copy, and what the fixed code does when run."""

    version: str
    changed: dict[str, Path]
    """Module name → fixed file, for every file `fix` changed."""
    repaired: dict[str, Target]
    """Arch → its target in the fixed tree, for every target `fix` took from blocked to ready."""
    refused: dict[str, str]
    """Arch → why `fix` left it alone (its `not fixed:` line)."""
    tree: Path = Path()
    """The fixed copy's `vllm` package."""
    targets: dict[str, Target] = field(default_factory=dict)
    """Arch → its target in the fixed tree, for every target."""
    blocked: set[str] = field(default_factory=set)
    """The archs eagle3lint still finds errors for in the fixed tree."""
    supports_eagle3: dict[str, dict[str, Any]] = field(default_factory=dict)
    models: dict[str, dict[str, Any]] = field(default_factory=dict)
    """`<module>.<Model>[<DecoderLayer>]` → {"status", "why"} from the run on the fixed copy."""


def _blocked(tree: Path) -> tuple[dict[str, Target], set[str]]:
    run = run_check(CheckOptions(paths=[tree], require=["*"]))
    errors = {t.arch for t in run.report.targets if t.has_errors}
    return {t.arch: t for t in run.targets if t.role is Role.TARGET}, errors


def _module_of(tree: Path, path: Path) -> str:
    parts = list(path.relative_to(tree).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


FIX_ALL = ("--require", "*")
"""`fix`'s arguments for fixing every target of a tree."""


def fix_release(version: str, workdir: Path) -> FixedRelease:
    """Fix a copy of `version`'s installed tree with no `--arch` and run the proof on it."""
    release = fixed_copy(version, workdir)
    _prove(release, workdir)
    return release


_COPIES: dict[tuple[str, tuple[str, ...]], FixedRelease] = {}


def fixed_copy(version: str, workdir: Path, args: tuple[str, ...] = FIX_ALL) -> FixedRelease:
    """`eagle3lint fix <copy> *args` on a copy of `version`'s installed tree, and what it did
    (once per test session: every runtime test of a release looks at the same copy)."""
    if (version, args) not in _COPIES:
        _COPIES[version, args] = _fix_copy(version, workdir / f"{len(_COPIES)}", args)
    return _COPIES[version, args]


def _fix_copy(version: str, workdir: Path, args: tuple[str, ...]) -> FixedRelease:
    installed = installed_tree(version)
    tree = workdir / f"fixed-{version}"
    copy_python_files(installed, tree / "vllm")
    _, blocked_before = _blocked(tree / "vllm")
    done = subprocess.run(
        [sys.executable, "-m", "eagle3lint", "fix", str(tree / "vllm"), *args],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode in (0, 1), done.stdout[-2000:] + done.stderr[-2000:]
    refused = {}
    for line in done.stdout.splitlines():
        found = NOT_FIXED.match(line)
        if found:
            refused.setdefault(found.group(1), found.group(2))
    changed = {}
    for path in sorted((tree / "vllm").rglob("*.py")):
        original = installed / path.relative_to(tree / "vllm")
        if original.read_bytes() != path.read_bytes():
            changed[_module_of(tree, path)] = path
    targets, blocked_after = _blocked(tree / "vllm")
    repaired = {
        arch: target
        for arch, target in targets.items()
        if arch in blocked_before and arch not in blocked_after
    }
    return FixedRelease(version, changed, repaired, refused, tree / "vllm", targets, blocked_after)


def _inner_models(release: FixedRelease) -> list[tuple[str, str]]:
    found: dict[tuple[str, str], None] = {}
    for target in release.repaired.values():
        inner = target.decoder_owner.inner_model
        if inner is not None:
            found[(inner.file.module, inner.name)] = None
    return sorted(found)


def _prove(release: FixedRelease, workdir: Path) -> None:
    """The proof, run apart for the models that need packages in front of the venv's."""
    models: dict[Path | None, list[tuple[str, str]]] = {}
    for module, name in _inner_models(release):
        models.setdefault(overlay(release.version, module), []).append((module, name))
    targets: dict[Path | None, list[tuple[str, str, str]]] = {}
    for arch, target in sorted(release.repaired.items()):
        module = target.ref.file.module
        targets.setdefault(overlay(release.version, module), []).append(
            (arch, module, target.ref.name)
        )
    for packages in sorted(models.keys() | targets.keys(), key=str):
        group = models.get(packages, []), targets.get(packages, [])
        _prove_group(release, workdir, packages, *group)


def _prove_group(
    release: FixedRelease,
    workdir: Path,
    packages: Path | None,
    models: list[tuple[str, str]],
    targets: list[tuple[str, str, str]],
) -> None:
    python = install(release.version)
    baseline = workdir / f"baseline-{release.version}-{packages.name if packages else 'venv'}.pt"
    _ask(python, {"overlay": None, "models": models, "baseline": str(baseline)}, packages)
    fixed_files = {module: str(path) for module, path in release.changed.items()}
    request = {
        "overlay": fixed_files,
        "targets": targets,
        "models": models,
        "baseline": str(baseline),
    }
    for record in _ask(python, request, packages):
        if "arch" in record:
            release.supports_eagle3[record["arch"]] = record
        else:
            model = record["model"].removeprefix(MODELS_PACKAGE)
            name = model + (f"[{record['layer']}]" if "layer" in record else "")
            release.models[name] = record


def _ask(
    python: Path, request: dict[str, Any], packages: Path | None, script: Path = PROOF
) -> list[dict[str, Any]]:
    """Run `script` (the proof, or another script of this folder) in the venv of `python`."""
    return in_venv(python, script, request, timeout=PROOF_TIMEOUT, packages=packages)
