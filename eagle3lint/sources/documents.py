"""Parsing the JSON and TOML inputs (configs, baselines, checkpoint indexes and headers): the one
place where what Python's parsers raise on hostile documents becomes a named error.

Besides syntax errors, `json` and `tomllib` raise `ValueError` on an integer of more than
`sys.get_int_max_str_digits()` digits (4,300 by default) and `RecursionError` on deep nesting;
uncaught, either would end a run as an internal error.
"""

from __future__ import annotations

import json
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from eagle3lint.sources.files import MAX_CONFIG_BYTES, UnreadableSource, read_regular

T = TypeVar("T")


def parse_json(data: bytes) -> Any:
    """The JSON document `data` (UTF-8); UnreadableSource saying why it is not one."""
    return _parse(data, json.loads, "JSON", json.JSONDecodeError)


def parse_toml(data: bytes) -> dict[str, Any]:
    """The TOML document `data`; UnreadableSource saying why it is not one."""
    return _parse(data, tomllib.loads, "TOML", tomllib.TOMLDecodeError)


def read_json(path: Path, what: str, limit: int = MAX_CONFIG_BYTES) -> Any:
    """The JSON document in the regular file at `path` (see `read_regular`), at most `limit`
    bytes; UnreadableSource (SourceNotFound when there is no file) naming `path`."""
    return _with_path(path, lambda: parse_json(read_regular(path, limit, what)))


def read_toml(path: Path, what: str, limit: int = MAX_CONFIG_BYTES) -> dict[str, Any]:
    """`read_json` for a TOML document."""
    return _with_path(path, lambda: parse_toml(read_regular(path, limit, what)))


def _parse(data: bytes, parse: Callable[[str], T], kind: str, syntax_error: type[ValueError]) -> T:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        # Not `exc` itself: it quotes the offending byte, and the file may not be the user's.
        raise UnreadableSource(f"is not {kind}: not UTF-8 text") from exc
    try:
        return parse(text)
    except syntax_error as exc:  # the messages give a line and column, never the text
        raise UnreadableSource(f"is not valid {kind} ({exc})") from exc
    except ValueError as exc:
        if "integer string conversion" not in str(exc):
            raise UnreadableSource(f"is not valid {kind} ({exc})") from exc
        limit = sys.get_int_max_str_digits()
        raise UnreadableSource(f"holds an integer of more than {limit:,} digits") from exc
    except RecursionError as exc:
        raise UnreadableSource("nests too deeply to read") from exc


def _with_path(path: Path, read: Callable[[], T]) -> T:
    try:
        return read()
    except UnreadableSource as exc:
        exc.path = path
        raise
