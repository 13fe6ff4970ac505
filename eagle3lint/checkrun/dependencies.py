"""Which targets a change can alter: each target's reads (`index.reads`), recorded when it is
judged and kept in the cache beside the summaries, so that a run over changed files judges
exactly the targets that read one of them, wherever the file is (a model file, or a contract
file such as `interfaces.py` that every target reads).

A record holds the reads the run shared by every target (the contract, the registry,
`--hf-config`), each target's own reads (with what its share of the run's loads read), and what
each name read was (its file and the digest of its bytes). A later run over changed files
judges a target when its record says it read one of them, when anything it read is no longer as
recorded (its reads may have changed too), or when there is no record of it; every other
target's verdict is what it was, and those files being unchanged it cannot involve them. Among
the targets judged, the report keeps those that read a changed file: without a record
(`--no-cache`, the first run) every target is judged and the same ones are kept, so the record
changes how long a run takes, never what it reports. A whole-tree run judges likewise the
targets whose reads changed, and takes every other one's verdict from the last run
(`checkrun.verdicts`).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from eagle3lint import __version__
from eagle3lint.cachedir import default_cache_dir, file_digest, trusted_folder
from eagle3lint.checkrun.fingerprint import code_fingerprint
from eagle3lint.checkrun.options import CheckOptions
from eagle3lint.engines import Target
from eagle3lint.index.project import ProjectIndex
from eagle3lint.sources.discovery import Workspace
from eagle3lint.sources.files import (
    MAX_CACHE_ENTRY_BYTES,
    UnreadableSource,
    read_regular,
    read_source_bytes,
    stamp_now,
)
from eagle3lint.storage import write_atomically
from eagle3lint.trust import make_folders

if TYPE_CHECKING:
    from eagle3lint.checkrun.verdicts import Judged, Verdicts

FORMAT = 1

State = tuple[str | None, str]
"""What a run found of a name it read: its file (None: absent) and the digest of the bytes it
read ("" when it only saw the file exist, or could not read it)."""


@dataclass
class Record:
    """The reads of one tree's targets under one set of options, and what each name was."""

    shared: list[str] = field(default_factory=list)
    targets: dict[str, list[str]] = field(default_factory=dict)
    states: dict[str, State] = field(default_factory=dict)
    stamps: dict[str, list[int]] = field(default_factory=dict)
    """path → the file's `Stamp` when it was read: an unchanged stamp spares reading it."""


class Dependencies:
    """One run's reads, and the record that decides which targets it judges."""

    def __init__(
        self,
        index: ProjectIndex,
        changed: list[Path] | None,
        record: Record | None,
        verdicts: Verdicts | None = None,
    ) -> None:
        self.index = index
        self.shared: set[str] = set()
        self.reads: dict[str, set[str]] = {}
        """target key → the names its construction and judgment read."""
        self.reached: dict[str, set[str]] = {}
        """target key → the names its share of the run's loads read (the files its class
        reaches, `ProjectIndex.preload_closure`), which its verdict may not read: they decide
        what a whole-tree run loads, and so its count of files and its input errors."""
        self.changed: dict[str, Path] | None = None
        """With changed files, each name that means one of them (its module, its path) → it."""
        if changed is not None:
            self.changed = {}
            for path in changed:
                module = index.module_of(path)
                if module is not None:
                    self.changed[module] = path
                self.changed[str(path.resolve())] = path
        self._record = record
        self._verdicts = verdicts
        """A whole-tree run's kept verdicts (`checkrun.verdicts`): None, every target judged."""
        self.reused: dict[str, list[Judged]] = {}
        """target key → its targets as the kept verdicts give them, in a whole-tree run."""
        self._now: dict[str, bool] = {}
        """name → whether it is still as the record says (looked at once)."""
        self._meant: dict[str, Path | None] = {}
        self._shared_touched: bool | None = None

    def wanted(self, key: str) -> bool:
        """Whether the target `key` must be judged in this run: in a whole-tree run, unless
        its verdict is kept and what it read unchanged (then it is in `reused`)."""
        record = self._record
        if record is None or (self.changed is None and self._verdicts is None):
            return True
        if self._shared_touched is None:
            self._shared_touched = self._touched(record.shared)
        if self._shared_touched or key not in record.targets:
            return True
        if self._touched(record.targets[key]):
            return True
        if self._verdicts is None:
            return False
        judged = self._verdicts.take(key, record, self.index)
        if judged is None:
            return True
        self.reused[key] = judged
        for name in record.targets[key]:
            path, digest = record.states.get(name, (None, ""))
            stamp = record.stamps.get(path) if path is not None else None
            self.index.adopt(name, not _is_path(name), path, digest, stamp)
        return False

    def _touched(self, names: Iterable[str]) -> bool:
        """Some name is a changed file, or is no longer what the record says."""
        for name in names:
            if self._means_changed(name) is not None:
                return True
            same = self._now.get(name)
            if same is None:
                same = self._now[name] = self._still(name)
            if not same:
                return True
        return False

    def _still(self, name: str) -> bool:
        assert self._record is not None
        path, digest = self._record.states.get(name, (None, ""))
        if _is_path(name):
            now = name if os.path.lexists(name) else None
        else:
            source = self.index.source_file(name)
            now = str(source.path) if source is not None else None
        if now != path:
            return False
        if path is None or not digest:
            return True
        stamp = self._record.stamps.get(path)
        if stamp is not None and list(stamp_now(Path(path)) or ()) == stamp:
            return True
        try:
            return file_digest(read_source_bytes(Path(path))) == digest
        except UnreadableSource:
            return False

    def _means_changed(self, name: str) -> Path | None:
        if self.changed is None:
            return None
        if name not in self._meant:
            found = self.changed.get(name)
            if found is None and _is_path(name):
                found = self.changed.get(str(Path(name).resolve()))
            self._meant[name] = found
        return self._meant[name]

    def caused_by(self, key: str) -> list[Path]:
        """The changed files the target `key` read (all of them: shared reads included)."""
        names = self.shared | self.reads.get(key, set())
        return sorted({p for name in names if (p := self._means_changed(name)) is not None})

    def files_read(self, targets: list[Target]) -> int:
        """How many summarised files `targets` read, shared reads included: what a run over
        changed files analysed, however much of it a record spared."""
        names = self.shared.union(*(self.reads.get(target_key(t), ()) for t in targets))
        summarised = {self.index.state(n) for n in names if not _is_path(n)}
        return sum(1 for path, digest in summarised if path is not None and digest)

    def record(self) -> Record:
        """This run's record: the targets it judged, and from the last record the others (a
        later run looks at whether what they read is unchanged before it trusts them)."""
        previous = self._record
        targets = {
            key: sorted(reads | self.reached.get(key, set())) for key, reads in self.reads.items()
        }
        if previous is not None:
            for key, names in previous.targets.items():
                # Only what still holds: a state rewritten below must be true of its readers.
                if key not in targets and not self._touched(names):
                    targets[key] = names
        read_now = self.shared.union(*self.reads.values(), *self.reached.values())
        names = read_now.union(*map(set, targets.values()))
        states: dict[str, State] = {}
        stamps: dict[str, list[int]] = {}
        for name in names:
            if name not in read_now and previous is not None and name in previous.states:
                # Read by a target this run did not judge: found unchanged (`wanted`).
                states[name] = previous.states[name]
                path = states[name][0]
                if path is not None and path in previous.stamps:
                    stamps[path] = previous.stamps[path]
                continue
            states[name] = self.index.state(name)
            path = states[name][0]
            if path is not None and path in self.index.stamps:
                stamps[path] = list(self.index.stamps[path])
        return Record(sorted(self.shared), targets, states, stamps)


def _is_path(name: str) -> bool:
    return "/" in name or os.sep in name


class RecordStore:
    """Records under `<cache>/summaries/deps/<key>.json`, one per tree and options."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = (root or default_cache_dir()) / "summaries" / "deps"
        self.trusted = trusted_folder(self.root)
        """False when another user could write here: then nothing is read or written."""

    @staticmethod
    def key(options: CheckOptions, workspace: Workspace) -> str:
        """Everything besides file contents that decides what a target reads and finds."""
        parts = [
            __version__,
            FORMAT,
            code_fingerprint(),
            list(sys.version_info[:2]),
            str(workspace.tree),
            [str(p) for p in workspace.extra_roots],
            workspace.contract_source,
            workspace.wing.name,
            options.release,
            str(options.hf_config),
            options.model_type,
            options.platform,
            options.select,
            options.ignore,
            options.rule_options,
            options.rule_timeout,
        ]
        return file_digest(json.dumps(parts, sort_keys=True, default=str).encode())

    def load(self, key: str) -> Record | None:
        """The record stored under `key`, if it is there, whole and the user's own."""
        if not self.trusted:
            return None
        try:
            data = json.loads(
                read_regular(self.root / f"{key}.json", MAX_CACHE_ENTRY_BYTES, private=True)
            )
            if not isinstance(data, dict) or data.get("key") != key:
                return None
            return Record(
                [str(n) for n in data["shared"]],
                {str(k): [str(n) for n in v] for k, v in dict(data["targets"]).items()},
                {
                    str(n): (None if p is None else str(p), str(d))
                    for n, (p, d) in dict(data["states"]).items()
                },
                {str(p): [int(x) for x in s] for p, s in dict(data["stamps"]).items()},
            )
        except (UnreadableSource, ValueError, KeyError, TypeError, RecursionError):
            return None

    def store(self, key: str, record: Record) -> None:
        if not self.trusted:
            return
        entry = {"key": key, **vars(record)}
        try:
            make_folders(self.root)
            data = json.dumps(entry, separators=(",", ":")).encode()
            write_atomically(self.root / f"{key}.json", data, private=True, sync=False)
        except OSError:
            pass  # a record that cannot be written only costs speed, never a result


def target_key(target: Target) -> str:
    """A target's name in the record: its architecture, or for a class of a file given that
    the registry does not list, its qualified name."""
    return target.arch if target.registered else f"file:{target.ref.qualname}"


def settle(target: Target) -> None:
    """Compute, inside the target's recording, what the report asks of it after its rules ran:
    those are cached on the target, and read later outside the recording."""
    for name in SETTLED:
        getattr(target, name, None)
    target.depends_on()


SETTLED = (
    "role",
    "implements_eagle3",
    "claims_eagle3",
    "pp_aux_relay",
    "runner",
    "runner_choices",
    "platform_runners",
)
"""The target's members the report reads (`engine._results`)."""
