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
        detail = (result.stderr or result.stdout).strip().splitlines()
        last = detail[-1] if detail else "pip failed"
        offline = any(
            w in (result.stderr or "") for w in ("NewConnectionError", "Network", "resolve")
        )
        why = "no network connection to PyPI" if offline else last
        raise DownloadError(
            f"could not download vllm=={version}: {why}. Point eagle3lint at a vLLM checkout "
            "instead, or run again when PyPI is reachable."
        )
    archives = sorted(into.glob("vllm-*"))
    if not archives:
        raise DownloadError(f"pip reported success but left no vllm=={version} archive")
    return archives[0]


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
