"""A finding's identity that survives edits elsewhere in its file: code, file, message (line
numbers it quotes blanked) and the text of the line it points at, not the line number. The
baseline matches findings by it and SARIF carries it as `partialFingerprints`, so code
scanning follows a finding across commits that shift its line."""

from __future__ import annotations

import hashlib
import os
import re
from functools import lru_cache
from pathlib import Path

from eagle3lint.findings import Finding
from eagle3lint.sources.files import UnreadableSource, read_source_bytes

VERSION = "eagle3lint/v1"
"""The `partialFingerprints` key: a new scheme gets a new key."""

_LINE_NUMBERS = re.compile(r"(?<=:)\d+|(?<=line )\d+")


@lru_cache(maxsize=256)
def _lines(path: str, stamp: tuple[int, int]) -> tuple[str, ...]:
    """The file's lines; `stamp` (mtime, size) keeps an edited file from being answered stale."""
    try:
        text = read_source_bytes(Path(path)).decode("utf-8", "replace")
    except UnreadableSource:  # replaced by a FIFO or a larger file since it was analysed
        return ()
    return tuple(text.splitlines())


def source_line(path: str, line: int) -> str:
    """The stripped text of line `line` (1-based) of `path`; empty when unreadable."""
    try:
        stat = os.stat(path)
    except OSError:
        return ""
    lines = _lines(path, (stat.st_mtime_ns, stat.st_size))
    return lines[line - 1].strip() if 0 < line <= len(lines) else ""


def portable(message: str, root: Path) -> str:
    """`message` with the paths under `root` it quotes (a proposer's file and line) relative
    to it: the same finding says the same in every clone."""
    for folder in dict.fromkeys((str(root.absolute()), str(root.resolve()))):
        message = message.replace(folder.rstrip(os.sep) + os.sep, "")
    return message


def fingerprint(finding: Finding, root: Path | None = None) -> str:
    """A hex digest of repository-relative facts; paths, the finding's and those its message
    quotes, are taken relative to `root` (default: the working directory)."""
    base = root or Path.cwd()
    try:
        where = Path(os.path.relpath(Path(finding.path).absolute(), base)).as_posix()
    except ValueError:  # another drive
        where = Path(finding.path).as_posix()
    parts = (
        finding.code,
        where,
        _LINE_NUMBERS.sub("#", portable(finding.message, base)),
        source_line(finding.path, finding.line),
    )
    return hashlib.blake2b("\0".join(parts).encode(), digest_size=16).hexdigest()
