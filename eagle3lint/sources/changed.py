"""The Python files a branch changed since a git ref (`check --diff-base REF`), for CI on pull
requests: the changes committed since the merge base of REF and HEAD.

This is the one place eagle3lint runs git, and the repository it runs in may be hostile (a
pull request's checkout). Only plumbing commands that compare commits are run (`rev-parse`,
`merge-base`, `diff-tree`): they never refresh the index or read the working tree, so a
repository's `core.fsmonitor`, clean/smudge filters, textconv and external diff drivers, all of
which run commands, have nothing to run for; those keys are overridden on the command line all
the same, and the user's pager and editor are never started (no terminal, `GIT_PAGER=cat`). A
ref is passed after `--end-of-options`, so a ref such as `--output=x` is a ref, not an option.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from eagle3lint.errors import UsageError

GIT_TIMEOUT = 60
"""Seconds for one git command: a comparison of two commits takes well under one."""

_OVERRIDES = (
    "core.fsmonitor=false",
    "core.hooksPath=" + os.devnull,
    "core.pager=cat",
    "diff.external=",
    "core.sshCommand=false",
    "protocol.allow=never",
)


def changed_since(ref: str, paths: list[Path]) -> list[Path]:
    """The `.py` files added or modified by the commits since the merge base of `ref` and
    HEAD, that still exist, under one of `paths` (the working directory when none), sorted.
    UsageError when git is missing, this is not a repository or `ref` is not a commit."""
    if not ref or ref.startswith("-"):
        raise UsageError(f"--diff-base: {ref!r} is not a git ref")
    where = _folder(paths[0] if paths else Path.cwd())
    top = Path(_git(where, "rev-parse", "--show-toplevel").strip())
    commit = _git(top, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
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


def _git(cwd: Path, *args: str) -> str:
    command = ["git", *(part for key in _OVERRIDES for part in ("-c", key)), *args]
    env = {
        **os.environ,
        "GIT_PAGER": "cat",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_OPTIONAL_LOCKS": "0",
        "GIT_EXTERNAL_DIFF": "",
    }
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
    if result.returncode != 0:
        said = result.stderr.decode("utf-8", "replace").strip().splitlines()
        why = said[-1] if said else f"`git {args[0]}` failed"
        if args[:2] == ("rev-parse", "--verify"):
            why = f"{args[-1].removesuffix('^{commit}')!r} is not a commit here"
        raise UsageError(f"--diff-base: {why}")
    return result.stdout.decode("utf-8", "surrogateescape")
