"""Whole-run results of `check`, reused while nothing they were computed from has changed.

A warm run over an unchanged tree would still rebuild hundreds of cached summaries and run
every rule; this answers, as ruff does from its cache, with the output the same command gave
before. An entry is keyed by everything the output depends on besides file contents: the
command's options and working directory, how the output is shown, the workspace the paths
resolved to, and the code of eagle3lint and of every rule plugin. It lists every file the run
read (module files, the contract's runner and config files, `--hf-config`, the baseline) with
the hash of the bytes it read, and every path it looked for a file at and did not find: if any
of them changed, the entry is not used (unless the change is whole comment or blank lines, in a
way that cannot change the output: `Manifest.settle`), but the summarised files among the
changed ones (after an edit, the edited file) start parsing at once, before the run reaches
them. Runs that reported input errors are never stored.

Finding that entry takes the options as the engine sees them (the configuration read, the
rule plugins loaded): a fifth of a second of start-up. `Guess` looks first, from the command
line alone, at the entry the same command line used last time, so that those parses start
before that; what it guesses decides nothing but what is parsed early.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from eagle3lint import __version__
from eagle3lint.cachedir import default_cache_dir, file_digest, touch, trusted_folder
from eagle3lint.checkrun.fingerprint import code_fingerprint
from eagle3lint.sources.files import (
    MAX_CACHE_ENTRY_BYTES,
    Stamp,
    UnreadableSource,
    read_regular,
    read_source_bytes,
    stamp_now,
    stamp_of,
)
from eagle3lint.storage import write_atomically
from eagle3lint.trust import make_folders

if TYPE_CHECKING:
    from eagle3lint.checkrun.options import CheckOptions
    from eagle3lint.engine import CheckRun
    from eagle3lint.index.parsing import ParsesAhead
    from eagle3lint.report.model import Report

FORMAT = 4

UNKEYED_OPTIONS = ("on_file", "progress", "jobs", "reuse_verdicts")
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
    from eagle3lint.checkrun.options import discover_for

    workspace = discover_for(options)
    cache = RunCache(default_cache_dir())
    setting = {k: v for k, v in vars(options).items() if k not in UNKEYED_OPTIONS}
    key = cache.key(os.getcwd(), shown, setting, vars(workspace), code_fingerprint())
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
        if found.stored is not None and found.settled:
            output, code, manifest = found.stored
            cache.store(key, output, code, manifest)  # the files as they are now
            return output, code
        from eagle3lint.engine import run_check

        run = run_check(options, workspace=workspace, ahead=found.take())
    finally:
        found.close()
    output, code = present(run.report)
    if not run.report.errors:
        repaired = sorted({str(edit.path.resolve()) for edit in run.plan.edits})
        manifest = Manifest(*run.index.inputs(), repaired=repaired)
        manifest.code_lines = _unquoted_code_lines(run, output, manifest)
        cache.store(key, output, code, manifest)
    return output, code


def _unquoted_code_lines(run: CheckRun, output: str, manifest: Manifest) -> dict[str, str]:
    """`code_lines_digest` of each summarised file given on the command line whose name
    neither the output nor any finding's message (shown or not: a baselined one is matched by
    its message) mentions: moving its lines cannot change the output. A pre-commit hook runs
    on the files it was given, and those are the files the next edit touches."""
    if not run.workspace.only_files:
        return {}
    from eagle3lint.report.locations import without_changed_names

    given = {str(path.resolve()) for path in run.workspace.files}
    # A note naming a file given that targets read quotes none of its lines.
    shown = without_changed_names(output)
    quoted = "\n".join([shown, *(finding.message for finding in run.every_finding)])
    digests = {}
    for path in manifest.summarised:
        data = run.index.source_bytes(path)
        if data is None or str(Path(path).resolve()) not in given or Path(path).name in quoted:
            continue
        digest = code_lines_digest(data)
        if digest is not None:
            digests[path] = digest
    return digests


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
        self.settled = False
        """Every changed input only gained or lost comment lines, in a way that leaves the
        output as it was (`Manifest.settle`)."""
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
        self.key = key
        self.stored = cache.load(key)
        if self.stored is None:
            return
        manifest = self.stored[2]
        self.changed = manifest.changed()
        self.settled = bool(self.changed) and manifest.settle(self.changed)
        if self.changed and not self.settled:
            # Imported only here: a run answered from the cache never loads libcst.
            from eagle3lint.index.cache import SummaryCache
            from eagle3lint.index.parsing import ParsesAhead

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


@dataclass
class Manifest:
    """The inputs of a run: path → digest of the bytes it read ("" when it only saw the file
    exist), the paths it found absent, path → path relative to its import root of the files
    it summarised, and path → the file's `Stamp` as it was read, where that tells a change."""

    present: dict[str, str] = field(default_factory=dict)
    absent: list[str] = field(default_factory=list)
    summarised: dict[str, str] = field(default_factory=dict)
    stamps: dict[str, Stamp] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)
    """path → how many bytes the run read of each file it summarised."""
    repaired: list[str] = field(default_factory=list)
    """The files `fix` would edit: a repair is planned on their bytes, comments included."""
    code_lines: dict[str, str] = field(default_factory=dict)
    """path → `code_lines_digest` of the files whose lines may move without changing the
    output (`_unquoted_code_lines`)."""

    def __post_init__(self) -> None:
        self._now: dict[str, bytes] = {}
        """The bytes `changed` read of the files it found changed (not stored)."""

    def settle(self, changed: list[str]) -> bool:
        """Whether every file of `changed` is a summarised one that only gained comment or
        blank lines after the bytes the run read (a comment added at the end of a model file,
        the commonest harmless edit), or gained or lost whole comment or blank lines anywhere
        where no line number of it can reach the output (`code_lines`), and so would give the
        same output: its code, every line a finding or a fingerprint quotes and every
        suppression are the ones the run read. If so the manifest takes the files as they are
        now."""
        now: dict[str, bytes] = {}
        for path in changed:
            size, digest = self.sizes.get(path), self.present.get(path)
            planned = str(Path(path).resolve()) in self.repaired
            data = self._now.get(path)
            if path not in self.summarised or planned or size is None or data is None:
                return False
            # The appended check first: it hashes a prefix, where the other tokenizes the file.
            if not _comments_appended(data, size, digest) and (
                path not in self.code_lines or code_lines_digest(data) != self.code_lines[path]
            ):
                return False
            now[path] = data
        read_at = time.time_ns()
        for path, data in now.items():
            self.present[path], self.sizes[path] = file_digest(data), len(data)
            try:
                stamp = stamp_of(os.stat(path), read_at)
            except OSError:
                stamp = None
            if stamp is None or stamp[0] != len(data):
                self.stamps.pop(path, None)
            else:
                self.stamps[path] = stamp
        return True

    def changed(self) -> list[str]:
        """The inputs no longer as the run found them (every one is looked at: those that were
        summarised are parsed ahead by the run that follows). A file whose stamp is the same
        is not read again."""
        changed = []
        self._now.clear()
        for path, digest in self.present.items():
            stamp = self.stamps.get(path)
            if stamp is not None and stamp_now(Path(path)) == stamp:
                continue
            try:
                if digest:
                    data = read_source_bytes(Path(path))
                    same = file_digest(data) == digest
                    if not same:
                        self._now[path] = data
                else:
                    same = os.path.exists(path)
            except UnreadableSource:
                same = False
            if not same:
                changed.append(path)
        return changed + [path for path in self.absent if os.path.lexists(path)]


def _comments_appended(data: bytes, size: int, digest: str) -> bool:
    """`data` is the `size` bytes of `digest`, whose last line ended, then only blank lines and
    comments that are not eagle3lint's (`# eagle3lint: ignore` may silence a finding)."""
    if len(data) < size or file_digest(data[:size]) != digest:
        return False
    if size and data[size - 1 : size] not in (b"\n", b"\r"):
        return False
    try:
        tail = data[size:].decode("utf-8")
    except UnicodeDecodeError:
        return False
    for line in tail.splitlines():
        text = line.strip()
        if (text and not text.startswith("#")) or "eagle3lint" in text:
            return False
    return True


def code_lines_digest(data: bytes) -> str | None:
    """A digest of `data`'s encoding and of its lines except blank and comment-only lines
    outside any token (a line inside a string is code); a comment naming eagle3lint (which may
    silence a finding) is kept. Two versions with the same digest differ only by whole comment
    or blank lines. None when `data` does not tokenize."""
    import io
    import tokenize

    layout = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}
    layout |= {tokenize.ENDMARKER, tokenize.ENCODING}
    code_rows: set[int] = set()
    try:
        tokens = list(tokenize.tokenize(io.BytesIO(data).readline))
    except (tokenize.TokenError, SyntaxError, UnicodeDecodeError):
        return None
    for token in tokens:
        if token.type not in layout:
            code_rows.update(range(token.start[0], token.end[0] + 1))
    # Lines as tokenize numbers them.
    lines = iter(io.BytesIO(data).readline, b"")
    kept = [tokens[0].string.encode()]  # the ENCODING token: how every other byte reads
    kept += [line for row, line in enumerate(lines, 1) if row in code_rows or b"eagle3lint" in line]
    return file_digest(b"\0".join(kept))


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
                {path: int(size) for path, size in dict(data["sizes"]).items()},
                [str(path) for path in data["repaired"]],
                {str(path): str(digest) for path, digest in dict(data["code_lines"]).items()},
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
        # The fields themselves, not `asdict`'s deep copy of them (a tenth of a cached hook run).
        fields = {name: getattr(manifest, name) for name in Manifest.__dataclass_fields__}
        entry = {"key": key, "output": output, "code": code, **fields}
        if not self.trusted:
            return
        try:
            make_folders(self.root)
            data = json.dumps(entry).encode()
            write_atomically(self.root / f"{key}.json", data, private=True, sync=False)
        except OSError:
            pass  # a cache that cannot be written only costs speed, never a result
