"""The journal that makes a `fix` run one transaction even when its process dies.

Before a run replaces any file it writes `.eagle3lint-fix.journal` beside its lock: the run's
id, and for every file it is about to write the content from before the run and the digests
of what the run writes into it. Temporary files of the run carry the same id in their names.
While the journal is there, the run is not finished: a run that ends in any way Python sees
(an error, Ctrl-C, SIGTERM) puts the files back and removes the journal itself; a run killed
outright (kill -9, a power cut after the journal reached the disk) leaves it, and the next
`fix` (or `fix --recover`) takes the tree lock, which the dead run no longer holds, puts back
every file that holds what that run wrote, removes its temporary files and then the journal.

A file that holds neither its content from before the run nor what the run wrote was saved
by someone since: it is left as it is, and named.

The journal is read as untrusted input (a checkout can carry one): through the regular-file
reader with a size limit, only if it is the user's own and not writable by others, every entry
validated, and only paths inside the tree's root, never through `..`, are written.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import secrets
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from eagle3lint import storage, trust
from eagle3lint.sources.files import MAX_FILE_BYTES, UnreadableSource, read_regular

JOURNAL_NAME = ".eagle3lint-fix.journal"
JOURNAL_FORMAT = 1
MAX_JOURNAL_BYTES = 256 * 1024 * 1024
"""Every file a run writes, whole and base64-encoded: a fix of every target of a vLLM release
holds a few MB; model files are capped at 2 MiB each."""


class JournalError(Exception):
    """A journal that cannot be used: what is wrong with it, for the user to act on."""


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass
class JournalEntry:
    """One file of the run: its content from before the run, and what the run wrote into it."""

    original: bytes
    written: set[str] = field(default_factory=set)


@dataclass
class Recovery:
    """What rolling back a journal did: files put back, files left because saved since."""

    run: str
    restored: list[Path] = field(default_factory=list)
    left: list[Path] = field(default_factory=list)
    temporaries: int = 0

    def summary(self) -> str:
        """What was done, for a run that undoes another one's writes."""
        return f"undid the interrupted fix run {self.run}: {self.details()}"

    def details(self) -> str:
        """What was put back and removed, and what was left."""
        text = (
            f"restored {len(self.restored)} file(s), removed {self.temporaries} temporary file(s)"
        )
        if self.left:
            names = ", ".join(str(p) for p in self.left)
            text += (
                f"; left as they are (saved since that run, or not a file of this tree): {names}"
            )
        return text


class Journal:
    """The journal of the current run, rooted where its lock is (`storage.tree_lock`)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.path = root / JOURNAL_NAME
        self.run = secrets.token_hex(6)
        self.entries: dict[Path, JournalEntry] = {}

    @property
    def temp_tag(self) -> str:
        """What every temporary file of this run carries in its name."""
        return f"fix-{self.run}"

    def record(self, writes: Iterable[tuple[Path, bytes, bytes]]) -> None:
        """Add `(path, content on disk now, content about to be written)` for every file the
        next step may replace, and put the journal on disk before it does (synced, with its
        folder, so a crash right after cannot lose it)."""
        for path, current, new in writes:
            entry = self.entries.setdefault(path.absolute(), JournalEntry(current))
            entry.written.add(digest(new))
        files = []
        for path, entry in self.entries.items():
            files.append(
                {
                    "path": self._relative(path),
                    "original": base64.b64encode(entry.original).decode("ascii"),
                    "written": sorted(entry.written),
                }
            )
        document = {"format": JOURNAL_FORMAT, "run": self.run, "pid": os.getpid(), "files": files}
        data = json.dumps(document, indent=1).encode()
        storage.write_atomically(self.path, data, private=True, tag=self.temp_tag)
        _sync_folder(self.root)

    def _relative(self, path: Path) -> str:
        try:
            return path.relative_to(self.root.absolute()).as_posix()
        except ValueError as exc:  # the lock root holds every file a run plans to write
            raise JournalError(f"{path} is outside {self.root}") from exc

    def rollback(self) -> Recovery:
        """Put back every file of this run that holds what it wrote; remove its temporary
        files and the journal."""
        return _roll_back(self.root, self.run, self.entries, trusted=True)

    def close(self) -> None:
        """The run is over, its files as it means to leave them: the journal goes."""
        _remove_temporaries(self.root, self.entries, self.run)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        _sync_folder(self.root)


def pending(root: Path) -> Path | None:
    """The journal an interrupted run left under `root`, if there is one."""
    path = root / JOURNAL_NAME
    return path if os.path.lexists(path) else None


def recover(root: Path) -> Recovery | None:
    """Roll back the run whose journal is under `root` (call with the tree lock held, so that
    run is known to be over); None when there is none. Raises JournalError for a journal that
    cannot be trusted or read, and leaves it in place."""
    path = pending(root)
    if path is None:
        # A run killed while staging its journal replaced no file yet (it writes none before
        # the journal is in place), but leaves the journal's temporary file: any run's, as no
        # run holds the lock now.
        storage.discard_tagged(root, "fix", of=JOURNAL_NAME)
        return None
    run, entries = _load(root, path)
    return _roll_back(root, run, entries, trusted=False)


def _load(root: Path, path: Path) -> tuple[str, dict[Path, JournalEntry]]:
    try:
        info = os.lstat(path)
        if not stat.S_ISREG(info.st_mode):
            raise JournalError(f"{path} is not a regular file; remove it")
        if not trust.safe(info, trust.user_and_root()):
            raise JournalError(
                f"{path} was not written by you (owner or permissions): not used; "
                "check the files it names with version control, then remove it"
            )
        data = read_regular(path, MAX_JOURNAL_BYTES, "fix journal")
        document = json.loads(data)
    except (UnreadableSource, OSError, ValueError, RecursionError) as exc:
        if isinstance(exc, JournalError):
            raise
        raise JournalError(f"{path} cannot be read ({exc}); remove it") from None
    bad = JournalError(f"{path} is not a journal eagle3lint wrote; remove it")
    if not isinstance(document, dict) or document.get("format") != JOURNAL_FORMAT:
        raise bad
    run, files = document.get("run"), document.get("files")
    if not isinstance(run, str) or not run.isalnum() or not isinstance(files, list):
        raise bad
    entries: dict[Path, JournalEntry] = {}
    for item in files:
        if not isinstance(item, dict):
            raise bad
        rel, original, written = item.get("path"), item.get("original"), item.get("written")
        if not isinstance(rel, str) or not isinstance(original, str):
            raise bad
        if not isinstance(written, list) or not all(isinstance(w, str) for w in written):
            raise bad
        parts = Path(rel).parts
        if not parts or Path(rel).is_absolute() or ".." in parts or "\0" in rel:
            raise JournalError(f"{path} names a file outside {root}: not used; remove it")
        try:
            content = base64.b64decode(original, validate=True)
        except ValueError:
            raise bad from None
        entries[root.absolute() / rel] = JournalEntry(content, set(written))
    return run, entries


def _roll_back(root: Path, run: str, entries: dict[Path, JournalEntry], trusted: bool) -> Recovery:
    """Put back what the run wrote. A journal read from disk (`trusted` False) may have been
    planted: it writes nothing through a link that leads out of the tree."""
    result = Recovery(run)
    inside = root.resolve()
    for path, entry in entries.items():
        target = path.resolve()
        if not trusted and not target.is_relative_to(inside):
            result.left.append(path)
            continue
        try:
            current = read_regular(path, MAX_FILE_BYTES, "model file")
        except (UnreadableSource, OSError):
            result.left.append(path)
            continue
        if current == entry.original:
            continue
        if digest(current) not in entry.written:
            result.left.append(path)
            continue
        storage.write_atomically(target, entry.original, like=os.stat(target), tag=f"fix-{run}")
        result.restored.append(path)
    result.temporaries = _remove_temporaries(root, entries, run, inside if not trusted else None)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(root / JOURNAL_NAME)
    _sync_folder(root)
    return result


def _remove_temporaries(
    root: Path, entries: dict[Path, JournalEntry], run: str, within: Path | None = None
) -> int:
    """Remove what the run staged and never renamed: beside each of its files (a linked
    file's are beside its target), and the journal's own in the root; only in folders under
    `within` when given."""
    folders = {root} | {p.resolve().parent for p in entries}
    if within is not None:
        folders = {f for f in folders if f.resolve().is_relative_to(within)}
    removed = 0
    for folder in folders:
        removed += storage.discard_tagged(folder, f"fix-{run}")
    return removed


def _sync_folder(folder: Path) -> None:
    """Make renames and removals in `folder` durable (where the platform lets a folder be
    opened for that)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
