"""The journal that makes a `fix` run one transaction even when its process dies.

Before a run replaces any file it writes `.eagle3lint-fix.journal` beside its lock: the run's
id, the tree's root, and for every file it is about to write the content from before the run
and the digests of what the run writes into it. Temporary files of the run carry the same id in
their names. While the journal is there, the run is not finished: a run that ends in any way
Python sees (an error, Ctrl-C, SIGTERM) puts the files back and removes the journal itself; a
run killed outright (kill -9, a power cut after the journal reached the disk) leaves it. The
next `fix` stops there and says what `fix --recover` would put back; `fix --recover` takes the
tree lock, which the dead run no longer holds, puts back every file that holds what that run
wrote, removes its temporary files and then the journal.

A file that holds neither its content from before the run nor what the run wrote was saved
by someone since: it is left as it is, and named.

A journal on disk is hostile input until its seal says otherwise: a checkout can carry one (the
user's own file after a clone). Its first line is an HMAC-SHA256 of the rest, keyed by a secret
of this user's in eagle3lint's cache folder, outside every tree (`user_key`): a journal without
that seal was not written by a `fix` run of this user on this machine, and nothing past its
first line is parsed. A sealed journal is still checked: the user's own and not writable by
others, at most `MAX_JOURNAL_BYTES` (known from its size before a byte is read), written for
this tree, and every entry validated (`_refusal`): it only ever names Python source files inside
the tree, never under `.git`, never through `..`, and writes none through a link leading out.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import os
import re
import secrets
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from eagle3lint import cachedir, storage, trust
from eagle3lint.sources.files import MAX_FILE_BYTES, UnreadableSource, read_regular

JOURNAL_NAME = ".eagle3lint-fix.journal"
JOURNAL_FORMAT = 2
SEAL = b"eagle3lint-fix-journal hmac-sha256="
"""The journal's first line: this, then the hex HMAC-SHA256 of everything after the line."""
MAX_JOURNAL_BYTES = 16 * 1024 * 1024
"""Every file a run writes, whole and base64-encoded: a fix of every target of vLLM 0.18.0
(`--require '*'`) journals 77 files, 2.9 MB; rewriting every model file of it would take 267
files, 8.3 MB. The writer refuses more, so a journal over it was not written by `fix`, and is
refused by its size before a byte is read (a planted 49 MB one took 162 s and 971 MB)."""
MAX_JOURNAL_FILES = 1024
"""Files one journal may name: four times the model files of vLLM 0.18.0 (267). Each is read
back when the journal is undone, up to `MAX_FILE_BYTES`, the size of any file a run reads."""
KEY_NAME = "fix-journal.key"
KEY_BYTES = 32
_DIGEST = re.compile(r"[0-9a-f]{64}")


class JournalError(Exception):
    """A journal that cannot be used: what is wrong with it, for the user to act on."""


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def user_key(create: bool = False) -> bytes | None:
    """This user's secret that seals journals: `fix-journal.key` in the cache folder
    (`cachedir.default_cache_dir`; not a cache entry: pruning and `cache clean` leave it), random
    bytes only the user can read. Made when `create` and missing; None when missing otherwise.
    A folder others could write, or a key others could read, raises JournalError: whoever can
    read or replace the key can seal a journal."""
    folder = cachedir.default_cache_dir()
    path = folder / KEY_NAME
    try:
        trust.check_folder(folder)
        if create and not os.path.lexists(path):
            trust.make_folders(folder)
            staged = storage.stage(path, secrets.token_bytes(KEY_BYTES), private=True)
            try:
                # A link never replaces a key another run made meanwhile: both use that one.
                with contextlib.suppress(FileExistsError):
                    os.link(staged, path)
            finally:
                storage.discard(staged)
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except trust.UntrustedCache as exc:  # its message says what to do
        raise JournalError(f"cannot use {path}, the key that seals fix journals: {exc}") from None
    except OSError as exc:
        raise JournalError(
            f"cannot use {path}, the key that seals fix journals ({exc.strerror or exc}): "
            "set EAGLE3LINT_CACHE_DIR to a folder of your own"
        ) from None
    try:
        info = os.fstat(fd)
        key = os.read(fd, KEY_BYTES + 1) if stat.S_ISREG(info.st_mode) else b""
    finally:
        os.close(fd)
    if info.st_uid != os.geteuid() or info.st_mode & 0o077 or len(key) != KEY_BYTES:
        raise JournalError(
            f"{path} is not a key eagle3lint made, or others can read or write it (a journal "
            "it seals could be forged): remove it, and the next fix makes a new one"
        )
    return key


def sealed(body: bytes, key: bytes) -> bytes:
    """A journal: `body` under its seal, the HMAC-SHA256 of `body` keyed by `key`."""
    return SEAL + _mac(body, key) + b"\n" + body


def _mac(body: bytes | memoryview, key: bytes) -> bytes:
    return hmac.new(key, body, hashlib.sha256).hexdigest().encode()


def _refusal(name: str) -> str | None:
    """Why a journal may not name the file `name` (relative to the tree's root, as a run
    records it), or None. A run writes Python source files of the tree alone: nothing outside
    it, in git's own folder (its config runs commands), or of another kind (a venv's `.pth`)."""
    path = PurePosixPath(name)
    if not name or "\0" in name or path.is_absolute() or ".." in path.parts:
        return "is outside the tree"
    if any(part.casefold() == ".git" for part in path.parts):
        return "is in git's own folder"
    if path.suffix != ".py":
        return "is not a Python source file"
    return None


@dataclass
class JournalEntry:
    """One file of the run: its content from before the run, and what the run wrote into it."""

    original: bytes
    written: set[str] = field(default_factory=set)


@dataclass
class Recovery:
    """What rolling back a journal did (or, not applied, would do): files put back, files left
    because saved since."""

    root: Path
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

    def preview(self) -> str:
        """What `fix --recover` would do, for a run that stops instead of doing it unasked."""
        text = (
            f"{self.root / JOURNAL_NAME} was left by the interrupted fix run {self.run}: "
            f"undoing it puts back {len(self.restored)} file(s) that run wrote"
            f"{self._few(self.restored)}"
        )
        if self.left:
            text += (
                f", and leaves {len(self.left)} file(s) as they are (saved since that run, or "
                f"not a file of this tree){self._few(self.left)}"
            )
        return (
            f"{text}. Nothing written: run `eagle3lint fix --recover` to undo it, then fix "
            "again (or look at those files with version control and remove the journal)"
        )

    def _few(self, paths: list[Path], shown: int = 5) -> str:
        names = [p.relative_to(self.root.absolute()).as_posix() for p in paths[:shown]]
        more = f" and {len(paths) - shown} more" if len(paths) > shown else ""
        return f": {', '.join(names)}{more}" if names else ""


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
        next step may replace, and put the journal on disk, sealed, before it does (synced,
        with its folder, so a crash right after cannot lose it). Raises JournalError for what
        a later run would refuse to undo: nothing may be written then."""
        key = user_key(create=True)
        if key is None:  # removed between its making and its reading
            raise JournalError(f"cannot make {cachedir.default_cache_dir() / KEY_NAME}")
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
        document = {
            "format": JOURNAL_FORMAT,
            "run": self.run,
            "pid": os.getpid(),
            "root": str(self.root.resolve()),
            "files": files,
        }
        data = sealed(json.dumps(document, indent=1).encode(), key)
        if len(files) > MAX_JOURNAL_FILES or len(data) > MAX_JOURNAL_BYTES:
            raise JournalError(
                f"the run's journal would hold {len(files)} files, {len(data) / 1e6:.1f} MB, "
                f"over the journal's limits ({MAX_JOURNAL_FILES} files, "
                f"{MAX_JOURNAL_BYTES // 2**20} MiB): fix fewer files at a time"
            )
        storage.write_atomically(self.path, data, private=True, tag=self.temp_tag)
        _sync_folder(self.root)

    def _relative(self, path: Path) -> str:
        try:
            name = path.relative_to(self.root.absolute()).as_posix()
        except ValueError as exc:  # the lock root holds every file a run plans to write
            raise JournalError(f"{path} is outside {self.root}") from exc
        why = _refusal(name)
        if why is not None:
            raise JournalError(f"{path} {why}: fix writes only the tree's Python source files")
        return name

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


def recover(root: Path, apply: bool = True) -> Recovery | None:
    """Roll back the run whose journal is under `root` (call with the tree lock held, so that
    run is known to be over); None when there is none. Not `apply`: only what it would do,
    nothing written. Raises JournalError for a journal that cannot be trusted or read, and
    leaves it in place."""
    path = pending(root)
    if path is None:
        # A run killed while staging its journal replaced no file yet (it writes none before
        # the journal is in place), but leaves the journal's temporary file: any run's, as no
        # run holds the lock now.
        storage.discard_tagged(root, "fix", of=JOURNAL_NAME)
        return None
    run, entries = _load(root, path)
    return _roll_back(root, run, entries, trusted=False, apply=apply)


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
    except (UnreadableSource, OSError) as exc:
        raise JournalError(f"{path} cannot be read ({exc}); remove it") from None
    bad = JournalError(f"{path} is not a journal eagle3lint wrote; remove it")
    end = data.find(b"\n", 0, len(SEAL) + 65)
    if end < 0 or not data.startswith(SEAL):
        raise bad
    # A view: an unsealed journal costs no second copy of its bytes.
    body = memoryview(data)[end + 1 :]
    key = user_key()
    if key is None or not hmac.compare_digest(data[len(SEAL) : end], _mac(body, key)):
        raise JournalError(
            f"{path} was not written by a fix run of yours on this machine (it does not carry "
            "your seal): not used, nothing written. If it came with the files (a clone, an "
            "archive), remove it; else check the files it names with version control, then "
            "remove it"
        )
    try:
        document = json.loads(body.tobytes())
    except (ValueError, RecursionError):
        raise bad from None
    if not isinstance(document, dict) or document.get("format") != JOURNAL_FORMAT:
        raise bad
    run, files, where = document.get("run"), document.get("files"), document.get("root")
    if not isinstance(run, str) or not run.isalnum() or not isinstance(files, list):
        raise bad
    if not isinstance(where, str) or len(files) > MAX_JOURNAL_FILES:  # never written so
        raise bad
    if where != str(root.resolve()):
        raise JournalError(
            f"{path} was written by a fix run on {where}, not on this tree (moved or copied "
            "since): not used; check the files it names with version control, then remove it"
        )
    entries: dict[Path, JournalEntry] = {}
    for item in files:
        if not isinstance(item, dict):
            raise bad
        name, original, written = item.get("path"), item.get("original"), item.get("written")
        if not isinstance(name, str) or not isinstance(original, str):
            raise bad
        if not isinstance(written, list) or not all(
            isinstance(w, str) and _DIGEST.fullmatch(w) for w in written
        ):
            raise bad
        why = _refusal(name)
        if why is not None:
            raise JournalError(f"{path} names {name}, which {why}: not used; remove it")
        try:
            content = base64.b64decode(original, validate=True)
        except ValueError:
            raise bad from None
        if len(content) > MAX_FILE_BYTES:  # more than the run could have read
            raise bad
        entries[root.absolute() / name] = JournalEntry(content, set(written))
    return run, entries


def _roll_back(
    root: Path,
    run: str,
    entries: dict[Path, JournalEntry],
    trusted: bool,
    apply: bool = True,
) -> Recovery:
    """Put back what the run wrote (not `apply`: only say what would be). A journal read from
    disk (`trusted` False) writes nothing through a link that leads out of the tree, or to a
    file it could not name itself (`_refusal`)."""
    result = Recovery(root, run)
    inside = root.resolve()
    for path, entry in entries.items():
        target = path.resolve()
        if not trusted and not (
            target.is_relative_to(inside)
            and _refusal(target.relative_to(inside).as_posix()) is None
        ):
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
        if apply:
            storage.write_atomically(target, entry.original, like=os.stat(target), tag=f"fix-{run}")
        result.restored.append(path)
    if not apply:
        return result
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
