"""The columns of a matrix: release trees given as paths, and `--vllm` versions, ranges, latest.

A range `A..B` means every final release on the package index from A to B inclusive; the list
comes from `pip index versions vllm` (so pip's own index settings apply) and is kept for an hour
in the cache, so that a warm matrix does not wait on the network.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from packaging.version import InvalidVersion, Version

from eagle3lint.engines.vllm.download import VERSION
from eagle3lint.errors import UsageError
from eagle3lint.index.cache import default_cache_dir, trusted_folder
from eagle3lint.sources.files import MAX_CACHE_ENTRY_BYTES, UnreadableSource, read_regular
from eagle3lint.storage import write_atomically
from eagle3lint.trust import make_folders

INDEX_TTL = 3600.0
"""Seconds the package index's list of vLLM releases is reused."""
MAX_RANGE_RELEASES = 50
"""Releases one `A..B` may expand to: each is a download and a check of its own. The
documented ranges hold 35 (`0.11.0..0.33.0`) and 36 (`0.11.0..latest`, with 0.34.0);
PyPI lists 101 final releases in all."""
LATEST = "latest"
_AVAILABLE = re.compile(r"^Available versions:\s*(.+)$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Column:
    """One release of the matrix: a tree on disk, or a version fetched from the index."""

    path: Path | None = None
    version: str | None = None

    @property
    def spec(self) -> str:
        return str(self.path) if self.path is not None else str(self.version)


def sort_key(version: str | None) -> tuple[int, Version]:
    """Releases in version order; a column whose version is unknown goes last."""
    try:
        return (0, Version(version or ""))
    except InvalidVersion:
        return (1, Version("0"))


def expand_specs(specs: list[str], index: list[str] | None = None) -> list[str]:
    """`0.16.0`, `0.12.0..0.33.0`, `0.12.0..latest` and `latest` → versions, in order, without
    repeats.

    `index` is the package index's list (fetched on first need when None)."""
    versions: list[str] = []
    for raw in specs:
        spec = raw.strip()
        if spec == LATEST or ".." in spec:
            index = index if index is not None else indexed_releases()
        if spec == LATEST:
            versions.append(index[-1])  # type: ignore[index]
        elif ".." in spec:
            low, _, high = (part.strip() for part in spec.partition(".."))
            high = index[-1] if high == LATEST else high  # type: ignore[index]
            for bound in (low, high):
                _check_version(bound, spec)
            if Version(low) > Version(high):
                raise UsageError(f"--vllm {spec}: the range is empty ({low} is after {high})")
            found = [v for v in index or () if Version(low) <= Version(v) <= Version(high)]
            if not found:
                raise UsageError(f"--vllm {spec}: no final vLLM release in that range")
            if len(found) > MAX_RANGE_RELEASES:
                newest = found[-MAX_RANGE_RELEASES:]
                raise UsageError(
                    f"--vllm {spec}: the range holds {len(found)} releases, more than the "
                    f"{MAX_RANGE_RELEASES} one range may expand to (each is a download and a "
                    f"check); narrow it (--vllm {newest[0]}..{newest[-1]} holds the newest "
                    f"{MAX_RANGE_RELEASES}) or split it into several --vllm ranges"
                )
            versions += found
        else:
            _check_version(spec, spec)
            versions.append(spec)
    return list(dict.fromkeys(versions))


def _check_version(version: str, spec: str) -> None:
    if not VERSION.match(version):
        raise UsageError(
            f"--vllm {spec}: {version!r} is not a vLLM version "
            "(expected 0.16.0, a range 0.12.0..0.33.0, or latest)"
        )


def indexed_releases(cache_root: Path | None = None) -> list[str]:
    """Every final vLLM release on the package index, oldest first (cached for an hour)."""
    store = (cache_root or default_cache_dir()) / "matrix" / "vllm-releases.json"
    trusted = trusted_folder(store.parent)  # a list others could write could pick releases
    try:
        if trusted:
            data = json.loads(read_regular(store, MAX_CACHE_ENTRY_BYTES, private=True))
            if time.time() - float(data["fetched"]) < INDEX_TTL and data["versions"]:
                return [str(v) for v in data["versions"]]
    except (UnreadableSource, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        pass
    versions = final_releases(_ask_index())
    if not trusted:
        return versions
    try:
        make_folders(store.parent)
        data = json.dumps({"fetched": time.time(), "versions": versions})
        write_atomically(store, data.encode(), private=True)
    except OSError:
        pass  # an unwritable cache only costs the next run a look-up
    return versions


def final_releases(versions: list[str]) -> list[str]:
    """Final releases (no pre-, dev or local versions), oldest first."""
    kept = []
    for text in versions:
        try:
            version = Version(text)
        except InvalidVersion:
            continue
        if not (version.is_prerelease or version.is_devrelease or version.local):
            kept.append(text)
    return sorted(kept, key=Version)


def _ask_index() -> list[str]:
    # Isolated, from an empty folder: a pip.py in the working directory must not run.
    command = [sys.executable, "-I", "-m", "pip", "index", "versions", "vllm"]
    command += ["--disable-pip-version-check"]
    try:
        with tempfile.TemporaryDirectory() as empty:
            result = subprocess.run(
                command, capture_output=True, text=True, timeout=120, check=False, cwd=empty
            )
    except subprocess.TimeoutExpired as exc:
        raise UsageError(
            "listing vLLM releases: the package index did not answer in 2 minutes"
        ) from exc
    found = _AVAILABLE.search(result.stdout)
    if result.returncode != 0 or found is None:
        lines = (result.stderr or result.stdout).strip().splitlines()
        why = lines[-1] if lines else "pip failed"
        raise UsageError(
            f"could not list vLLM releases from the package index ({why}); give versions "
            "one by one (--vllm 0.16.0) or release trees as paths"
        )
    return [v.strip() for v in found.group(1).split(",") if v.strip()]
