"""Whether a cached file can be trusted: written by this user, changeable by no one else.

The cache answers for the analysis (a run-cache entry is a whole report, a summary says what a
class is, a release tree is the contract), so an entry another user could have written could
forge a result. Every directory on the way to an entry must be owned by the current user (or
root) and not writable by group or others, unless it is sticky like /tmp; the entry itself must
be owned by the user and not writable by others. Anything else is treated as absent: a cache
that cannot be trusted only costs speed (a cached release is refused with a message).
Folders that no one else can write can only hold files the user put there, so a release tree
is checked by its folders, not file by file.
"""

from __future__ import annotations

import os
import stat
from functools import cache
from pathlib import Path

from eagle3lint.errors import UntrustedCache, UnusableCache

WRITABLE_BY_OTHERS = stat.S_IWGRP | stat.S_IWOTH
DIR_MODE = 0o755
"""Folders the cache creates: not group-writable even under a umask of 002."""


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
        owner_ok = info.st_uid in (os.geteuid(), 0)
        sticky = bool(info.st_mode & stat.S_ISVTX)
        if not owner_ok or (info.st_mode & WRITABLE_BY_OTHERS and not sticky):
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
