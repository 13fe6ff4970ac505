"""Real vLLM releases installed once each into their own virtual environment (the runtime oracle).

Each venv lives in `<user cache dir>/eagle3lint-runtime/vllm-X.Y.Z`, never in the project's own
environment, and is reused across runs: a marker file written after a complete install says the
venv is ready, so an interrupted install is redone rather than trusted. Installs are large
(~12 GB each with torch) and slow, so they run serially and without pip's download cache.

Run as a script to install ahead of the test run: `python tests/runtime/venvs.py 0.16.0 0.33.0`.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from platformdirs import user_cache_dir

# The releases the runtime suite compares against: the seed release, one of the 0.22-0.29 era
# (platform-selected model modules, as_embedding_model factories, DeepseekV2 tap temporaries)
# and the newest final release on PyPI when this suite was written.
RELEASES: tuple[str, ...] = tuple(
    os.environ.get("EAGLE3LINT_RUNTIME_RELEASES", "0.16.0,0.25.0,0.33.0").split(",")
)
"""`EAGLE3LINT_RUNTIME_RELEASES=0.16.0,0.33.0` narrows (or changes) the list for one run."""

# Wheels built against another torch than the one vLLM pins break `import transformers`; vLLM and
# transformers treat them as optional, so the oracle venvs go without them.
MISMATCHED_BINARY_PACKAGES: tuple[str, ...] = ("torchvision", "torchaudio", "torchcodec")

# A later transformers than the release was built against can break models the release ships,
# and vLLM's lower bounds let pip take the newest. transformers 5.15 (2026-08) makes Gemma 4's
# text config per-layer and refuses the global `head_dim` that vLLM 0.25.0's Gemma 4 layers read,
# so vLLM 0.25.0 (2026-07-11) cannot build Gemma 4 with it; 5.14 was current at its release.
CONSTRAINTS: dict[str, tuple[str, ...]] = {"0.25.0": ("transformers<5.15",)}
"""Per release, requirements added to `vllm==X` when its venv is installed (and applied to a
venv installed before they were added)."""

# vLLM 0.16.0 and 0.18.0 require transformers<5, yet four of their model files import what
# transformers 5.0 added (`Jais2Config`, the audio-flamingo and GLM-ASR model packages): they run
# only with transformers 5 in front of the pinned one (vLLM 0.16.0 imports and builds them so),
# as their users must install it.
TRANSFORMERS_5_0 = ("transformers==5.0.0", "huggingface_hub>=1.3,<2", "typer-slim")
MODEL_OVERLAYS: dict[str, dict[str, tuple[str, ...]]] = {
    version: {
        f"vllm.model_executor.models.{name}": TRANSFORMERS_5_0
        for name in ("jais2", "audioflamingo3", "musicflamingo", "glmasr")
    }
    for version in ("0.16.0", "0.18.0")
}
"""Per release, model modules that need newer packages than the release's requirements allow,
with those packages: installed apart (`pip install --target`, one folder per set of packages)
and put first on `sys.path` for those models only."""

READY_MARKER = "eagle3lint-oracle-ready.json"


def runtime_root() -> Path:
    """`EAGLE3LINT_RUNTIME_DIR`, else `eagle3lint-runtime` in the user cache folder (as
    eagle3lint's own cache finds it)."""
    override = os.environ.get("EAGLE3LINT_RUNTIME_DIR")
    if override:
        return Path(override).expanduser()
    return Path(user_cache_dir("eagle3lint-runtime", appauthor=False))


def venv_dir(version: str) -> Path:
    """Where the venv for vLLM `version` lives (whether or not it is installed yet)."""
    return runtime_root() / f"vllm-{version}"


def venv_python(version: str) -> Path:
    """The interpreter of the venv for vLLM `version`."""
    return venv_dir(version) / "bin" / "python"


def is_ready(version: str) -> bool:
    """True when the venv for `version` finished installing (its marker exists) with today's
    `CONSTRAINTS`."""
    record = _marker(version)
    return record is not None and record.get("constraints", []) == _constraints(version)


def _marker(version: str) -> dict[str, Any] | None:
    marker = venv_dir(version) / READY_MARKER
    return json.loads(marker.read_text()) if marker.is_file() else None


def _constraints(version: str) -> list[str]:
    return list(CONSTRAINTS.get(version, ()))


def _pip(python: Path, args: list[str], env: dict[str, str]) -> None:
    subprocess.run(
        [str(python), "-m", "pip", "--disable-pip-version-check", *args], env=env, check=True
    )


def _install_env(lift_torch_cap: bool) -> dict[str, str]:
    env = dict(os.environ, VLLM_TARGET_DEVICE="cpu", PIP_NO_CACHE_DIR="1")
    if lift_torch_cap:
        # The machine-wide pip config caps torch; a release pinning another torch needs it off.
        env["PIP_CONFIG_FILE"] = os.devnull
    return env


def install(version: str) -> Path:
    """Install vLLM `version` into its venv unless already done; return the venv's python.

    First tries with the machine's pip configuration; if the resolver cannot satisfy the
    release's torch pin under it, retries with the pip configuration ignored for this venv only.
    """
    python = venv_python(version)
    if is_ready(version):
        return python
    root = venv_dir(version)
    root.parent.mkdir(parents=True, exist_ok=True)
    with _locked(root.parent / f".vllm-{version}.lock"):
        if is_ready(version):  # another process finished it while this one waited
            return python
        record = _marker(version)
        if record is None:
            _install(version, root, python)
        else:  # installed before today's constraints: apply them in place
            _finish(version, root, python, bool(record.get("pip_config_ignored")))
    return python


def overlay(version: str, module: str) -> Path | None:
    """The folder of packages `module` of vLLM `version` needs in front of the venv's
    (installed once, after the venv); None when it needs none."""
    requirements = MODEL_OVERLAYS.get(version, {}).get(module)
    if requirements is None:
        return None
    python = install(version)
    key = hashlib.sha256("\n".join(requirements).encode()).hexdigest()[:12]
    folder = venv_dir(version) / "eagle3lint-overlays" / key
    with _locked(venv_dir(version).parent / f".vllm-{version}.lock"):
        if not (folder / READY_MARKER).is_file():
            shutil.rmtree(folder, ignore_errors=True)
            args = ["install", "--no-cache-dir", "--no-deps", "--target", str(folder)]
            _pip(python, [*args, *requirements], _install_env(False))
            (folder / READY_MARKER).write_text(json.dumps(list(requirements)))
    return folder


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """One installer per venv at a time, across processes (test runs, the install script)."""
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _install(version: str, root: Path, python: Path) -> None:
    if root.exists():
        shutil.rmtree(root)  # a half-finished install from an interrupted run
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True)
    requirements = ["install", "--no-cache-dir", f"vllm=={version}"]
    lifted = False
    try:
        _pip(python, requirements, _install_env(False))
    except subprocess.CalledProcessError:
        lifted = True
        _pip(python, requirements, _install_env(True))
    _finish(version, root, python, lifted)


def _finish(version: str, root: Path, python: Path, lifted: bool) -> None:
    """Today's constraints on the installed release, the mismatched wheels out, then the
    marker (also for a venv installed before the constraints were added)."""
    env = _install_env(lifted)
    if _constraints(version):
        _pip(python, ["install", "--no-cache-dir", f"vllm=={version}", *_constraints(version)], env)
    _pip(python, ["uninstall", "-y", *MISMATCHED_BINARY_PACKAGES], env)
    record = {"vllm": version, "pip_config_ignored": lifted, "constraints": _constraints(version)}
    (root / READY_MARKER).write_text(json.dumps(record))


def main(argv: list[str]) -> int:
    """Install the given releases (default: all of RELEASES), one after another."""
    for version in argv or RELEASES:
        print(f"[eagle3lint-runtime] vllm {version}: {install(version)}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
