"""A baseline: findings a team has accepted for now, so the hook can be adopted on a tree that
already has true upstream bugs and still fail on every new one.

    eagle3lint check vllm --write-baseline eagle3lint-baseline.json   # record today's findings
    eagle3lint check vllm --baseline eagle3lint-baseline.json         # report only new ones

An entry is matched by code, target (architecture) and the finding's fingerprint
(`report.fingerprint`: file relative to the baseline's folder, message and the text of the line,
not its number), so edits that shift lines keep it matched; a finding whose line or message
changes is new.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from eagle3lint.errors import UsageError
from eagle3lint.findings import Finding
from eagle3lint.report.fingerprint import fingerprint
from eagle3lint.report.model import Report
from eagle3lint.sources.documents import parse_json
from eagle3lint.sources.files import (
    MAX_CONFIG_BYTES,
    SourceNotFound,
    UnreadableSource,
    read_regular,
)
from eagle3lint.storage import write_atomically

FORMAT = 1


@dataclass(frozen=True)
class Baseline:
    path: Path
    entries: frozenset[tuple[str, str, str]]
    """(code, architecture, fingerprint)."""
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
            entries = frozenset(
                (str(e["code"]), str(e["target"]), str(e["fingerprint"])) for e in data["findings"]
            )
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise UsageError(f"--baseline: {path} is not a readable baseline ({exc})") from exc
        return cls(path, entries, source)

    def key(self, arch: str, finding: Finding) -> tuple[str, str, str]:
        return (finding.code, arch, fingerprint(finding, self.path.resolve().parent))

    def holds(self, arch: str, finding: Finding) -> bool:
        return self.key(arch, finding) in self.entries


def write_baseline(path: Path, report: Report) -> int:
    """Record every finding of the report (atomically); the number of entries written."""
    root = path.absolute().parent
    entries = sorted(
        {
            (
                f.code,
                t.arch,
                fingerprint(f, root),
                Path(os.path.relpath(Path(f.path).absolute(), root)).as_posix(),
                f.message,
            )
            for t in report.targets
            for f in t.findings
        }
    )
    data = {
        "eagle3lint-baseline": FORMAT,
        "findings": [
            {"code": c, "target": a, "fingerprint": fp, "path": p, "message": m}
            for c, a, fp, p, m in entries
        ],
    }
    try:
        write_atomically(path, (json.dumps(data, indent=1) + "\n").encode())
    except OSError as exc:
        raise UsageError(f"--write-baseline: cannot write {path}: {exc.strerror or exc}") from exc
    return len(entries)
