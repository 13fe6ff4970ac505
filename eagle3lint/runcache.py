"""Whole-run results of `check`, reused while nothing they were computed from has changed.

A warm run over an unchanged tree would still rebuild hundreds of cached summaries and run
every rule; this answers, as ruff does from its cache, with the output the same command gave
before. An entry is keyed by everything the output depends on besides file contents: the
command's options and working directory, how the output is shown, the workspace the paths
resolved to, and the code of eagle3lint and of every rule plugin. It lists every file the run
read (module files, the contract's runner and config files, `--hf-config`, the baseline) with
the hash of the bytes it read, and every path it looked for a file at and did not find: if any
of them changed, the entry is not used. Runs that reported input errors are never stored.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from eagle3lint import __version__
from eagle3lint.cachedir import touch
from eagle3lint.index.cache import default_cache_dir, file_digest, trusted_folder
from eagle3lint.rule import Rule, load_plugins
from eagle3lint.sources.files import (
    MAX_CACHE_ENTRY_BYTES,
    UnreadableSource,
    read_regular,
    read_source_bytes,
)
from eagle3lint.storage import write_atomically
from eagle3lint.trust import make_folders

if TYPE_CHECKING:
    from eagle3lint.engine import CheckOptions
    from eagle3lint.report.model import Report

FORMAT = 1

UNKEYED_OPTIONS = ("on_file", "progress", "jobs")
"""Options that change how a run goes, never what it outputs."""


def cached_check(
    options: CheckOptions, shown: object, present: Callable[[Report], tuple[str, int]]
) -> tuple[str, int]:
    """`present(report)` (the output and exit code) of the check `options` ask for, answered
    from the cache when an entry for the same command, `shown` the same way (everything that
    changes the bytes of the output), finds every file the run read unchanged."""
    from eagle3lint.engine import discover_for, run_check

    workspace = discover_for(options)
    cache = RunCache(default_cache_dir())
    setting = {k: v for k, v in vars(options).items() if k not in UNKEYED_OPTIONS}
    key = cache.key(
        os.getcwd(), shown, setting, vars(workspace), code_fingerprint(load_plugins()[0])
    )
    hit = cache.load(key)
    if hit is not None:
        return hit
    run = run_check(options, workspace=workspace)
    output, code = present(run.report)
    if not run.report.errors:
        cache.store(key, output, code, Manifest(*run.index.inputs()))
    return output, code


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
