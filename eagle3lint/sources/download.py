"""`--vllm X.Y.Z`: a release's Python sources from PyPI, without installing it.

The wheel is fetched with `pip download --no-deps --only-binary=:all:` in a subprocess and only
`vllm/**.py` is kept, in the user cache folder. Nothing of it is imported or executed.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from eagle3lint.cachedir import touch
from eagle3lint.index.cache import default_cache_dir

VERSION = re.compile(r"^\d+(\.\d+){1,3}([a-z]+\d*)?(\.post\d+)?$")
COMPLETE = ".complete"


class DownloadError(Exception):
    """The release could not be fetched; the message says why and what to do."""


def release_dir(version: str, cache_root: Path | None = None) -> Path:
    return (cache_root or default_cache_dir()) / "releases" / version


def fetch_release(version: str, cache_root: Path | None = None, progress: bool = False) -> Path:
    """The `vllm/` folder of release `version`, downloading it on first use."""
    if not VERSION.match(version):
        raise DownloadError(f"{version!r} is not a vLLM version number (expected e.g. 0.16.0)")
    target = release_dir(version, cache_root)
    if (target / COMPLETE).is_file():
        touch(target / COMPLETE)  # least-recently-used pruning (`cachedir`)
        return target / "vllm"
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=f".{version}-") as tmp:
        wheel = _download(version, Path(tmp), progress)
        staging = Path(tmp) / "tree"
        _extract_python(wheel, staging)
        (staging / COMPLETE).write_text(version + "\n")
        try:
            os.replace(staging, target)
        except OSError:
            # Another run finished the same release first; its copy is as good as ours.
            if not (target / COMPLETE).is_file():
                shutil.rmtree(target, ignore_errors=True)
                os.replace(staging, target)
    return target / "vllm"


def _download(version: str, into: Path, progress: bool) -> Path:
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        # pip would build a source distribution to read its metadata, running its setup code.
        "--only-binary=:all:",
        "--disable-pip-version-check",
        "--quiet",
        "--dest",
        str(into),
        f"vllm=={version}",
    ]
    if progress:
        from rich.console import Console

        with Console(stderr=True).status(f"Downloading vllm=={version} sources from PyPI…"):
            result = subprocess.run(command, capture_output=True, text=True, check=False)
    else:
        result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise DownloadError(download_failure(version, result.stderr or result.stdout or ""))
    archives = sorted(into.glob("vllm-*"))
    if not archives:
        raise DownloadError(f"pip reported success but left no vllm=={version} archive")
    return archives[0]


OFFLINE_MARKERS = (
    "NewConnectionError",
    "Failed to establish a new connection",
    "Temporary failure in name resolution",
    "Name or service not known",
    "Network is unreachable",
    "ConnectTimeoutError",
    "ProxyError",
)
"""What pip prints when it never reached the index (it then also says no version matched)."""
AVAILABLE = re.compile(r"\(from versions: ([^)]*)\)")


def download_failure(version: str, pip_output: str) -> str:
    """Why `pip download vllm==X` failed, in words that say what happened: offline, a version
    the index does not have (naming the newest it has), or pip's own last line."""
    if any(marker in pip_output for marker in OFFLINE_MARKERS):
        return (
            f"could not download vllm=={version}: offline (PyPI could not be reached). Point "
            "eagle3lint at a vLLM checkout instead, or run again when PyPI is reachable."
        )
    listed = AVAILABLE.search(pip_output)
    if listed is not None or "No matching distribution found" in pip_output:
        versions = [v.strip() for v in listed.group(1).split(",")] if listed else []
        releases = [v for v in versions if re.fullmatch(r"\d+(\.\d+)*", v)]
        newest = max(releases, key=lambda v: tuple(int(x) for x in v.split(".")), default=None)
        where = f"; the newest release there is {newest}" if newest else ""
        return f"vLLM {version} is not on PyPI (the index answered{where})"
    lines = pip_output.strip().splitlines()
    return f"could not download vllm=={version}: {lines[-1] if lines else 'pip failed'}"


def _extract_python(archive: Path, into: Path) -> None:
    """Keep only `vllm/**.py` (wheel) or `*/vllm/**.py` (sdist), refusing unsafe member paths."""
    if archive.suffix != ".whl":
        raise DownloadError(f"{archive.name} is not a wheel; only wheels are supported")
    with zipfile.ZipFile(archive) as wheel:
        for member in wheel.namelist():
            if not (member.startswith("vllm/") and member.endswith(".py")):
                continue
            parts = Path(member).parts
            if ".." in parts or Path(member).is_absolute():
                continue
            destination = into.joinpath(*parts)
            destination.parent.mkdir(parents=True, exist_ok=True)
            with wheel.open(member) as source, open(destination, "wb") as out:
                shutil.copyfileobj(source, out)
