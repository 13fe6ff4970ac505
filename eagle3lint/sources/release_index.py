"""An engine's final releases on the package index: from `pip index versions <package>` (so
pip's own index settings apply), kept for an hour in the cache so that a warm matrix does not
wait on the network."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from packaging.version import InvalidVersion, Version

from eagle3lint.cachedir import default_cache_dir, trusted_folder
from eagle3lint.errors import UsageError
from eagle3lint.sources.download_errors import label
from eagle3lint.sources.files import MAX_CACHE_ENTRY_BYTES, UnreadableSource, read_regular
from eagle3lint.storage import write_atomically
from eagle3lint.trust import make_folders

INDEX_TTL = 3600.0
"""Seconds the package index's list of releases is reused."""
_AVAILABLE = re.compile(r"^Available versions:\s*(.+)$", re.MULTILINE)


def indexed_releases(
    cache_root: Path | None = None, package: str = "vllm", hint: str | None = None
) -> list[str]:
    """Every final release of `package` on the package index, oldest first (cached for an
    hour); `hint` says what to do when the index cannot be asked (else: name versions)."""
    store = (cache_root or default_cache_dir()) / "matrix" / f"{package}-releases.json"
    trusted = trusted_folder(store.parent)  # a list others could write could pick releases
    try:
        if trusted:
            data = json.loads(read_regular(store, MAX_CACHE_ENTRY_BYTES, private=True))
            if time.time() - float(data["fetched"]) < INDEX_TTL and data["versions"]:
                return [str(v) for v in data["versions"]]
    except (UnreadableSource, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        pass
    versions = final_releases(_ask_index(package, hint))
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


def _ask_index(package: str = "vllm", hint: str | None = None) -> list[str]:
    # Isolated, from an empty folder: a pip.py in the working directory must not run.
    command = [sys.executable, "-I", "-m", "pip", "index", "versions", package]
    command += ["--disable-pip-version-check"]
    try:
        with tempfile.TemporaryDirectory() as empty:
            result = subprocess.run(
                command, capture_output=True, text=True, timeout=120, check=False, cwd=empty
            )
    except subprocess.TimeoutExpired as exc:
        raise UsageError(
            f"listing {label(package)} releases: the package index did not answer in 2 minutes"
        ) from exc
    found = _AVAILABLE.search(result.stdout)
    if result.returncode != 0 or found is None:
        lines = (result.stderr or result.stdout).strip().splitlines()
        why = lines[-1] if lines else "pip failed"
        hint = hint or (f"give versions one by one (--{package} X.Y.Z) or release trees as paths")
        raise UsageError(
            f"could not list {label(package)} releases from the package index ({why}); {hint}"
        )
    return [v.strip() for v in found.group(1).split(",") if v.strip()]
