"""The cache folder's housekeeping: a size cap with least-recently-used pruning, and what
`eagle3lint cache info` / `cache clean` show and do.

The folder (`EAGLE3LINT_CACHE_DIR`, else platformdirs' user cache folder) holds three kinds of
entries: `releases/<version>` (the Python sources of a vLLM release, ~20 MB each),
`summaries/` (one small file per analysed file content) and `runs/` (whole-run results). Every
use of an entry refreshes its modification time (`touch`), so the oldest times are the least
recently used; once the folder passes its cap (`EAGLE3LINT_CACHE_MAX_MB`, default 2048) those
are removed until it is back under 80% of it. The check is made at most once an hour.

A release is downloaded into a staging folder `releases/.VERSION-PID-RANDOM`, locked (`flock`)
by the run that writes it, then renamed into place. A run killed meanwhile (kill -9, a power
cut) leaves it behind, unlocked: the kernel drops a lock with its process. The next download
and every pruning remove the staging folders they can lock, never one a live run holds.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import math
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from eagle3lint import trust
from eagle3lint.errors import UntrustedCache, UnusableCache, UsageError
from eagle3lint.storage import TEMP_SUFFIX
from eagle3lint.trust import make_folders

DEFAULT_CAP_MB = 2048
CAP_ENV = "EAGLE3LINT_CACHE_MAX_MB"
PRUNE_EVERY = 3600.0
"""Seconds between two size checks: walking the folder costs more than a warm run."""
MARKER = ".last-prune"
KINDS = ("releases", "summaries", "runs")
RESOLVED_SUFFIX = "-resolved.json"
"""`releases/<name>-resolved.json`: what a dependency's requirements resolved to
(`sources.dependency_release`), kept until `clean`, never pruned (a verdict would change)."""


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
    """The cap, from `EAGLE3LINT_CACHE_MAX_MB` (megabytes, default 2048); a value that is not
    a number of megabytes from 0 up is a usage error."""
    text = os.environ.get(CAP_ENV, "").strip() or str(DEFAULT_CAP_MB)
    try:
        megabytes = float(text)
    except ValueError:
        megabytes = math.nan
    if not math.isfinite(megabytes) or megabytes < 0:
        raise UsageError(
            f"{CAP_ENV}={text!r} is not a cache size: give megabytes, a number from 0 up "
            f"(default {DEFAULT_CAP_MB})"
        )
    return int(megabytes * 1024 * 1024)


@dataclass
class Entry:
    """One prunable unit: a file, or a whole release folder."""

    path: Path
    size: int
    used: float


@dataclass
class Scan:
    """What the cache holds, and what of it could not be looked at (a sentence each)."""

    entries: list[Entry] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)

    def listed(self, folder: Path) -> list[os.DirEntry[str]]:
        """The entries of `folder` (none if it is not there); one it cannot list is noted."""
        try:
            with os.scandir(folder) as found:
                return list(found)
        except FileNotFoundError:
            return []
        except OSError as exc:
            self.unreadable.append(f"could not list {folder}: {exc.strerror or exc}")
            return []

    def walked(self, folder: Path) -> Iterator[os.DirEntry[str]]:
        """Every file under `folder`, links not followed."""
        for entry in self.listed(folder):
            if entry.is_dir(follow_symlinks=False):
                yield from self.walked(Path(entry.path))
            elif entry.is_file(follow_symlinks=False):
                yield entry


def scan(root: Path) -> Scan:
    """Every entry of the cache with its size and last use."""
    found = Scan()
    try:
        trust.check_folder(root)
    except UnusableCache as exc:  # a file, or a folder that cannot be entered
        found.unreadable.append(str(exc))
        return found
    except UntrustedCache:
        pass  # listed all the same (`info`, `clean`); `maybe_prune` prunes no such folder
    for release in found.listed(root / "releases"):
        # A dot-folder is a download in progress or a dead one's (`remove_dead_staging`).
        if release.is_dir(follow_symlinks=False) and not release.name.startswith("."):
            with contextlib.suppress(OSError):
                size = sum(f.stat(follow_symlinks=False).st_size for f in found.walked(release))
                marker = Path(release.path) / ".complete"
                used = (marker if marker.exists() else Path(release.path)).stat().st_mtime
                found.entries.append(Entry(Path(release.path), size, used))
    for kind in ("summaries", "runs"):
        for file in found.walked(root / kind):
            if file.name.startswith(".") or not file.name.endswith(".json"):
                continue  # a temporary file being written
            with contextlib.suppress(OSError):
                stat = file.stat(follow_symlinks=False)
                found.entries.append(Entry(Path(file.path), stat.st_size, stat.st_mtime))
    return found


def entries(root: Path) -> list[Entry]:
    """Every entry of the cache that could be looked at."""
    return scan(root).entries


@contextlib.contextmanager
def staging_folder(parent: Path, name: str) -> Iterator[Path]:
    """A new folder `.NAME-PID-RANDOM` in `parent`, locked while the block runs and removed
    after it, so that `remove_dead_staging` can tell it from a dead run's."""
    while True:
        path = Path(tempfile.mkdtemp(dir=parent, prefix=f".{name}-{os.getpid()}-"))
        handle = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if os.fstat(handle).st_nlink > 0:
                break
        except BlockingIOError:
            pass
        # A cleaner took it for a dead run's between its creation and the lock: a new one.
        os.close(handle)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
        os.close(handle)


def remove_dead_staging(parent: Path) -> list[Path]:
    """Remove the staging folders in `parent` that no live run holds; those removed."""
    removed = []
    for entry in Scan().listed(parent):
        if not entry.name.startswith(".") or not entry.is_dir(follow_symlinks=False):
            continue
        try:
            handle = os.open(entry.path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            shutil.rmtree(entry.path, ignore_errors=True)  # holding the lock: no one joins
            removed.append(Path(entry.path))
        except BlockingIOError:
            continue  # a live download
        finally:
            os.close(handle)
    return removed


def remove_stale_temporaries(root: Path, now: float | None = None) -> int:
    """Remove the temporary files of cache entries that a killed run left (a run writes one in
    milliseconds: one older than `PRUNE_EVERY` has no writer left); how many."""
    cutoff = (time.time() if now is None else now) - PRUNE_EVERY
    removed = 0
    found = Scan()
    for kind in ("summaries", "runs"):
        for file in found.walked(root / kind):
            if not (file.name.startswith(".") and file.name.endswith(TEMP_SUFFIX)):
                continue
            with contextlib.suppress(OSError):
                if file.stat(follow_symlinks=False).st_mtime < cutoff:
                    os.unlink(file.path)
                    removed += 1
    return removed


def prune(root: Path, cap: int | None = None) -> list[Entry]:
    """Remove staging folders and temporary files of dead runs, then least recently used
    entries while the cache is over `cap`; the entries removed."""
    cap = cap_bytes() if cap is None else cap
    remove_dead_staging(root / "releases")
    remove_stale_temporaries(root)
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


def info(root: Path) -> tuple[list[tuple[str, int, int]], list[str]]:
    """(kind, entries, bytes) for each kind of entry, and what could not be listed."""
    found = scan(root)
    rows = []
    for kind in KINDS:
        of_kind = [e for e in found.entries if e.path.is_relative_to(root / kind)]
        rows.append((kind, len(of_kind), sum(e.size for e in of_kind)))
    return rows, found.unreadable


def clean(root: Path) -> tuple[int, list[str]]:
    """Remove every entry (not the staging folder of a live download); the bytes freed, and
    what could not be removed or listed (a sentence each)."""
    found = scan(root)
    if not root.is_dir():
        return 0, found.unreadable  # nothing there, or not a folder (said)
    failed: list[str] = []

    def note(path: object, exc: BaseException) -> None:
        if not isinstance(exc, FileNotFoundError):
            failed.append(f"could not remove {path}: {getattr(exc, 'strerror', None) or exc}")

    def on_error(_: object, path: str, info: tuple[object, BaseException, object]) -> None:
        note(path, info[1])  # shutil.rmtree's report of a file it could not remove

    remove_dead_staging(root / "releases")
    for entry in found.entries:
        if entry.path.parent == root / "releases":
            shutil.rmtree(entry.path, onerror=on_error)
    # What dependencies' requirements resolved to goes with the releases fetched for them.
    for record in (root / "releases").glob(f"*{RESOLVED_SUFFIX}"):
        try:
            record.unlink()
        except OSError as exc:
            note(record, exc)
    for kind in ("summaries", "runs"):
        shutil.rmtree(root / kind, onerror=on_error)
    try:
        (root / MARKER).unlink()
    except OSError as exc:
        note(root / MARKER, exc)
    freed = sum(e.size for e in found.entries if not os.path.lexists(e.path))
    return freed, [*found.unreadable, *dict.fromkeys(failed)]


def human(size: int) -> str:
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"


def trusted_folder(folder: Path) -> bool:
    """Whether cache entries under `folder` can be used (see `eagle3lint.trust`); says why
    not on stderr, once per folder."""
    try:
        trust.check_folder(folder)
    except trust.UntrustedCache as exc:
        _warn_once(str(exc))
        return False
    return True


@cache
def _warn_once(message: str) -> None:
    from eagle3lint.report.escape import printable

    print(f"eagle3lint: cache not used: {printable(message)}", file=sys.stderr)


def file_digest(data: bytes) -> str:
    """A short content hash of a file's bytes."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()
