"""The Python files a branch changed since a git ref (`check --diff-base REF`), for CI on pull
requests: the changes committed since the merge base of REF and HEAD, with their contents as
committed at HEAD (an uncommitted edit of such a file is not the pull request's), read as blobs
by their object ids (`cat-file blob`: no filter or textconv runs) and handed to the check in
memory (`sources.files.overlaid`), the working tree left as it is.

This is the one place eagle3lint runs git, and the repository it runs in may be hostile (a
pull request's checkout, or a repository committed inside one). Only plumbing commands that
compare commits or read objects are run (`rev-parse`, `merge-base`, `diff-tree`, `cat-file
blob`, and `config` to read two keys):
they never refresh the index or read the working tree, so a repository's `core.fsmonitor`,
clean/smudge filters, textconv and external diff drivers, all of which run commands, have
nothing to run for; those keys are overridden on the command line all the same, and the user's
pager and editor are never started (no terminal, `GIT_PAGER=cat`). A ref is passed after
`--end-of-options`, so a ref such as `--output=x` is a ref, not an option.

The other way a repository can make git run a command is to make it fetch: a partial clone
(`extensions.partialClone`, a `promisor` remote) fetches a missing object from the remote its
own config names, whose URL can be `ext::COMMAND` or a `file` remote whose `uploadpack` is a
command, and its `protocol.<name>.allow` overrides a general `protocol.allow=never`. So no
transport is allowed at all (`GIT_ALLOW_PROTOCOL` set to no protocol overrides every
configured one; each `protocol.<name>.allow` git knows is also set to `never`), lazy fetching is
off where git has the switch (`GIT_NO_LAZY_FETCH`, 2.45), and a repository found by walking up
into a bare one (a folder committed with `HEAD`, `config`, `objects/` and `refs/`, which a plain
`git clone` brings along) is not used (`safe.bareRepository=explicit`). A partial clone missing
the objects to compare is a named error: eagle3lint fetches nothing.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Literal, overload

from eagle3lint.errors import UsageError

GIT_TIMEOUT = 60
"""Seconds for one git command: a comparison of two commits takes well under one."""

# Every transport git has, by the name `protocol.<name>.allow` uses; remote helpers (`foo::`)
# are refused by GIT_ALLOW_PROTOCOL, which names none.
_PROTOCOLS = ("ext", "fd", "file", "git", "ssh", "http", "https", "ftp", "ftps", "testgit")

_OVERRIDES = (
    "core.fsmonitor=false",
    "core.hooksPath=" + os.devnull,
    "core.pager=cat",
    "diff.external=",
    "core.sshCommand=false",
    "core.gitProxy=false",
    "credential.helper=",
    "safe.bareRepository=explicit",
    "protocol.allow=never",
    *(f"protocol.{name}.allow=never" for name in _PROTOCOLS),
)

_ENVIRONMENT = {
    "GIT_PAGER": "cat",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_EXTERNAL_DIFF": "",
    "GIT_ALLOW_PROTOCOL": "",
    "GIT_NO_LAZY_FETCH": "1",
    "GIT_ASKPASS": "false",
    "SSH_ASKPASS": "false",
    "GIT_SSH_COMMAND": "false",
}

_PROMISOR_KEYS = r"^(extensions\.partialclone|remote\..*\.promisor)$"


def changed_since(ref: str, paths: list[Path]) -> dict[Path, bytes]:
    """The `.py` files added or modified by the commits since the merge base of `ref` and
    HEAD, that still exist, under one of `paths` (the working directory when none), sorted,
    each with its contents at HEAD. UsageError when git is missing, this is not a repository,
    `ref` is not a commit, or the objects to compare are missing from a partial clone."""
    if not ref or ref.startswith("-"):
        raise UsageError(f"--diff-base: {ref!r} is not a git ref")
    where = _folder(paths[0] if paths else Path.cwd())
    top = Path(_git(where, "rev-parse", "--show-toplevel").strip())
    promisor = _promisor(top)
    try:
        return _committed(top, ref, [p.resolve() for p in paths] or [Path.cwd().resolve()])
    except UsageError as exc:
        if promisor is None:
            raise
        raise UsageError(
            f"--diff-base: {top} is a partial clone (promisor remote {promisor!r}) and the "
            "objects to compare are not all here; eagle3lint fetches nothing: fetch them "
            "yourself (`git fetch --refetch`, or a full clone) and run it again"
        ) from exc


def _committed(top: Path, ref: str, roots: list[Path]) -> dict[Path, bytes]:
    """`changed_since`'s answer, every object it reads read in here: in a partial clone, any
    of them may be missing (and git is not allowed to fetch it)."""
    commit = _git(top, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
    head = _git(top, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
    base = _git(top, "merge-base", "--end-of-options", commit.strip(), head.strip()).strip()
    listed = _git(
        top,
        "diff-tree",
        "-r",
        "-z",
        "--no-renames",
        "--no-ext-diff",
        "--no-textconv",
        "--diff-filter=AMT",
        base,
        head.strip(),
    )
    found: dict[Path, str] = {}
    # Raw records: ":<old mode> <new mode> <old id> <new id> <status>", then the path.
    fields = listed.split("\0")
    for record, name in zip(fields[::2], fields[1::2], strict=False):
        new_mode, new_id = record.split(" ")[1:4:2]
        path = top / name
        if not name.endswith(".py") or new_mode not in _FILE_MODES or not path.is_file():
            continue
        resolved = path.resolve()
        if any(resolved == root or resolved.is_relative_to(root) for root in roots):
            found[path] = new_id
    return {path: _blob(top, found[path]) for path in sorted(found)}


_FILE_MODES = ("100644", "100755")
"""The modes of a file's blob (a symbolic link's or a submodule's is not a file's contents)."""


def _blob(top: Path, object_id: str) -> bytes:
    """The bytes of a blob, as committed (no filter: `cat-file blob` runs none)."""
    if not all(c in "0123456789abcdef" for c in object_id):
        raise UsageError(f"--diff-base: git gave {object_id!r} for an object id")
    return _git(top, "cat-file", "blob", object_id, text=False)


def _folder(path: Path) -> Path:
    return path if path.is_dir() else path.parent


def _promisor(top: Path) -> str | None:
    """The remote a partial clone fetches missing objects from, else None."""
    said = _git(top, "config", "--null", "--get-regexp", _PROMISOR_KEYS, missing_ok=True)
    for entry in filter(None, said.split("\0")):
        key, _, value = entry.partition("\n")
        if key == "extensions.partialclone":
            return value
        if value.strip().lower() in ("true", "yes", "on", "1", ""):
            return key.removeprefix("remote.").removesuffix(".promisor")
    return None


@overload
def _git(cwd: Path, *args: str, missing_ok: bool = False) -> str: ...
@overload
def _git(cwd: Path, *args: str, text: Literal[False]) -> bytes: ...
def _git(cwd: Path, *args: str, missing_ok: bool = False, text: bool = True) -> str | bytes:
    """git's output (bytes unless `text`); with `missing_ok`, the empty string where git exits
    1 (a key not set)."""
    command = ["git", *(part for key in _OVERRIDES for part in ("-c", key)), *args]
    env = {**os.environ, **_ENVIRONMENT}
    try:
        result = subprocess.run(
            command,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=GIT_TIMEOUT,
            check=False,
        )
    except FileNotFoundError as exc:
        raise UsageError("--diff-base needs git, which is not installed") from exc
    except subprocess.TimeoutExpired as exc:
        raise UsageError(f"--diff-base: `git {args[0]}` took over {GIT_TIMEOUT} s") from exc
    except OSError as exc:
        raise UsageError(f"--diff-base: cannot run git: {exc.strerror or exc}") from exc
    if result.returncode == 1 and missing_ok:
        return ""
    if result.returncode != 0:
        said = result.stderr.decode("utf-8", "replace").strip().splitlines()
        why = said[-1] if said else f"`git {args[0]}` failed"
        if "safe.bareRepository" in why:
            why = (
                f"{cwd} is inside a bare repository that git would only use if named "
                "(safe.bareRepository=explicit): it may be one committed inside the checkout, "
                "so eagle3lint does not use it; run it from the checkout's work tree"
            )
        elif args[:2] == ("rev-parse", "--verify"):
            why = f"{args[-1].removesuffix('^{commit}')!r} is not a commit here"
        raise UsageError(f"--diff-base: {why}")
    return result.stdout.decode("utf-8", "surrogateescape") if text else result.stdout
