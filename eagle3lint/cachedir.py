"""The cache folder's housekeeping: a size cap with least-recently-used pruning, and what
`eagle3lint cache info` / `cache clean` show and do.

The folder (`EAGLE3LINT_CACHE_DIR`, else platformdirs' user cache folder) holds three kinds of
entries: `releases/<version>` (the Python sources of a vLLM release, ~20 MB each),
`summaries/` (one small file per analysed file content) and `runs/` (whole-run results). Every
use of an entry refreshes its modification time (`touch`), so the oldest times are the least
recently used; once the folder passes its cap (`EAGLE3LINT_CACHE_MAX_MB`, default 2048) those
are removed until it is back under 80% of it. The check is made at most once an hour.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from eagle3lint import trust
from eagle3lint.trust import make_folders

DEFAULT_CAP_MB = 2048
PRUNE_EVERY = 3600.0
"""Seconds between two size checks: walking the folder costs more than a warm run."""
MARKER = ".last-prune"
KINDS = ("releases", "summaries", "runs")


def default_cache_dir() -> Path:
    """`EAGLE3LINT_CACHE_DIR`, else the platform's user cache folder (platformdirs:
    `~/.cache/eagle3lint` or `$XDG_CACHE_HOME/eagle3lint` on Linux, `~/Library/Caches` on
    macOS, `%LOCALAPPDATA%` on Windows)."""
    override = os.environ.get("EAGLE3LINT_CACHE_DIR")
    if override:
        return Path(override).expanduser()
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("eagle3lint", appauthor=False))


def touch(path: Path) -> None:
    """Mark an entry as just used (a cache that cannot be written only costs speed)."""
    with contextlib.suppress(OSError):
        os.utime(path)


def cap_bytes() -> int:
    try:
        megabytes = float(os.environ.get("EAGLE3LINT_CACHE_MAX_MB", DEFAULT_CAP_MB))
    except ValueError:
        megabytes = DEFAULT_CAP_MB
    return int(megabytes * 1024 * 1024)


@dataclass
class Entry:
    """One prunable unit: a file, or a whole release folder."""

    path: Path
    size: int
    used: float


def entries(root: Path) -> list[Entry]:
    """Every entry of the cache with its size and last use."""
    found: list[Entry] = []
    releases = root / "releases"
    if releases.is_dir():
        for release in releases.iterdir():
            # A dot-folder is a download in progress (maybe another run's): not an entry.
            if release.is_dir() and not release.name.startswith("."):
                size = sum(f.stat().st_size for f in release.rglob("*") if f.is_file())
                marker = release / ".complete"
                used = (marker if marker.exists() else release).stat().st_mtime
                found.append(Entry(release, size, used))
    for kind in ("summaries", "runs"):
        for file in (root / kind).rglob("*.json") if (root / kind).is_dir() else ():
            if file.name.startswith("."):
                continue  # a temporary file being written
            with contextlib.suppress(OSError):
                stat = file.stat()
                found.append(Entry(file, stat.st_size, stat.st_mtime))
    return found


def prune(root: Path, cap: int | None = None) -> list[Entry]:
    """Remove least recently used entries while the cache is over `cap`; what was removed."""
    cap = cap_bytes() if cap is None else cap
    present = entries(root)
    total = sum(e.size for e in present)
    removed: list[Entry] = []
    if total <= cap:
        return removed
    for entry in sorted(present, key=lambda e: e.used):
        if total <= cap * 0.8:
            break
        try:
            if entry.path.is_dir():
                shutil.rmtree(entry.path)
            else:
                entry.path.unlink()
        except OSError:
            continue
        total -= entry.size
        removed.append(entry)
    return removed


def maybe_prune(root: Path) -> None:
    """`prune`, at most once per `PRUNE_EVERY` seconds (a marker file remembers when)."""
    marker = root / MARKER
    try:
        if time.time() - marker.stat().st_mtime < PRUNE_EVERY:
            return
    except OSError:
        pass
    try:
        # Never prune a folder others can write: they could have planted what would be removed.
        trust.check_folder(root)
        make_folders(root)
        marker.touch()
    except (OSError, trust.UntrustedCache):
        return
    prune(root)


def info(root: Path) -> list[tuple[str, int, int]]:
    """(kind, entries, bytes) for each kind of entry."""
    present = entries(root)
    rows = []
    for kind in KINDS:
        of_kind = [e for e in present if e.path.is_relative_to(root / kind)]
        rows.append((kind, len(of_kind), sum(e.size for e in of_kind)))
    return rows


def clean(root: Path) -> int:
    """Remove every entry; the bytes freed."""
    freed = sum(e.size for e in entries(root))
    for kind in (*KINDS, MARKER):
        target = root / kind
        if target.is_dir():
            shutil.rmtree(target, ignore_errors=True)
        elif target.exists():
            target.unlink()
    return freed


def human(size: int) -> str:
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"
