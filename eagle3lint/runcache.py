"""Whole-run results of `check`, reused while nothing they were computed from has changed.

A warm run over an unchanged tree would still rebuild hundreds of cached summaries and run
every rule; this answers, as ruff does from its cache, with the output the same command gave
before. An entry is keyed by everything the output depends on besides file contents: the
command's options and working directory, the workspace the paths resolved to, and the code of
eagle3lint and of every rule plugin. It lists every file the run read with its content hash,
and every path the run looked for a module at and did not find: if any of them changed, the
entry is not used. Runs that reported input errors are never stored.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path

from eagle3lint import __version__
from eagle3lint.cachedir import touch
from eagle3lint.index.cache import file_digest, trusted_folder
from eagle3lint.rule import Rule
from eagle3lint.sources.files import (
    MAX_CACHE_ENTRY_BYTES,
    SourceNotFound,
    UnreadableSource,
    read_regular,
    read_source_bytes,
)
from eagle3lint.storage import write_atomically
from eagle3lint.trust import make_folders

FORMAT = 1


@cache
def code_fingerprint(rules: tuple[type[Rule], ...]) -> str:
    """A hash of eagle3lint's own sources and of the modules the rule classes come from."""
    package = Path(__file__).parent
    files = sorted(package.rglob("*.py"))
    files += sorted({Path(inspect.getfile(rule)) for rule in rules})
    digest = hashlib.blake2b(digest_size=16)
    for path in files:
        digest.update(str(path).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


@dataclass
class Manifest:
    """The inputs of a run: path → digest of the bytes it read ("" when it only saw the file
    exist), and the paths it found absent."""

    present: dict[str, str] = field(default_factory=dict)
    absent: list[str] = field(default_factory=list)

    @classmethod
    def of(
        cls, index_inputs: tuple[dict[str, str], list[Path]], before: dict[str, str | None]
    ) -> Manifest:
        """The index's inputs plus `before`: files read outside the index (the contract's),
        snapshotted before the run so an edit during it can only make the entry stale."""
        present, absent = index_inputs
        manifest = cls(dict(present), sorted({str(p) for p in absent}))
        for path, digest in before.items():
            if digest is None:
                manifest.absent.append(path)
            else:
                manifest.present.setdefault(path, digest)
        return manifest

    @staticmethod
    def snapshot(paths: Iterable[Path]) -> dict[str, str | None]:
        """Digest of each file now, None for those that do not exist."""
        found: dict[str, str | None] = {}
        for path in paths:
            try:
                found[str(path)] = file_digest(read_source_bytes(path))
            except SourceNotFound:
                found[str(path)] = None
            except UnreadableSource:
                found[str(path)] = ""
        return found

    def unchanged(self) -> bool:
        for path, digest in self.present.items():
            try:
                if digest and file_digest(read_source_bytes(Path(path))) != digest:
                    return False
                if not digest and not os.path.exists(path):
                    return False
            except UnreadableSource:
                return False
        return not any(os.path.lexists(path) for path in self.absent)


class RunCache:
    """Entries under `<cache>/runs/<key>.json`."""

    def __init__(self, root: Path) -> None:
        self.root = root / "runs"
        self.trusted = trusted_folder(self.root)
        """False when another user could write here: then nothing is read or written."""

    @staticmethod
    def key(*parts: object) -> str:
        text = json.dumps([__version__, FORMAT, *parts], sort_keys=True, default=str)
        return file_digest(text.encode())

    def load(self, key: str) -> tuple[str, int] | None:
        """The cached output and exit code, if the entry exists, is the user's own (anyone else
        could forge an all-clear) and its inputs are unchanged."""
        if not self.trusted:
            return None
        try:
            entry = self.root / f"{key}.json"
            data = json.loads(read_regular(entry, MAX_CACHE_ENTRY_BYTES, private=True))
            if not isinstance(data, dict) or data.get("key") != key:
                return None
            manifest = Manifest(dict(data["present"]), list(data["absent"]))
            output, code = data["output"], data["code"]
        except (UnreadableSource, ValueError, KeyError, TypeError, RecursionError):
            return None
        if not isinstance(output, str) or code not in (0, 1) or not manifest.unchanged():
            return None
        touch(entry)  # least-recently-used pruning (`cachedir`)
        return output, code

    def store(self, key: str, output: str, code: int, manifest: Manifest) -> None:
        entry = {"key": key, "output": output, "code": code, **asdict(manifest)}
        if not self.trusted:
            return
        try:
            make_folders(self.root)
            write_atomically(self.root / f"{key}.json", json.dumps(entry).encode(), private=True)
        except OSError:
            pass  # a cache that cannot be written only costs speed, never a result
