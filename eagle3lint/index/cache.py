"""Content-addressed cache of file summaries.

An entry is keyed by the file's content hash, the eagle3lint version and the summary format,
so an edited file, an upgraded tool or a changed extractor never reads a stale entry. Entries
are JSON written atomically (temp file + rename), so concurrent runs never see half an entry;
an entry that does not load and validate is ignored and rebuilt, never trusted.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from functools import cache
from pathlib import Path
from typing import TypeVar

from eagle3lint import __version__
from eagle3lint.cachedir import default_cache_dir as default_cache_dir  # re-exported
from eagle3lint.cachedir import file_digest as file_digest  # re-exported
from eagle3lint.cachedir import touch
from eagle3lint.cachedir import trusted_folder as trusted_folder  # re-exported
from eagle3lint.index.model import (
    SUMMARY_FORMAT,
    FileSummary,
    SummaryFormatError,
    from_json,
    to_json,
)
from eagle3lint.sources.files import MAX_CACHE_ENTRY_BYTES, UnreadableSource, read_regular
from eagle3lint.storage import write_atomically
from eagle3lint.trust import make_folders

T = TypeVar("T")


@cache
def extractor_fingerprint() -> str:
    """A hash of the code that builds cached entries (file summaries and the contract's config
    facts and drafter facts), so any change to it invalidates the cache."""
    digest = hashlib.blake2b(digest_size=12)
    package = Path(__file__).parent.parent
    for module in (
        "index/extract.py",
        "index/extract_classes.py",
        "index/extract_conditions.py",
        "index/extract_forward.py",
        "index/model.py",
        "index/locate.py",
        "index/modules.py",
        "index/skim.py",
        "engines/vllm/contract/config_files.py",
        "engines/vllm/contract/model.py",
        "engines/vllm/contract/drafter.py",
        "engines/vllm/contract/drafter_class.py",
        "engines/vllm/contract/method_choice.py",
        "sources/source_text.py",
        "engines/vllm/names.py",
        *sorted(f"shapes/{path.name}" for path in (package / "shapes").glob("*.py")),
    ):
        digest.update((package / module).read_bytes())
    return digest.hexdigest()


def content_key(data: bytes, relpath: str) -> str:
    """The cache key of a file: what it holds and where it sits (module names come from it)."""
    digest = hashlib.blake2b(digest_size=20)
    digest.update(
        # The interpreter's version: `sys.version_info` conditions are evaluated for it.
        f"{__version__}\0{SUMMARY_FORMAT}\0{extractor_fingerprint()}\0{relpath}\0"
        f"{sys.version_info[:2]}\0".encode()
    )
    digest.update(data)
    return digest.hexdigest()


class SummaryCache:
    """Summaries on disk under `<cache>/summaries/<key[:2]>/<key>.json`."""

    def __init__(self, root: Path) -> None:
        self.root = root / "summaries"
        self.trusted = trusted_folder(self.root)
        """False when another user could write here: then nothing is read or written."""

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def holds(self, key: str) -> bool:
        """Whether an entry is stored under `key` (it may still fail to load)."""
        return self.trusted and os.path.exists(self._path(key))

    def load(self, key: str, kind: type[T] = FileSummary) -> T | None:  # type: ignore[assignment]
        """The entry stored under `key`, rebuilt as `kind`; None when absent, not valid or not
        the user's own."""
        if not self.trusted:
            return None
        try:
            path = self._path(key)
            data = json.loads(read_regular(path, MAX_CACHE_ENTRY_BYTES, private=True))
            if not isinstance(data, dict) or data.get("key") != key:
                return None
            found = from_json(kind, data["summary"])
            touch(path)  # least-recently-used pruning (`cachedir`)
            return found
        except (
            UnreadableSource,
            ValueError,
            KeyError,
            TypeError,
            AttributeError,
            RecursionError,
            SummaryFormatError,
        ):
            return None

    def store(self, key: str, summary: object) -> None:
        path = self._path(key)
        if not self.trusted:
            return
        entry = {"key": key, "summary": to_json(summary)}
        try:
            make_folders(path.parent)
            data = json.dumps(entry, separators=(",", ":")).encode()
            write_atomically(path, data, private=True, sync=False)
        except OSError:
            pass  # a cache that cannot be written only costs speed, never a result
