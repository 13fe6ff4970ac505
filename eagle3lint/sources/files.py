"""Reading analysed source files safely: encodings, binary files and unreadable paths."""

from __future__ import annotations

import io
import tokenize
from pathlib import Path

MAX_FILE_BYTES = 16 * 1024 * 1024
"""Larger files are reported rather than parsed: no model file comes near it."""


class UnreadableSource(Exception):
    """A file that cannot be analysed; the message says why, in words for the user."""


def read_source_bytes(path: Path) -> bytes:
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise UnreadableSource(
                f"file is {size / 1e6:.1f} MB, over the {MAX_FILE_BYTES // 2**20} MiB limit"
            )
        return path.read_bytes()
    except UnreadableSource:
        raise
    except IsADirectoryError as exc:
        raise UnreadableSource("is a directory") from exc
    except PermissionError as exc:
        raise UnreadableSource("permission denied") from exc
    except OSError as exc:
        raise UnreadableSource(exc.strerror or str(exc)) from exc


def decode_source(data: bytes) -> str:
    """Text of a Python file, honouring a PEP 263 cookie and a UTF-8 BOM."""
    if b"\0" in data:
        raise UnreadableSource("binary file (contains NUL bytes)")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError) as exc:
        raise UnreadableSource(f"cannot decode: {exc}") from exc
    return text.removeprefix("\ufeff")


def read_source(path: Path) -> str:
    return decode_source(read_source_bytes(path))
