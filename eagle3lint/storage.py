"""Writing files whole: every file eagle3lint writes (cache entries, baselines, matrix output,
`fix`'s rewrites) is written to a temporary file beside it, synced (all but cache entries),
given the permissions the file had, and renamed over it, so no reader ever sees half a file;
and the lock that serialises `fix` runs on one tree.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import secrets
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

from eagle3lint.errors import UnsafeLock

TEMP_SUFFIX = ".eagle3lint"
"""Every temporary file ends so: `.NAME.RANDOM.eagle3lint` (`.NAME.TAG-RANDOM.eagle3lint` for a
`fix` run's, whose journal names the tag), hidden beside the file it will be."""


def stage(
    path: Path,
    data: bytes,
    like: os.stat_result | None = None,
    private: bool = False,
    sync: bool = True,
    tag: str | None = None,
) -> str:
    """A temporary file holding `data` beside `path`, synced to disk if `sync`; returns its
    name, which carries `tag` when given (so that a later run can find it: `discard_tagged`).

    It takes the mode and owner of `like` (the file it will replace). A new file gets mode
    0600 if `private`, else what the umask leaves of 0666, as `open()` would give it.
    """
    unique = f"{tag}-{secrets.token_hex(4)}" if tag else secrets.token_hex(4)
    tmp = os.path.join(path.parent, f".{path.name}.{unique}{TEMP_SUFFIX}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600 if private else 0o666)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if sync:
                os.fsync(handle.fileno())
        if like is not None:
            os.chmod(tmp, stat.S_IMODE(like.st_mode))
            if (like.st_uid, like.st_gid) != (os.getuid(), os.getgid()):
                os.chown(tmp, like.st_uid, like.st_gid)
    except BaseException:
        discard(tmp)
        raise
    return tmp


def discard(tmp: str) -> None:
    """Remove a temporary file that will not be renamed into place (if it is still there)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)


def discard_tagged(folder: Path, tag: str, of: str | None = None) -> int:
    """Remove the temporary files in `folder` that carry `tag` (those of a run that is over),
    only those staged for the file named `of` when given; how many there were."""
    marker = f".{tag}-"
    start = f".{of}." if of is not None else "."
    removed = 0
    with contextlib.suppress(OSError), os.scandir(folder) as entries:
        for entry in entries:
            name = entry.name
            if name.startswith(start) and name.endswith(TEMP_SUFFIX) and marker in name:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(entry.path)
                    removed += 1
    return removed


def write_atomically(
    path: Path,
    data: bytes,
    private: bool = False,
    like: os.stat_result | None = None,
    sync: bool = True,
    tag: str | None = None,
) -> None:
    """Replace (or create) `path` with `data` in one rename, keeping an existing file's
    permissions and owner (those of `like` if given: the file as it was first read). Raises
    OSError; the temporary file never outlives a failure.

    `sync=False` skips waiting for the disk (on a loaded machine, up to half a second per
    file): for cache entries, which a crash may leave empty or cut short, never mixed with
    another entry, and which are then ignored and rebuilt (`SummaryCache.load` and
    `RunCache.load` check every entry), never for what the user keeps."""
    if like is None:
        with contextlib.suppress(FileNotFoundError):
            like = os.stat(path)
    tmp = stage(path, data, like, private, sync, tag)
    try:
        os.replace(tmp, path)
    except BaseException:
        discard(tmp)
        raise


def write_named_file(path: Path, data: bytes) -> None:
    """Write `data` to a file the user named (`-o`, `--write-baseline`) as a shell redirection
    would reach it: a device or a pipe (`/dev/null`, `/dev/stdout`, a FIFO) is written to,
    never replaced by a regular file (renamed over, `/dev/null` would stop being the null
    device for every program on the machine); a symbolic link's target is replaced, the link
    kept; any other path is written whole. Raises OSError."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        with open(path, "wb") as stream:
            stream.write(data)
        return
    target = Path(os.path.realpath(path))
    target.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(target, data)


LOCK_NAME = ".eagle3lint-fix.lock"

_held_locks: set[int] = set()
"""Descriptors of the tree locks this process holds. A forked child (a parse worker) would
share the lock with them, and hold it after this process dies: the next `fix` would wait for
a dead run. The child closes its copies at once."""


def _drop_inherited_locks() -> None:
    for fd in _held_locks:
        with contextlib.suppress(OSError):
            os.close(fd)
    _held_locks.clear()


os.register_at_fork(after_in_child=_drop_inherited_locks)


@contextlib.contextmanager
def tree_lock(
    root: Path, on_wait: Callable[[str], None], on_stale: Callable[[str], None]
) -> Iterator[None]:
    """Hold `root/.eagle3lint-fix.lock` for the block: one `fix` at a time on a tree.

    The lock is an `flock` on the file, which the kernel releases when its holder dies, so a
    lock is never left held; the file names the holder's pid. A file still naming a pid when
    the lock is free was left by a run that died: it is taken over, and `on_stale` says so.
    `on_wait` is told once when another run holds the lock and this one waits for it.
    """
    path = root / LOCK_NAME
    while True:
        # Never through a link: a planted one would have us truncate the file it points to.
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
        try:
            _check_lock_file(fd, path)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                if exc.errno not in (errno.EWOULDBLOCK, errno.EACCES):
                    raise
                on_wait(f"waiting for the fix run (pid {_holder(fd) or '?'}) holding {path}")
                fcntl.flock(fd, fcntl.LOCK_EX)
            # The holder before us unlinks the file as it releases it: a lock on that unlinked
            # file serialises nothing, so start again on the current one.
            if os.fstat(fd).st_ino != _inode(path):
                os.close(fd)
                continue
            _check_lock_file(fd, path, locked=True)  # before the first write
        except BaseException:
            os.close(fd)
            raise
        break
    try:
        stale = _holder(fd)
        if stale is not None and stale != os.getpid():
            on_stale(f"took over the lock {path} left by fix run pid {stale}, which is not running")
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        _held_locks.add(fd)
        yield
    finally:
        _held_locks.discard(fd)
        with contextlib.suppress(OSError):
            os.unlink(path)
        os.close(fd)


def _check_lock_file(fd: int, path: Path, locked: bool = False) -> None:
    """Raise UnsafeLock unless the open `fd` is a lock file: a regular file with no other link
    (a hard link to `olmo.py` would have us truncate olmo.py) and, once `locked`, empty or
    holding a pid, as a run leaves it: a file of other bytes is not ours to empty."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise UnsafeLock(f"{path} is not a regular file: not a lock of eagle3lint, left alone")
    if info.st_nlink > 1:
        raise UnsafeLock(f"{path} has other links: not a lock of eagle3lint, left alone")
    if locked and not _LOCK_CONTENT.fullmatch(os.pread(fd, 64, 0)):
        raise UnsafeLock(f"{path} holds more than a pid: not a lock of eagle3lint, left alone")


_LOCK_CONTENT = re.compile(rb"(?:\d{1,20}\n?)?")
"""What a lock file holds: nothing, or the pid of the run that holds (or held) it."""


def _holder(fd: int) -> int | None:
    """The pid written in the lock file, if any."""
    text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    return int(text) if text.isdigit() else None


def _inode(path: Path) -> int | None:
    try:
        return os.stat(path).st_ino
    except FileNotFoundError:
        return None
