"""Whole-tree verdicts kept between runs: a warm `check PATH` after an edit judges only the
targets whose dependency record the edit touched (`checkrun.dependencies`), and takes every
other target's verdict from the last run.

A verdict is what the report reads of a target once its rules ran (its findings, repairs
included, and the facts `engine._results` and `checkrun.intent` ask of it: role, claims,
runners), kept in `<cache>/summaries/deps/<key>.verdicts.json` beside the record of the same
tree and options (`RecordStore.key`, and the working directory). Each is stored with a digest
of what the record says the target read (its names, the shared reads, and each one's file and
content digest), and taken only when the record, found unchanged, gives the same digest: a
record rewritten since by a run over given files, which judged the target again without
storing its verdict, no longer matches. Like the record, the file is read only from a folder
and a file that are the user's own, and rebuilt field by field with their types checked
(`index.model.from_json`): one that does not load is no verdict, and the target is judged.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from typing import Any

from eagle3lint.cachedir import file_digest
from eagle3lint.checkrun.dependencies import Record, RecordStore, target_key
from eagle3lint.engines import Role, Target, default_runner
from eagle3lint.errors import SummaryFormatError
from eagle3lint.findings import Finding, Severity, Unverified
from eagle3lint.index.model import ClassSummary, FileSummary, from_json, to_json
from eagle3lint.index.project import ProjectIndex
from eagle3lint.index.refs import ClassRef
from eagle3lint.repairs import Repair
from eagle3lint.sources.files import MAX_CACHE_ENTRY_BYTES, UnreadableSource, read_regular
from eagle3lint.storage import write_atomically
from eagle3lint.trust import make_folders

FORMAT = 2


@dataclass
class StoredRepair:
    """A built-in `Repair`: its kind and its fields, text or flags."""

    kind: str
    path: str
    text: dict[str, str]
    flags: dict[str, bool]

    @classmethod
    def of(cls, repair: Repair) -> StoredRepair:
        """`repair` as stored; a field of another type is kept as text, which `Verdict.of`
        finds does not give the repair back."""
        values = {f.name: getattr(repair, f.name) for f in fields(repair) if f.name != "path"}
        flags = {name: value for name, value in values.items() if isinstance(value, bool)}
        text = {name: str(value) for name, value in values.items() if name not in flags}
        return cls(repair.kind, repair.path, text, flags)


@dataclass
class StoredUnverified:
    what: str
    why: str
    decide: list[str]


@dataclass
class StoredFinding:
    """A `Finding`, every field of it."""

    code: str
    rule: str
    severity: str
    message: str
    path: str
    line: int
    column: int
    hint: str
    repair: StoredRepair | None
    fix_refused: str
    unverified: StoredUnverified | None
    runners: list[str]

    @classmethod
    def of(cls, finding: Finding) -> StoredFinding:
        repair, unverified = finding.repair, finding.unverified
        return cls(
            finding.code,
            finding.rule,
            str(finding.severity),
            finding.message,
            finding.path,
            finding.line,
            finding.column,
            finding.hint,
            None if repair is None else StoredRepair.of(repair),
            finding.fix_refused,
            None
            if unverified is None
            else StoredUnverified(unverified.what, unverified.why, list(unverified.decide)),
            list(finding.runners),
        )

    def finding(self) -> Finding:
        """The finding stored; ValueError or TypeError when it is not one eagle3lint made."""
        unverified = self.unverified
        return Finding(
            self.code,
            self.rule,
            Severity(self.severity),
            self.message,
            self.path,
            self.line,
            self.column,
            self.hint,
            None if self.repair is None else _repair(self.repair),
            self.fix_refused,
            None
            if unverified is None
            else Unverified(unverified.what, unverified.why, tuple(unverified.decide)),
            tuple(self.runners),
        )


REPAIRS = {k.kind: k for k in Repair.__subclasses__() if k.__module__ == Repair.__module__}
"""The built-in repairs by kind: a repair plugin's type is not rebuilt from the cache."""


def _repair(stored: StoredRepair) -> Repair:
    kind = REPAIRS.get(stored.kind)
    if kind is None:
        raise ValueError(f"unknown repair kind {stored.kind!r}")
    return kind(stored.path, **stored.text, **stored.flags)


@dataclass
class Verdict:
    """What the report reads of one judged target."""

    arch: str
    module: str
    file: str
    """The summary's path (`display_path` names the module's file, found again)."""
    cls: str
    line: int
    column: int
    variant: str | None
    registered: bool
    role: str
    claims_eagle3: bool
    implements_eagle3: bool
    pp_aux_relay: bool | None
    runner: str | None
    runner_choices: list[str]
    platform_runners: dict[str, str] | None
    notes: dict[str, str]
    """`off_runner_note` for the runners of each finding on some runners' path only."""
    findings: list[StoredFinding]

    @classmethod
    def of(cls, target: Target, findings: list[Finding]) -> Verdict | None:
        """The verdict of `target`, None when the cache cannot give it back as it is (a
        repair plugin's repair, or one with a field neither text nor a flag)."""
        stored = [StoredFinding.of(f) for f in findings]
        for finding, kept in zip(findings, stored, strict=True):
            if kept.repair is not None and (
                kept.repair.kind not in REPAIRS or _repair(kept.repair) != finding.repair
            ):
                return None
        runs = {f.runners for f in findings if f.runners}
        ref = target.ref
        return cls(
            target.arch,
            ref.file.module,
            ref.file.path,
            ref.cls.name,
            ref.cls.line,
            ref.cls.column,
            target.variant,
            target.registered,
            str(target.role),
            target.claims_eagle3,
            target.implements_eagle3,
            target.pp_aux_relay,
            default_runner(target),
            list(target.runner_choices),
            getattr(target, "platform_runners", None),
            {_joined(r): target.off_runner_note(r) for r in sorted(runs)},
            stored,
        )


def _joined(runners: tuple[str, ...]) -> str:
    return "\0".join(runners)


class Judged:
    """A target whose verdict a run took from the cache: what the report reads of a target
    (`engine._results`, `checkrun.intent`, `checkrun.shown`), and its findings as its rules
    gave them. Not a target to resolve anything on: runs that go on from their targets (the
    language server, runs over given files) never take verdicts."""

    def __init__(self, verdict: Verdict, index: ProjectIndex) -> None:
        self.arch = verdict.arch
        summary = FileSummary(verdict.file, verdict.module)
        self.ref = ClassRef(summary, ClassSummary(verdict.cls, verdict.line, verdict.column, []))
        self.index = index
        """Where `checkrun.intent` finds the display path of the class's file."""
        self.variant = verdict.variant
        self.registered = verdict.registered
        self.role = Role(verdict.role)
        self.claims_eagle3 = verdict.claims_eagle3
        self.implements_eagle3 = verdict.implements_eagle3
        self.pp_aux_relay = verdict.pp_aux_relay
        self.runner = verdict.runner
        self.runner_choices = tuple(verdict.runner_choices)
        self.platform_runners = verdict.platform_runners
        self._notes = verdict.notes
        self.findings = [stored.finding() for stored in verdict.findings]
        if any(f.runners and _joined(f.runners) not in self._notes for f in self.findings):
            raise KeyError("a finding on some runners' path has no note")  # not `of`'s

    def off_runner_note(self, runners: tuple[str, ...]) -> str:
        return self._notes[_joined(runners)]


def states_digest(record: Record, key: str) -> str:
    """What the record says target `key` read, and the run's shared reads: each name with its
    file and content digest."""
    names = sorted({*record.shared, *record.targets[key]})
    return file_digest(json.dumps([[n, record.states.get(n)] for n in names]).encode())


class Verdicts:
    """The verdicts of one tree and set of options, as stored: target key → the digest of its
    reads and its targets' verdicts (JSON, rebuilt when taken)."""

    def __init__(self, entries: dict[str, Any]) -> None:
        self.entries = entries

    def take(self, key: str, record: Record, index: ProjectIndex) -> list[Judged] | None:
        """The targets of `key` judged as stored, if they were judged on what `record` (found
        unchanged) says they read; None when not, or when the entry does not load."""
        entry = self.entries.get(key)
        try:
            if not isinstance(entry, dict) or entry.get("states") != states_digest(record, key):
                return None
            verdicts = from_json(list[Verdict], entry["targets"])
            return [Judged(verdict, index) for verdict in verdicts] or None
        except (ValueError, KeyError, TypeError, AttributeError, SummaryFormatError):
            return None


class VerdictsFile:
    """`<cache>/summaries/deps/<key>.verdicts.json`, beside the record."""

    def __init__(self, records: RecordStore, record_key: str) -> None:
        key = file_digest(json.dumps([FORMAT, record_key, os.getcwd()]).encode())
        self.key = key
        self.path = records.root / f"{key}.verdicts.json"
        self.trusted = records.trusted

    def load(self) -> Verdicts:
        """The verdicts stored, none when the file is absent, broken or not the user's own."""
        if self.trusted:
            try:
                data = json.loads(read_regular(self.path, MAX_CACHE_ENTRY_BYTES, private=True))
                if isinstance(data, dict) and data.get("key") == self.key:
                    return Verdicts(dict(data["verdicts"]))
            except (UnreadableSource, ValueError, KeyError, TypeError, RecursionError):
                pass
        return Verdicts({})

    def store(
        self,
        record: Record,
        kept: Verdicts,
        reused: Iterable[str],
        judged: Sequence[tuple[Target, list[Finding]]],
    ) -> None:
        """Keep this run's verdicts: the entries of the keys `reused`, and those of the
        targets `judged` (a key whose every target can be kept)."""
        if not self.trusted or not judged:
            return
        entries = {key: kept.entries[key] for key in reused}
        fresh: dict[str, list[Verdict | None]] = {}
        for target, findings in judged:
            if target.registered:
                fresh.setdefault(target_key(target), []).append(Verdict.of(target, findings))
        for key, verdicts in fresh.items():
            if key in record.targets and None not in verdicts:
                entries[key] = {"states": states_digest(record, key), "targets": to_json(verdicts)}
        try:
            make_folders(self.path.parent)
            data = json.dumps({"key": self.key, "verdicts": entries}, separators=(",", ":"))
            write_atomically(self.path, data.encode(), private=True, sync=False)
        except OSError:
            pass  # verdicts that cannot be kept only cost the next run's time
