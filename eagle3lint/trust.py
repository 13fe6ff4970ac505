"""What may decide a result: files written by this user (or root), changeable by no one else.

The cache answers for the analysis (a run-cache entry is a whole report, a summary says what a
class is, a release tree is the contract), so an entry another user could have written could
forge a result. Every directory on the way to an entry must be owned by the current user (or
root) and not writable by group or others, unless it is sticky like /tmp; the entry itself must
be owned by the user and not writable by others. Anything else is treated as absent: a cache
that cannot be trusted only costs speed (a cached release is refused with a message).
Folders that no one else can write can only hold files the user put there, so a release tree
is checked by its folders, not file by file.

The same rule decides which folders above an analysed path may speak for it (see `climb`):
a configuration file or a vLLM tree planted in a shared folder such as /tmp must not become
the settings or the contract of a tree below it.
"""

from __future__ import annotations

import grp
import os
import pwd
import stat
from collections.abc import Iterator
from functools import cache
from pathlib import Path

from eagle3lint.errors import UntrustedCache, UnusableCache

WRITABLE_BY_OTHERS = stat.S_IWGRP | stat.S_IWOTH
DIR_MODE = 0o755
"""Folders the cache creates: not group-writable even under a umask of 002."""


def user_and_root() -> frozenset[int]:
    """The users whose files may always decide a result: the user, and root (who can change
    anything anyway)."""
    return frozenset({os.geteuid(), 0})


def safe(info: os.stat_result, trusted: frozenset[int]) -> bool:
    """Whether only `trusted` users can have written what `info` describes: it is owned by one
    of them and writable by no one else. Excepted: a sticky folder such as /tmp (no one can
    rename or remove another's entry in it: each entry is judged on its own), and write access
    for the owner's own private group (a group named as the user, with no other member: what a
    umask of 002 gives every file on systems that make one group per user)."""
    if info.st_uid not in trusted:
        return False
    writable = info.st_mode & WRITABLE_BY_OTHERS
    if not writable or (stat.S_ISDIR(info.st_mode) and info.st_mode & stat.S_ISVTX):
        return True
    return writable == stat.S_IWGRP and _own_group(info.st_uid, info.st_gid)


@cache
def _own_group(uid: int, gid: int) -> bool:
    try:
        user, group = pwd.getpwuid(uid), grp.getgrgid(gid)
    except KeyError:
        return False
    return (
        user.pw_gid == gid and group.gr_name == user.pw_name and set(group.gr_mem) <= {user.pw_name}
    )


def may_use(path: Path, trusted: frozenset[int]) -> bool:
    """Whether the entry at `path` (in a folder `climb` gave, with these `trusted` users) and
    what it links to were written by `trusted` users alone; False when it is not there."""
    try:
        info = os.lstat(path)
        if stat.S_ISLNK(info.st_mode):  # a link has no mode of its own: only its owner counts
            return info.st_uid in trusted and safe(os.stat(path), trusted)
    except OSError:
        return False
    return safe(info, trusted)


def climb(start: Path, named: bool) -> Iterator[tuple[Path, frozenset[int]]]:
    """`start` and the folders above it, nearest first, whose entries may decide a result about
    a path in `start`, each with the users whose entries in it may (`may_use`).

    The climb stops at the repository root (the nearest folder holding `.git`: what lies above
    a repository is not its own, and git reads no ignore file there either) and before the
    first folder someone else could have written (`safe`). The users are the user and root
    and, when `start` was `named` (a PATH, not the working directory), its owner as long as the
    climb is in folders of theirs: checking a colleague's tree, or in a container a mounted
    checkout, takes that tree's own settings, but what its owner put in /tmp or /home is not
    theirs to decide. `start` itself is the folder named or worked in: what it holds is the
    input, whoever can write it.
    """
    current = Path(os.path.abspath(start))
    trusted = base = user_and_root()
    try:
        owner = os.stat(current).st_uid
    except OSError:
        return
    if named:
        trusted = base | {owner}
    while True:
        yield current, trusted
        if os.path.lexists(current / ".git") or current.parent == current:
            return
        current = current.parent
        try:
            info = os.stat(current)
        except OSError:
            return
        if info.st_uid != owner:
            trusted = base
        if not safe(info, trusted):
            return


def private(info: os.stat_result) -> bool:
    """Owned by the current user and writable by no one else."""
    return info.st_uid == os.geteuid() and not info.st_mode & WRITABLE_BY_OTHERS


def check_file(info: os.stat_result, path: Path) -> None:
    """Raise UntrustedCache unless the file (its `fstat`) is the user's alone."""
    if not private(info):
        raise UntrustedCache(f"{path} is not owned by you or is writable by others")


@cache
def check_folder(folder: Path) -> None:
    """Raise UntrustedCache unless `folder` and every folder above it are safe: owned by the
    user or root and not writable by others (sticky folders such as /tmp excepted, where no
    one can rename another's entry); UnusableCache when one of them is not a folder or cannot
    be entered. Those still missing will be created, by us."""
    folder = Path(os.path.abspath(folder))
    for current in [*reversed(folder.parents), folder]:
        try:
            info = os.stat(current)  # a link the user set up (~/.cache -> elsewhere) is followed
        except FileNotFoundError:
            return  # not created yet, nor anything below it
        except OSError as exc:
            raise UnusableCache(
                f"{current} cannot be used as a cache folder ({exc.strerror or exc}); "
                "set EAGLE3LINT_CACHE_DIR to a folder of your own"
            ) from exc
        if not stat.S_ISDIR(info.st_mode):
            raise UnusableCache(
                f"{current} is not a folder, so it cannot hold the cache; "
                "set EAGLE3LINT_CACHE_DIR to a folder of your own"
            )
        if not safe(info, user_and_root()):
            raise UntrustedCache(
                f"{current} is writable by other users (or not yours), so cached results under "
                f"it could be forged; set EAGLE3LINT_CACHE_DIR to a folder of your own"
            )


def make_folders(folder: Path) -> None:
    """Create `folder` and its missing parents with `DIR_MODE`."""
    missing = []
    for current in [folder, *folder.parents]:
        if current.is_dir():
            break
        missing.append(current)
    for current in reversed(missing):
        try:
            current.mkdir(mode=DIR_MODE)
        except FileExistsError:
            if not current.is_dir():
                raise
