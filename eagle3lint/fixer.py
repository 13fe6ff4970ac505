"""`eagle3lint fix`: apply the repairs that fixable findings ask for, then check again.

Every file is rewritten through libcst in memory; the result must compile, the file must be
unchanged on disk since it was read, and it is replaced atomically with its permissions kept.
Anything less and the file is left alone, with the reason reported.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import stat
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import libcst as cst

from eagle3lint.codemod.errors import CodemodRefused
from eagle3lint.codemod.gate import add_gate_entry
from eagle3lint.codemod.methods import add_aux_methods, add_delegating_methods, rename_method
from eagle3lint.codemod.proposer import add_proposer_branch
from eagle3lint.codemod.protocol import add_base
from eagle3lint.codemod.taps import add_forward_taps, add_mixin_taps
from eagle3lint.codemod.verify import render_checked
from eagle3lint.engine import CheckOptions, run_check
from eagle3lint.findings import Repair, Severity
from eagle3lint.report.escape import printable
from eagle3lint.report.model import Report
from eagle3lint.sources.discovery import UsageError
from eagle3lint.sources.files import (
    MAX_FILE_BYTES,
    UnreadableSource,
    decode_source,
    read_source_bytes,
)

MAX_PASSES = 3
"""Fixing a base class can make a subclass fixable: passes until nothing changes, at most this."""

Transform = Callable[[cst.Module, Repair, bool], cst.Module]
"""A codemod for one repair; the flag says whether the file sits beside `interfaces.py`, so
that an import it adds is relative (`from .interfaces`) or absolute."""

TRANSFORMS: dict[str, Transform] = {
    "add-protocol-base": lambda m, r, rel: add_base(m, r.get("cls"), relative=rel),
    "add-aux-methods": lambda m, r, _: add_aux_methods(
        m, r.get("cls"), getter_name=r.get("getter"), inner_attr=r.get("inner", "model")
    ),
    "add-delegating-methods": lambda m, r, _: add_delegating_methods(
        m, r.get("cls"), getter_name=r.get("getter")
    ),
    "add-forward-taps": lambda m, r, _: add_forward_taps(
        m, r.get("cls"), stream=r.get("stream") == "yes"
    ),
    "add-mixin-taps": lambda m, r, rel: add_mixin_taps(
        m, r.get("cls"), stream=r.get("stream") == "yes", relative=rel
    ),
    "rename-method": lambda m, r, _: rename_method(m, r.get("cls"), r.get("old"), r.get("new")),
    "add-gate-entry": lambda m, r, _: add_gate_entry(m, r.get("model_type")),
    "add-proposer-branch": lambda m, r, _: add_proposer_branch(m, r.get("cls"), r.get("attribute")),
}
"""Repair kind → codemod. The order is the order edits are applied within one file."""


@dataclass
class FileEdit:
    path: Path
    original: bytes
    new: bytes | None = None
    applied: list[Repair] = field(default_factory=list)
    refused: list[tuple[Repair, str]] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.new is not None and self.new != self.original


def plan_repairs(repairs: list[Repair]) -> dict[Path, list[Repair]]:
    """Unique repairs grouped by file, in `TRANSFORMS` order."""
    order = list(TRANSFORMS)
    by_file: dict[Path, list[Repair]] = {}
    for repair in dict.fromkeys(repairs):
        by_file.setdefault(Path(repair.path), []).append(repair)
    for items in by_file.values():
        items.sort(key=lambda r: (order.index(r.kind) if r.kind in order else len(order), r.params))
    return by_file


def rewrite(path: Path, repairs: list[Repair], interfaces_dir: Path | None = None) -> FileEdit:
    """Apply `repairs` to the file in memory; the result compiles or nothing is kept.

    `interfaces_dir` is the folder of the tree's `interfaces.py`: files there import from it
    relatively, as vLLM does; any other file (`vllm/models/...`, out-of-tree code) absolutely.
    """
    relative = interfaces_dir is not None and path.parent.resolve() == interfaces_dir.resolve()
    try:
        original = read_source_bytes(path)
        decode_source(original)  # the same binary, encoding and nesting checks as `check`
    except UnreadableSource as exc:
        edit = FileEdit(path, b"")
        edit.refused = [(r, f"cannot read {path}: {exc}") for r in repairs]
        return edit
    edit = FileEdit(path, original)
    try:
        module = cst.parse_module(original)
    except (cst.ParserSyntaxError, RecursionError, UnicodeDecodeError, SyntaxError) as exc:
        edit.refused = [(r, f"{path} does not parse: {exc}") for r in repairs]
        return edit
    for repair in repairs:
        transform = TRANSFORMS.get(repair.kind)
        if transform is None:
            edit.refused.append((repair, f"no codemod for {repair.kind}"))
            continue
        try:
            module = transform(module, repair, relative)
        except CodemodRefused as exc:
            edit.refused.append((repair, exc.reason))
            continue
        edit.applied.append(repair)
    try:
        code = render_checked(original.decode(module.encoding), module, str(path))
    except CodemodRefused as exc:
        edit.refused += [(r, f"{exc.reason}; left unchanged") for r in edit.applied]
        edit.applied = []
        return edit
    # The module's encoding is the file's own (PEP 263 cookie, or utf-8-sig keeping a BOM).
    edit.new = code.encode(module.encoding)
    return edit


def write_atomically(edit: FileEdit) -> str | None:
    """Replace the file with `edit.new`; returns why it was not written, or None.

    A symlinked model file keeps its link: the file it points to is the one replaced, with its
    permissions and owner. An edit saved meanwhile is never overwritten knowingly: the file is
    compared with what was read as the last step before the rename (after the new content is
    written and synced), and the old file, still open, is read again after it: a save that
    went into it in between is put back. What remains is an editor that saves by renaming a
    file of its own over this one in the microseconds between the comparison and the rename
    (docs/security.md).
    """
    assert edit.new is not None
    path = edit.path.resolve()
    try:
        info = path.stat()
        if not info.st_mode & stat.S_IWUSR or not os.access(path, os.W_OK):
            return f"{path} is read-only"
        tmp = _write_beside(path, edit.new, info)
        try:
            # Without blocking: the file may have been replaced by a FIFO meanwhile.
            with os.fdopen(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as current:
                if not _still(current, path, edit.original):
                    os.unlink(tmp)
                    return f"{path} changed on disk since it was read; run fix again"
                os.replace(tmp, path)
                current.seek(0)
                saved = current.read(MAX_FILE_BYTES + 1)
            if saved != edit.original:
                # Written into the old file after the comparison: the user's save wins.
                os.replace(_write_beside(path, saved, info), path)
                return f"{path} changed while it was being written; left as saved, run fix again"
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
    except OSError as exc:
        return f"cannot write {path}: {exc.strerror or exc}"
    return None


def _still(current: BinaryIO, path: Path, original: bytes) -> bool:
    """Whether `path` is still the file open as `current` and holds `original`."""
    if os.fstat(current.fileno()).st_ino != os.stat(path).st_ino:
        return False
    return current.read(MAX_FILE_BYTES + 1) == original


def _write_beside(path: Path, data: bytes, info: os.stat_result) -> str:
    """A synced temporary file holding `data` next to `path`, with its mode and owner."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".eagle3lint")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, stat.S_IMODE(info.st_mode))
        if (info.st_uid, info.st_gid) != (os.getuid(), os.getgid()):
            os.chown(tmp, info.st_uid, info.st_gid)
    except BaseException:
        os.unlink(tmp)
        raise
    return tmp


def unified_diff(edit: FileEdit) -> str:
    assert edit.new is not None
    old = edit.original.decode("utf-8", "replace").splitlines(keepends=True)
    new = edit.new.decode("utf-8", "replace").splitlines(keepends=True)
    # git-style headers: paths under the working directory relative to it.
    try:
        name = edit.path.resolve().relative_to(Path.cwd()).as_posix()
    except ValueError:
        name = edit.path.as_posix().lstrip("/")
    name = printable(name)
    return "".join(difflib.unified_diff(old, new, f"a/{name}", f"b/{name}"))


def plan_edits(
    report: Report, interfaces_dir: Path | None = None
) -> tuple[list[FileEdit], list[str]]:
    """The edits to make, all or nothing per target.

    A target gets its repairs only if every error blocking it is fixable and no codemod refuses
    any of them: half a chain (SupportsEagle3 added, the taps refused) would turn vLLM's clear
    refusal into a crash after the weights load. Repairs shared by several targets (one decoder
    under DeepseekV3 and Kimi-K2.5) are applied once. Returns the edits and, for each target
    left alone, why.
    """
    skipped: list[str] = []
    chains: list[tuple[str, set[Repair]]] = []
    for target in report.targets:
        repairs = {f.repair for f in target.findings if f.repair is not None}
        if not repairs:
            continue
        unfixable = [
            f.code for f in target.findings if f.severity is Severity.ERROR and not f.fixable
        ]
        if unfixable:
            skipped.append(f"{target.arch}: {', '.join(unfixable)} has no automatic fix")
            continue
        chains.append((target.arch, repairs))
    refused: dict[Repair, str] = {}
    while True:
        wanted = {r for _, chain in chains if not chain & refused.keys() for r in chain}
        edits = [
            rewrite(path, items, interfaces_dir)
            for path, items in plan_repairs(list(wanted)).items()
        ]
        new = {r: why for edit in edits for r, why in edit.refused if r not in refused}
        if not new:
            break
        refused.update(new)
    for arch, chain in chains:
        for repair in chain & refused.keys():
            skipped.append(f"{arch}: {repair.kind} in {repair.path} refused: {refused[repair]}")
    return edits, skipped


def run_fix(options: CheckOptions, diff: bool = False) -> int:
    """The `fix` command; returns the exit code (ruff's convention for --diff)."""
    first = run_check(options)
    release = first.workspace.vllm_dir
    if options.vllm_version and not diff and release is not None:
        # Out-of-tree files checked against a release may be fixed; the release itself not.
        repairs = [f.repair for f in first.report.findings if f.repair is not None]
        cached = [r for r in repairs if Path(r.path).resolve().is_relative_to(release.resolve())]
        if cached:
            raise UsageError(
                f"--vllm {options.vllm_version} is a cached copy of a release, which is not yours "
                "to edit: add --diff to see the changes, or run fix on a checkout or a copy of "
                "the sources."
            )
    interfaces_dir = release / "model_executor" / "models" if release is not None else None
    out = sys.stdout
    if diff:
        edits, skipped = plan_edits(first.report, interfaces_dir)
        changed = [e for e in edits if e.changed]
        for edit in changed:
            out.write(unified_diff(edit))
        for line in skipped:
            out.write(f"not fixed: {printable(line)}\n")
        out.write(f"{len(changed)} file(s) would change\n")
        return 2 if first.report.errors else (1 if changed else 0)

    report, written, failures = first.report, set(), []
    for _ in range(MAX_PASSES):
        edits, skipped = plan_edits(report, interfaces_dir)
        changed = [e for e in edits if e.changed]
        for edit in changed:
            problem = write_atomically(edit)
            if problem:
                failures.append(problem)
            else:
                written.add(edit.path)
        report = run_check(options).report
        if failures or not changed:
            break
    for line in skipped:
        out.write(f"not fixed: {printable(line)}\n")
    for problem in failures:
        out.write(f"not written: {printable(problem)}\n")
    out.write(f"{len(written)} file(s) changed\n")
    blocked = [t for t in report.targets if t.has_errors]
    for target in blocked:
        for finding in target.findings:
            if finding.severity is not Severity.ERROR:
                continue
            why = "no automatic fix" if not finding.fixable else "not fixed (see above)"
            line = (
                f"remaining {finding.code} {target.arch}: {finding.message} [{why}] "
                f"({finding.path}:{finding.line})"
            )
            out.write(f"{printable(line)}\n")
    if report.errors or failures:
        return 2
    return 1 if blocked else 0
