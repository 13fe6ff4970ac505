"""The command line a report came from, as the text report's "Next:" block repeats it. Apart
from the renderer (which loads rich) so that building it costs a cached hook run nothing."""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Arguments:
    """A command's arguments as the user's shell passed them (unquoted)."""

    options: tuple[str, ...]
    paths: tuple[str, ...]

    def words(self, *more: str) -> list[str]:
        """The PATHs, then the options and `more`; options first when a PATH starts with `-`,
        and `--` to end them (nothing after it is read as an option, `--diff` neither)."""
        if any(path.startswith("-") for path in self.paths):
            return [*self.options, *more, "--", *self.paths]
        return [*self.paths, *self.options, *more]


@dataclass(frozen=True)
class Invocation:
    """The command line a report came from, as the commands of its "Next:" block repeat it."""

    check: Arguments
    """What follows `eagle3lint check` to run the same check again."""
    fix: Arguments
    """What follows `eagle3lint fix` to repair what this check found."""
    release: str | None = None
    """The version of a release checked from the cache alone (`--vllm X`, no PATH): `fix`
    only shows a patch for it (it refuses to edit the cache)."""


def relative(path: str) -> str:
    """Paths under the working directory are shown relative to it, others in full (as they
    are: each format escapes them its own way)."""
    cwd = os.getcwd()
    return os.path.relpath(path, cwd) if path.startswith(cwd + os.sep) else path
