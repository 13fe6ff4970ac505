"""A baseline: findings a team has accepted for now, so the hook can be adopted on a tree that
already has true upstream bugs and still fail on every new one.

    eagle3lint check vllm --write-baseline eagle3lint-baseline.json   # record today's findings
    eagle3lint check vllm --baseline eagle3lint-baseline.json         # report only new ones

An entry is matched by code, target (architecture) and the finding's fingerprint
(`report.fingerprint`: file relative to the baseline's folder, message and the text of the line,
not its number), so edits that shift lines keep it matched; a finding whose line or message
changes is new. An entry may carry a `note` (why it is accepted: an upstream issue). An entry
that no longer matches anything the run could have matched is reported (EAG906), as a strict
xfail is: the bug was fixed, or the finding moved and now shows as new.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from eagle3lint.codes import BASELINES, STALE_BASELINE_ENTRY
from eagle3lint.errors import UsageError
from eagle3lint.findings import Finding
from eagle3lint.report.fingerprint import fingerprint, portable
from eagle3lint.report.model import Report
from eagle3lint.sources.documents import parse_json
from eagle3lint.sources.files import (
    MAX_CONFIG_BYTES,
    SourceNotFound,
    UnreadableSource,
    read_regular,
)
from eagle3lint.storage import write_named_file

FORMAT = 1


@dataclass(frozen=True)
class Entry:
    """One accepted finding, as the baseline file records it."""

    code: str
    target: str
    fingerprint: str
    path: str
    """The finding's file, relative to the baseline's folder."""
    message: str
    note: str | None = None
    """Why it is accepted for now (an upstream issue link): kept by `--write-baseline`."""
    line: int = 1
    """Where the entry is in the baseline file (a stale entry is reported there)."""
    reduced: bool | None = None
    """Its target was shown as one note when it was recorded (claiming no support, nobody
    asking about it); None in baselines written before that was noted."""

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.code, self.target, self.fingerprint)


@dataclass(frozen=True)
class Baseline:
    path: Path
    entries: tuple[Entry, ...]
    ready: frozenset[str] = frozenset()
    """Architectures EAGLE-3 ready when it was written: a run requires them (as `require`), so
    a change that breaks one fails even if its code no longer claims support."""
    source: bytes = field(default=b"", repr=False, compare=False)
    """The file's bytes, as read (a run notes them among its inputs)."""

    @classmethod
    def load(cls, path: Path) -> Baseline:
        """The baseline at `path` (named by --baseline or the configuration), read through the
        regular-file reader: a FIFO, a device or a runaway file is a usage error."""
        try:
            source = read_regular(path, MAX_CONFIG_BYTES, "baseline")
            data = parse_json(source)
        except SourceNotFound as exc:
            raise UsageError(
                f"--baseline: {path} does not exist (--write-baseline makes one)"
            ) from exc
        except UnreadableSource as exc:
            raise UsageError(f"--baseline: {path} {exc}") from exc
        try:
            if data.get("eagle3lint-baseline") != FORMAT:
                raise ValueError(f"not an eagle3lint baseline of format {FORMAT}")
            lines = _fingerprint_lines(source)
            entries = tuple(
                Entry(
                    str(e["code"]),
                    str(e["target"]),
                    str(e["fingerprint"]),
                    str(e.get("path", "")),
                    str(e.get("message", "")),
                    str(e["note"]) if e.get("note") is not None else None,
                    lines.get(str(e["fingerprint"]), 1),
                    bool(e["reduced"]) if "reduced" in e else None,
                )
                for e in data["findings"]
            )
            ready = frozenset(str(arch) for arch in data.get("ready", ()))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise UsageError(f"--baseline: {path} is not a readable baseline ({exc})") from exc
        return cls(path, entries, ready, source)

    @cached_property
    def keys(self) -> frozenset[tuple[str, str, str]]:
        return frozenset(e.key for e in self.entries)

    @cached_property
    def by_target(self) -> dict[str, list[Entry]]:
        found: dict[str, list[Entry]] = {}
        for entry in self.entries:
            found.setdefault(entry.target, []).append(entry)
        return found

    @property
    def root(self) -> Path:
        """The folder entry paths are relative to."""
        return self.path.resolve().parent

    def key(self, arch: str, finding: Finding) -> tuple[str, str, str]:
        return (finding.code, arch, fingerprint(finding, self.root))

    def holds(self, arch: str, finding: Finding) -> bool:
        return self.key(arch, finding) in self.keys

    def file_of(self, entry: Entry) -> Path:
        """The entry's file, absolute."""
        return self.root / entry.path


@dataclass(frozen=True)
class Scope:
    """Which baseline entries a run could have matched: entries of the targets it judged and
    shows in full, of codes it reports. An entry in scope that matched nothing is stale; one
    out of scope is kept as it is by `--write-baseline` (a run over one file or one
    architecture rewrites only its part of the baseline)."""

    reportable: Callable[[str], bool]
    """Whether the run reports a code (its --select/--ignore)."""
    targets: frozenset[str]
    """The architectures of the run's targets."""
    excludes: Callable[[Path], bool]
    reduced: frozenset[str] = frozenset()
    """The architectures it shows as one note: an entry recorded of the other form (a run
    asking about a target, or no longer asking) is not what this run judged."""

    def covers(self, baseline: Baseline, entry: Entry) -> bool:
        if entry.target not in self.targets or not self.reportable(entry.code):
            return False
        if entry.reduced is not None and entry.reduced != (entry.target in self.reduced):
            return False
        return not self.excludes(baseline.file_of(entry))


def stale_finding(baseline: Baseline, entry: Entry, shown_path: str) -> Finding:
    """EAG906 for an entry in scope that no finding matched, located at the entry."""
    note = f" Its note: {entry.note}" if entry.note else ""
    return Finding(
        code=STALE_BASELINE_ENTRY.code,
        rule=BASELINES,
        severity=STALE_BASELINE_ENTRY.severity,
        message=(
            f"The baseline accepts {entry.code} for {entry.target} in {entry.path} "
            f'("{entry.message}"), which no longer occurs.{note}'
        ),
        path=shown_path,
        line=entry.line,
        hint="Remove the entry: `--write-baseline` with the same paths rewrites the baseline "
        "without it.",
    )


def write_baseline(
    path: Path, report: Report, scope: Scope | None = None, previous: Baseline | None = None
) -> tuple[int, int]:
    """Record every finding of the report and the architectures it finds ready (atomically),
    keeping what of `previous` the run could not see (entries out of `scope`, architectures
    not in the report) and the notes of entries recorded again; the number of entries written
    and of `previous`'s entries dropped."""
    root = path.absolute().parent
    recorded = {
        (f.code, t.arch, fingerprint(f, root)): (
            Path(os.path.relpath(Path(f.path).absolute(), root)).as_posix(),
            portable(f.message, root),
            not t.required and not t.claims_eagle3,
        )
        for t in report.targets
        for f in t.findings
        if f.code != STALE_BASELINE_ENTRY.code
    }
    notes: dict[tuple[str, str, str], str] = {}
    dropped = 0
    if previous is not None:
        for entry in previous.entries:
            if entry.note is not None:
                notes[entry.key] = entry.note
            if scope is not None and not scope.covers(previous, entry):
                recorded.setdefault(entry.key, (entry.path, entry.message, entry.reduced))
            elif entry.key not in recorded:
                dropped += 1
    findings = []
    for (code, arch, fp), (file, message, reduced) in sorted(recorded.items()):
        item: dict[str, object] = {
            "code": code,
            "target": arch,
            "fingerprint": fp,
            "path": file,
            "message": message,
        }
        if reduced is not None:
            item["reduced"] = reduced
        if (code, arch, fp) in notes:
            item["note"] = notes[(code, arch, fp)]
        findings.append(item)
    decided = {t.arch for t in report.targets}
    ready = {t.arch for t in report.targets if t.eagle3_ready is True}
    if previous is not None:
        ready |= {arch for arch in previous.ready if arch not in decided}
    data = {"eagle3lint-baseline": FORMAT, "ready": sorted(ready), "findings": findings}
    try:
        write_named_file(path, (json.dumps(data, indent=1) + "\n").encode())
    except OSError as exc:
        raise UsageError(f"--write-baseline: cannot write {path}: {exc.strerror or exc}") from exc
    return len(findings), dropped


def _fingerprint_lines(source: bytes) -> dict[str, int]:
    """The line of each fingerprint in the file (they are unique hex strings)."""
    lines: dict[str, int] = {}
    for number, text in enumerate(source.decode("utf-8", "replace").splitlines(), start=1):
        found = _FINGERPRINT.search(text)
        if found:
            lines.setdefault(found.group(1), number)
    return lines


_FINGERPRINT = re.compile(r'"fingerprint"\s*:\s*"([^"]+)"')
