"""The Python files a branch changed since a git ref (`check --diff-base REF`), for CI on pull
requests: the changes committed since the merge base of REF and HEAD.

This is the one place eagle3lint runs git, and the repository it runs in may be hostile (a
pull request's checkout, or a repository committed inside one). Only plumbing commands that
compare commits are run (`rev-parse`, `merge-base`, `diff-tree`, and `config` to read two keys):
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


def changed_since(ref: str, paths: list[Path]) -> list[Path]:
    """The `.py` files added or modified by the commits since the merge base of `ref` and
    HEAD, that still exist, under one of `paths` (the working directory when none), sorted.
    UsageError when git is missing, this is not a repository, `ref` is not a commit, or the
    objects to compare are missing from a partial clone."""
    if not ref or ref.startswith("-"):
        raise UsageError(f"--diff-base: {ref!r} is not a git ref")
    where = _folder(paths[0] if paths else Path.cwd())
    top = Path(_git(where, "rev-parse", "--show-toplevel").strip())
    promisor = _promisor(top)
    try:
        commit = _git(
            top, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"
        )
        head = _git(top, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
        base = _git(top, "merge-base", "--end-of-options", commit.strip(), head.strip()).strip()
        listed = _git(
            top,
            "diff-tree",
            "-r",
            "-z",
            "--name-only",
            "--no-renames",
            "--no-ext-diff",
            "--no-textconv",
            "--diff-filter=AMT",
            base,
            head.strip(),
        )
    except UsageError as exc:
        if promisor is None:
            raise
        raise UsageError(
            f"--diff-base: {top} is a partial clone (promisor remote {promisor!r}) and the "
            "objects to compare are not all here; eagle3lint fetches nothing: fetch them "
            "yourself (`git fetch --refetch`, or a full clone) and run it again"
        ) from exc
    roots = [p.resolve() for p in paths] or [Path.cwd().resolve()]
    found = []
    for name in filter(None, listed.split("\0")):
        path = top / name
        if not name.endswith(".py") or not path.is_file():
            continue
        resolved = path.resolve()
        if any(resolved == root or resolved.is_relative_to(root) for root in roots):
            found.append(path)
    return sorted(found)


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


def _git(cwd: Path, *args: str, missing_ok: bool = False) -> str:
    """git's output; with `missing_ok`, the empty string where git exits 1 (a key not set)."""
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
    return result.stdout.decode("utf-8", "surrogateescape")
