"""Whole-run results of `check`, reused while nothing they were computed from has changed.

A warm run over an unchanged tree would still rebuild hundreds of cached summaries and run
every rule; this answers, as ruff does from its cache, with the output the same command gave
before. An entry is keyed by everything the output depends on besides file contents: the
command's options and working directory, how the output is shown, the workspace the paths
resolved to, and the code of eagle3lint and of every rule plugin. It lists every file the run
read (module files, the contract's runner and config files, `--hf-config`, the baseline) with
the hash of the bytes it read, and every path it looked for a file at and did not find: if any
of them changed, the entry is not used, but the summarised files among the changed ones (after
an edit, the edited file) start parsing at once, before the run reaches them. Runs that
reported input errors are never stored.

Finding that entry takes the options as the engine sees them (the configuration read, the
rule plugins loaded): a fifth of a second of start-up. `Guess` looks first, from the command
line alone, at the entry the same command line used last time, so that those parses start
before that; what it guesses decides nothing but what is parsed early.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from eagle3lint import __version__
from eagle3lint.cachedir import touch
from eagle3lint.index.cache import default_cache_dir, file_digest, trusted_folder
from eagle3lint.sources.files import (
    MAX_CACHE_ENTRY_BYTES,
    Stamp,
    UnreadableSource,
    read_regular,
    read_source_bytes,
    stamp_now,
)
from eagle3lint.storage import write_atomically
from eagle3lint.trust import make_folders

if TYPE_CHECKING:
    from eagle3lint.engine import CheckOptions
    from eagle3lint.index.parsing import ParsesAhead
    from eagle3lint.report.model import Report
    from eagle3lint.rule import Rule

FORMAT = 2

UNKEYED_OPTIONS = ("on_file", "progress", "jobs")
"""Options that change how a run goes, never what it outputs."""


def cached_check(
    options: CheckOptions,
    shown: object,
    present: Callable[[Report], tuple[str, int]],
    guess: Guess | None = None,
) -> tuple[str, int]:
    """`present(report)` (the output and exit code) of the check `options` ask for, answered
    from the cache when an entry for the same command, `shown` the same way (everything that
    changes the bytes of the output), finds every file the run read unchanged. `guess`: the
    one `Guess.start` made from the command line (its workers are the caller's to close)."""
    from eagle3lint.engine import discover_for, run_check
    from eagle3lint.rule import load_plugins

    workspace = discover_for(options)
    cache = RunCache(default_cache_dir())
    setting = {k: v for k, v in vars(options).items() if k not in UNKEYED_OPTIONS}
    key = cache.key(
        os.getcwd(), shown, setting, vars(workspace), code_fingerprint(load_plugins()[0])
    )
    if guess is not None:
        cache.remember(guess.command_line, key)
    if guess is not None and guess.key == key:
        found = guess
    else:
        # Another entry: the guess's parses are still of the files as they are now, and a run
        # uses one only for the bytes it reads.
        found = Guess(None, guess.take() if guess is not None else None)
    try:
        if found.key is None:
            found.look(cache, key, options.jobs)
        if found.stored is not None and not found.changed:
            cache.touch(key)
            return found.stored[0], found.stored[1]
        run = run_check(options, workspace=workspace, ahead=found.take())
    finally:
        found.close()
    output, code = present(run.report)
    if not run.report.errors:
        cache.store(key, output, code, Manifest(*run.index.inputs()))
    return output, code


class Guess:
    """A run cache entry looked at early, and the parses its changed files started.

    `start` finds the entry from the command line alone (`RunCache.remember` notes which entry
    each command line used last), before the options are read, so that the files it names
    that have changed start parsing while this process starts up. `cached_check` uses it only
    if the options lead to the same entry."""

    def __init__(self, command_line: object, ahead: ParsesAhead | None = None) -> None:
        self.command_line = command_line
        self.key: str | None = None
        self.stored: tuple[str, int, Manifest] | None = None
        self.changed: list[str] = []
        """The entry's inputs that are no longer as its run found them."""
        self._ahead = ahead

    @classmethod
    def start(cls, command_line: object, jobs: int | None) -> Guess:
        """The guess for a check run by `command_line` (everything the command line says)."""
        guess = cls(command_line)
        cache = RunCache(default_cache_dir())
        key = cache.recall(command_line)
        if key is not None:
            guess.look(cache, key, jobs)
        return guess

    def look(self, cache: RunCache, key: str, jobs: int | None) -> None:
        """Load the entry stored under `key`, find its changed inputs and start parsing the
        summarised ones."""
        from eagle3lint.index.cache import SummaryCache
        from eagle3lint.index.parsing import ParsesAhead

        self.key = key
        self.stored = cache.load(key)
        if self.stored is None:
            return
        manifest = self.stored[2]
        self.changed = manifest.changed()
        if self.changed:
            if self._ahead is None:
                self._ahead = ParsesAhead(SummaryCache(default_cache_dir()), jobs)
            summarised = manifest.summarised
            self._ahead.start({p: summarised[p] for p in self.changed if p in summarised})

    def take(self) -> ParsesAhead | None:
        """The parses started, handed over to the run that will use them."""
        ahead, self._ahead = self._ahead, None
        return ahead

    def close(self) -> None:
        """Stop the workers of parses nobody took over."""
        if self._ahead is not None:
            self._ahead.close()
            self._ahead = None


@cache
def code_fingerprint(rules: tuple[type[Rule], ...]) -> str:
    """A hash of eagle3lint's own sources, of the modules the rule classes come from and of
    the modules of those packages they import (a built-in rule's `rules/_<rule>_*.py`, outside
    the package folder in a checkout)."""
    package = Path(__file__).parent
    files = sorted(package.rglob("*.py"))
    homes = {rule.__module__.rpartition(".")[0] for rule in rules} - {""}
    helpers = {
        Path(module.__file__)
        for name, module in list(sys.modules.items())
        if name.rpartition(".")[0] in homes and getattr(module, "__file__", None)
    }
    files += sorted({Path(inspect.getfile(rule)) for rule in rules} | helpers)
    digest = hashlib.blake2b(digest_size=16)
    for path in files:
        digest.update(str(path).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


@dataclass
class Manifest:
    """The inputs of a run: path → digest of the bytes it read ("" when it only saw the file
    exist), the paths it found absent, path → path relative to its import root of the files
    it summarised, and path → the file's `Stamp` as it was read, where that tells a change."""

    present: dict[str, str] = field(default_factory=dict)
    absent: list[str] = field(default_factory=list)
    summarised: dict[str, str] = field(default_factory=dict)
    stamps: dict[str, Stamp] = field(default_factory=dict)

    def changed(self) -> list[str]:
        """The inputs no longer as the run found them (every one is looked at: those that were
        summarised are parsed ahead by the run that follows). A file whose stamp is the same
        is not read again."""
        changed = []
        for path, digest in self.present.items():
            stamp = self.stamps.get(path)
            if stamp is not None and stamp_now(Path(path)) == stamp:
                continue
            try:
                same = (
                    file_digest(read_source_bytes(Path(path))) == digest
                    if digest
                    else os.path.exists(path)
                )
            except UnreadableSource:
                same = False
            if not same:
                changed.append(path)
        return changed + [path for path in self.absent if os.path.lexists(path)]


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

    def _note(self, command_line: object) -> Path:
        return self.root / "last" / f"{self.key(os.getcwd(), command_line)}.key"

    def recall(self, command_line: object) -> str | None:
        """The key of the entry `command_line` (in this working directory) used last time."""
        if not self.trusted:
            return None
        try:
            key = read_regular(self._note(command_line), 64, private=True).decode("ascii")
        except (UnreadableSource, UnicodeDecodeError):
            return None
        return key if len(key) == 32 and all(c in "0123456789abcdef" for c in key) else None

    def remember(self, command_line: object, key: str) -> None:
        """Note that `command_line` used the entry `key` (a few bytes per command line)."""
        if not self.trusted or self.recall(command_line) == key:
            return
        note = self._note(command_line)
        try:
            make_folders(note.parent)
            write_atomically(note, key.encode("ascii"), private=True, sync=False)
        except OSError:
            pass  # only the next run's head start is lost

    def load(self, key: str) -> tuple[str, int, Manifest] | None:
        """The cached output and exit code, with the inputs they were computed from, if the
        entry exists and is the user's own (anyone else could forge an all-clear)."""
        if not self.trusted:
            return None
        try:
            entry = self.root / f"{key}.json"
            data = json.loads(read_regular(entry, MAX_CACHE_ENTRY_BYTES, private=True))
            if not isinstance(data, dict) or data.get("key") != key:
                return None
            manifest = Manifest(
                dict(data["present"]),
                list(data["absent"]),
                dict(data["summarised"]),
                {path: tuple(stamp) for path, stamp in dict(data["stamps"]).items()},
            )
            output, code = data["output"], data["code"]
        except (UnreadableSource, ValueError, KeyError, TypeError, RecursionError):
            return None
        if not isinstance(output, str) or code not in (0, 1):
            return None
        return output, code, manifest

    def touch(self, key: str) -> None:
        """Mark an entry used (least-recently-used pruning, `cachedir`)."""
        touch(self.root / f"{key}.json")

    def store(self, key: str, output: str, code: int, manifest: Manifest) -> None:
        entry = {"key": key, "output": output, "code": code, **asdict(manifest)}
        if not self.trusted:
            return
        try:
            make_folders(self.root)
            data = json.dumps(entry).encode()
            write_atomically(self.root / f"{key}.json", data, private=True, sync=False)
        except OSError:
            pass  # a cache that cannot be written only costs speed, never a result
