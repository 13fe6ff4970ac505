"""Every error eagle3lint raises or reports, and the exit code each one ends a run with.

Exit codes follow ruff: 0 nothing blocks, 1 error findings, 2 a usage or input error (some input
was not analysed, so the verdict is incomplete). Exceptions are raised inside the tool and turned
into a message at the command line; `InputError` is what a run reports under `errors` (codes
EAG901-EAG903, documented in `eagle3lint.codes`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

EXIT_OK = 0
"""Nothing blocks (or --exit-zero)."""
EXIT_FINDINGS = 1
"""Some target has an error finding."""
EXIT_INPUT = 2
"""Bad usage, or some input could not be analysed."""

SYNTAX_ERROR = "EAG901"
"""A file that does not parse (or nests too deeply for the parser)."""
UNREADABLE_INPUT = "EAG902"
"""A path that is not there, or a file that cannot be read or decoded."""
INCOMPLETE_ANALYSIS = "EAG903"
"""Something eagle3lint could not finish: a plugin that failed, a rule that crashed."""


class UsageError(Exception):
    """Bad command-line input: exit code 2 with this message."""


class ConfigError(UsageError):
    """An invalid `[tool.eagle3lint]` table (exit code 2)."""


class DownloadError(Exception):
    """The release could not be fetched; the message says why and what to do (exit code 2)."""


class UntrustedCache(Exception):
    """A cache path another user could have written; the message says which and why."""


class UnsafeLock(OSError):
    """`fix`'s lock file is not one eagle3lint wrote (a hard link to a model file, which a tar
    archive can carry, a special file, a file holding other bytes): it is left alone and the
    run stops (exit code 2)."""


class UnusableCache(UntrustedCache):
    """A cache path that cannot be used at all: a file where a folder should be, or a folder
    that cannot be entered. Treated like an untrusted one (not used, one line on stderr)."""


class SummaryFormatError(ValueError):
    """Raised when JSON data does not have the shape of a summary (a corrupt or foreign cache)."""


class CodemodRefused(Exception):
    """A rewrite was declined because the source has a shape it cannot change safely.

    `reason` is a sentence for a human: what was expected, and what was found instead.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class UnreadableSource(Exception):
    """A file that cannot be analysed; the message says why, in words for the user."""

    code = UNREADABLE_INPUT
    """The input-error code it is reported under."""

    def __init__(
        self,
        message: str,
        path: Path | None = None,
        code: str | None = None,
        line: int | None = None,
    ) -> None:
        super().__init__(message)
        self.path = path
        """The file, when the reader knows it."""
        if code is not None:
            self.code = code
        self.line = line
        """The line at fault, when there is one (a syntax error)."""

    def __reduce__(
        self,
    ) -> tuple[type[UnreadableSource], tuple[str, Path | None, str, int | None]]:
        # Raised in worker processes too: the path must survive pickling.
        return type(self), (str(self), self.path, self.code, self.line)


class TooDeeplyNested(UnreadableSource):
    """A file the parser cannot take safely: reported like a syntax error."""

    code = SYNTAX_ERROR


class SourceSyntaxError(UnreadableSource):
    """A file that does not parse."""

    code = SYNTAX_ERROR


class SourceNotFound(UnreadableSource):
    """A file that is not there: callers probing for optional files tell it from one that is
    there but cannot be read."""


@dataclass(frozen=True, slots=True)
class InputError:
    """A file or input that could not be analysed (reported under `errors`, exit code 2)."""

    path: str
    message: str
    line: int | None = None
    code: str = SYNTAX_ERROR

    def to_json(self) -> dict[str, object]:
        return {"path": self.path, "line": self.line, "code": self.code, "message": self.message}
