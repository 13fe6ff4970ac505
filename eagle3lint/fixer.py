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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import libcst as cst

from eagle3lint import journal, signals, storage
from eagle3lint.codemod.errors import CodemodRefused
from eagle3lint.codemod.registry import apply_repair, edit_order
from eagle3lint.codemod.verify import VerdictStore, render_checked
from eagle3lint.engine import CheckOptions, CheckRun, run_check
from eagle3lint.findings import Repair, Severity
from eagle3lint.report.escape import printable
from eagle3lint.report.model import Report
from eagle3lint.sources.discovery import UsageError, Workspace
from eagle3lint.sources.files import (
    MAX_FILE_BYTES,
    UnreadableSource,
    decode_source,
    read_source_bytes,
)

MAX_PASSES = 3
"""Fixing a base class can make a subclass fixable: passes until nothing changes, at most this."""


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
    """Unique repairs grouped by file (files in path order, so that `--diff` prints the same
    thing every run), each file's in the codemod registry's order."""
    by_file: dict[Path, list[Repair]] = {}
    for repair in dict.fromkeys(repairs):
        by_file.setdefault(Path(repair.path), []).append(repair)
    for items in by_file.values():
        items.sort(key=edit_order)
    return dict(sorted(by_file.items()))


class SourceCache:
    """Each file a plan edits, read and parsed once however many times the plan is redone.

    The bytes are the ones the check's index read where it read the file, so the plan edits
    exactly what was checked and `write_edits` refuses a file saved since; other files are
    read here with the same binary, encoding and nesting checks as `check`. `verdicts` keeps
    what the last check of a rewrite found (`codemod.verify`), as `check` keeps summaries.
    """

    def __init__(
        self,
        known: Callable[[str], bytes | None] = lambda path: None,
        verdicts: VerdictStore | None = None,
    ) -> None:
        self._known = known
        self.verdicts = verdicts
        """Where the scope analysis of a rewrite is kept across runs (the summary cache)."""
        self._loaded: dict[Path, tuple[bytes, cst.Module | None, str | None]] = {}

    def load(self, path: Path) -> tuple[bytes, cst.Module | None, str | None]:
        """The file's bytes and module, or its bytes (empty if unread) and why it cannot be
        edited."""
        if path not in self._loaded:
            self._loaded[path] = self._read(path)
        return self._loaded[path]

    def _read(self, path: Path) -> tuple[bytes, cst.Module | None, str | None]:
        try:
            original = self._known(str(path))
            if original is None:
                original = read_source_bytes(path)
                decode_source(original)
        except UnreadableSource as exc:
            return b"", None, f"cannot read {path}: {exc}"
        try:
            return original, cst.parse_module(original), None
        except (cst.ParserSyntaxError, RecursionError, UnicodeDecodeError, SyntaxError) as exc:
            return original, None, f"{path} does not parse: {exc}"


def rewrite(
    path: Path,
    repairs: list[Repair],
    interfaces_dir: Path | None = None,
    sources: SourceCache | None = None,
) -> FileEdit:
    """Apply `repairs` to the file in memory; the result compiles or nothing is kept.

    `interfaces_dir` is the folder of the tree's `interfaces.py`: files there import from it
    relatively, as vLLM does; any other file (`vllm/models/...`, out-of-tree code) absolutely.
    """
    relative = interfaces_dir is not None and path.parent.resolve() == interfaces_dir.resolve()
    sources = sources or SourceCache()
    original, parsed, problem = sources.load(path)
    edit = FileEdit(path, original)
    if parsed is None:
        edit.refused = [(r, problem or "") for r in repairs]
        return edit
    module = parsed
    for repair in repairs:
        try:
            module = apply_repair(module, repair, relative)
        except CodemodRefused as exc:
            edit.refused.append((repair, exc.reason))
            continue
        edit.applied.append(repair)
    try:
        text = original.decode(module.encoding)
        code = render_checked(text, module, str(path), parsed, sources.verdicts)
    except CodemodRefused as exc:
        edit.refused += [(r, f"{exc.reason}; left unchanged") for r in edit.applied]
        edit.applied = []
        return edit
    # The module's encoding is the file's own (PEP 263 cookie, or utf-8-sig keeping a BOM).
    edit.new = code.encode(module.encoding)
    return edit


def write_edits(edits: list[FileEdit], tag: str | None = None) -> str | None:
    """Write every edit of a run or none of them; returns why none was written, or None.

    First every file is checked (writable, unchanged since it was read) and its new content
    written and synced to a temporary file beside it, with its permissions and owner (a
    symlinked model file keeps its link: the file it points to is the one replaced). Only then
    are the files replaced, one rename each. If one of them cannot be, the ones already
    replaced get their original content back, so the tree is never left between two states.

    An edit saved meanwhile is never overwritten knowingly: each file is compared with what
    was read as the last step before its rename, and the old file, still open, is read again
    after it: a save that went into it in between is put back (and the run undone). What
    remains is an editor that saves by renaming a file of its own over this one in the
    microseconds between the comparison and the rename (docs/security.md).

    Temporary files carry `tag` (the run's journal names it). SIGINT, SIGTERM and SIGHUP are
    held off while files are replaced or put back, so no signal cuts that in the middle.
    """
    staged: list[tuple[FileEdit, Path, os.stat_result, str]] = []
    replaced: list[tuple[Path, os.stat_result, bytes]] = []
    problem: str | None = None
    path = Path()
    try:
        for edit in edits:
            assert edit.new is not None
            path = edit.path.resolve()
            problem = _unwritable(path, edit.original)
            if problem:
                break
            info = path.stat()
            staged.append((edit, path, info, storage.stage(path, edit.new, info, tag=tag)))
        with signals.held():
            problem = problem or _replace_all(staged, replaced, tag)
    except OSError as exc:
        problem = f"cannot write {path}: {exc.strerror or exc}"
    finally:
        for _, _, _, tmp in staged:
            storage.discard(tmp)
    if problem is None:
        return None
    with signals.held():
        return problem + _restore(replaced, tag)


def _replace_all(
    staged: list[tuple[FileEdit, Path, os.stat_result, str]],
    replaced: list[tuple[Path, os.stat_result, bytes]],
    tag: str | None,
) -> str | None:
    """Rename each staged file over its own, the file compared with what was read just before;
    the files replaced go to `replaced`. Returns why it stopped early, or None."""
    path = Path()
    try:
        for edit, path, info, tmp in staged:
            # Without blocking: the file may have been replaced by a FIFO meanwhile.
            with os.fdopen(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as current:
                if not _still(current, path, edit.original):
                    return f"{path} changed on disk since it was read; run fix again"
                os.replace(tmp, path)
                current.seek(0)
                saved = current.read(MAX_FILE_BYTES + 1)
            if saved != edit.original:
                # Written into the old file after the comparison: the user's save wins.
                storage.write_atomically(path, saved, like=info, tag=tag)
                return f"{path} changed while it was being written; left as saved, run fix again"
            replaced.append((path, info, edit.original))
    except OSError as exc:
        return f"cannot write {path}: {exc.strerror or exc}"
    return None


def _unwritable(path: Path, original: bytes) -> str | None:
    """Why `path` cannot take its edit (read-only, unreadable, changed since read), or None."""
    try:
        info = path.stat()
        if not info.st_mode & stat.S_IWUSR or not os.access(path, os.W_OK):
            return f"{path} is read-only"
        with os.fdopen(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as current:
            if not _still(current, path, original):
                return f"{path} changed on disk since it was read; run fix again"
    except OSError as exc:
        return f"cannot write {path}: {exc.strerror or exc}"
    return None


def _restore(replaced: list[tuple[Path, os.stat_result, bytes]], tag: str | None) -> str:
    """Put the original content back into the files a failed run already replaced; the
    sentence to add to the failure (which files were restored, or could not be)."""
    lost = []
    for path, info, original in reversed(replaced):
        try:
            storage.write_atomically(path, original, like=info, tag=tag)
        except OSError as exc:
            lost.append(f"{path} ({exc.strerror or exc})")
    if lost:
        return f"; COULD NOT RESTORE {', '.join(lost)}: restore them from version control"
    if replaced:
        return f"; restored {len(replaced)} file(s) already written, so no file changed"
    return "; no file written"


def _still(current: BinaryIO, path: Path, original: bytes) -> bool:
    """Whether `path` is still the file open as `current` and holds `original`."""
    if os.fstat(current.fileno()).st_ino != os.stat(path).st_ino:
        return False
    return current.read(MAX_FILE_BYTES + 1) == original


def unified_diff(edit: FileEdit, root: Path | None = None) -> str:
    """The edit as a git-style diff: paths relative to `root` (default: the working
    directory) when under it, so that `git apply` takes it there."""
    assert edit.new is not None
    old = edit.original.decode("utf-8", "replace").splitlines(keepends=True)
    new = edit.new.decode("utf-8", "replace").splitlines(keepends=True)
    try:
        name = edit.path.resolve().relative_to(root or Path.cwd()).as_posix()
    except ValueError:
        name = edit.path.as_posix().lstrip("/")
    name = printable(name)
    return "".join(difflib.unified_diff(old, new, f"a/{name}", f"b/{name}"))


def plan_edits(
    report: Report,
    interfaces_dir: Path | None = None,
    read_only: Path | None = None,
    sources: SourceCache | None = None,
) -> tuple[list[FileEdit], list[str]]:
    """The edits to make, all or nothing per target.

    A target gets its repairs only if every error blocking it is fixable, every file they touch
    may be edited (none under `read_only`, a cached release) and no codemod refuses any of
    them: half a chain (SupportsEagle3 added, the taps refused) would turn vLLM's clear refusal
    into a crash after the weights load. Drafts and pooling models are never made targets.
    Repairs shared by several targets (one decoder under DeepseekV3 and Kimi-K2.5) are applied
    once. `sources` holds what the check read. Returns the edits and, for each target left
    alone, why.
    """
    sources = sources or SourceCache()
    skipped: list[str] = []
    chains: list[tuple[str, set[Repair]]] = []
    for target in report.targets:
        repairs = {f.repair for f in target.findings if f.repair is not None}
        if not repairs or not target.is_target:
            continue
        outside = sorted(
            {
                r.path
                for r in repairs
                if read_only is not None and Path(r.path).resolve().is_relative_to(read_only)
            }
        )
        if outside:
            skipped.append(
                f"{target.arch}: its repair needs {', '.join(outside)}, in a cached release "
                "that is not yours to edit: run fix on a checkout or a copy of the sources"
            )
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
            rewrite(path, items, interfaces_dir, sources)
            for path, items in plan_repairs(list(wanted)).items()
        ]
        new = {r: why for edit in edits for r, why in edit.refused if r not in refused}
        if not new:
            break
        refused.update(new)
    for arch, chain in chains:
        # One line per reason: a file whose rewrite fails refuses each repair made in it.
        reasons: dict[str, list[Repair]] = {}
        for repair in sorted(chain & refused.keys(), key=lambda r: (r.path, r.kind)):
            reasons.setdefault(refused[repair], []).append(repair)
        for why, repairs in reasons.items():
            where = ", ".join(dict.fromkeys(r.path for r in repairs))
            kinds = ", ".join(dict.fromkeys(r.kind for r in repairs))
            skipped.append(f"{arch}: {kinds} in {where} refused: {why}")
    return edits, skipped


def run_fix(options: CheckOptions, diff: bool = False, recover: bool = False) -> int:
    """The `fix` command; returns the exit code (ruff's convention for --diff).

    `recover` only undoes what an interrupted run left (`journal.py`) and writes nothing else.
    """
    first = run_check(options)
    release = first.workspace.vllm_dir
    # Out-of-tree files checked against a cached release may be fixed; the release itself not.
    cached = release.resolve() if options.vllm_version and release is not None else None
    if cached is not None and not diff and not recover and not first.workspace.files:
        raise UsageError(
            f"--vllm {options.vllm_version} is a cached copy of a release, which is not yours "
            "to edit: add --diff to see the changes, or run fix on a checkout or a copy of "
            "the sources."
        )
    interfaces_dir = release / "model_executor" / "models" if release is not None else None
    root = _lock_root(first.workspace, cached)
    out = sys.stdout
    if diff:
        if left := journal.pending(root):
            _say(
                f"{left} was left by an interrupted fix run: the diff is against the files as "
                "it left them; `eagle3lint fix --recover` undoes what it wrote"
            )
        sources = SourceCache(first.index.source_bytes, first.index.cache)
        # A cached release alone: the diff is what fix would write on a copy of it (the
        # message above sends users here to see it). With out-of-tree files: what fix writes.
        read_only = cached if first.workspace.files else None
        edits, skipped = plan_edits(first.report, interfaces_dir, read_only, sources)
        changed = [e for e in edits if e.changed]
        # A cached release's paths as in a checkout (`vllm/...`), where the diff applies.
        diff_root = cached.parent if cached is not None and read_only is None else None
        for edit in changed:
            out.write(unified_diff(edit, diff_root))
        # Only the patch on stdout (ruff's convention), so `fix --diff > fix.patch` applies.
        for line in skipped:
            sys.stderr.write(f"not fixed: {printable(line)}\n")
        sys.stderr.write(f"{len(changed)} file(s) would change\n")
        return 2 if first.report.errors else (1 if changed else 0)

    waited: list[str] = []

    def wait(message: str) -> None:
        waited.append(message)
        _say(message)

    wanted = any(f.repair for f in first.report.findings)
    with contextlib.ExitStack() as stack:
        if wanted or recover or journal.pending(root):  # else there is nothing to write
            try:
                stack.enter_context(storage.tree_lock(root, on_wait=wait, on_stale=_say))
            except OSError as exc:
                raise UsageError(f"cannot lock {root} to fix it: {exc.strerror or exc}") from exc
            recovered = _recover(root)
            if recover:
                if not recovered:
                    _say(f"nothing to recover: no interrupted fix run left a journal in {root}")
                return 0
            if waited or recovered:
                # The run that held the lock (or the one undone) has likely rewritten what this
                # check read; the plan edits the bytes a check read, so check again.
                first = run_check(options)
        return _fix_locked(options, first, interfaces_dir, cached, root)


def _write_journaled(record: journal.Journal, changed: list[FileEdit]) -> str | None:
    """Journal the edits, then write them (`write_edits`); why nothing was written, or None."""
    try:
        record.record((e.path, e.original, e.new or b"") for e in changed)
    except (journal.JournalError, OSError) as exc:
        return f"cannot write the journal {record.path}: {getattr(exc, 'strerror', None) or exc}"
    return write_edits(changed, record.temp_tag)


def _say(message: str) -> None:
    sys.stderr.write(f"{printable(message)}\n")


def _recover(root: Path) -> bool:
    """Undo what an interrupted run left under `root` (the lock held); whether there was one."""
    try:
        result = journal.recover(root)
    except journal.JournalError as exc:
        raise UsageError(str(exc)) from None
    if result is not None:
        _say(result.summary())
    return result is not None


def _lock_root(workspace: Workspace, cached: Path | None) -> Path:
    """Where the lock (and the journal) of a `fix` run lives: the checkout holding the `vllm`
    folder, or for out-of-tree files checked against a cached release, the folder holding
    them all."""
    if workspace.import_root is not None and cached is None:
        return workspace.import_root
    folders = [p.resolve() for p in workspace.extra_roots] + [
        f.resolve().parent for f in workspace.files
    ]
    return Path(os.path.commonpath(folders)) if folders else Path.cwd()


def _fix_locked(
    options: CheckOptions,
    run: CheckRun,
    interfaces_dir: Path | None,
    cached: Path | None,
    root: Path,
) -> int:
    """Plan, write and check again, up to `MAX_PASSES` times; the exit code.

    The run is one transaction, journaled (`journal.py`) before any file is replaced: when a
    later pass cannot write, or the run is interrupted (Ctrl-C, SIGTERM), every file the run
    wrote gets its content from before the run back, so a failed run leaves the tree as it
    was; a run killed outright is undone by the next one.
    """
    out = sys.stdout
    record = journal.Journal(root)
    failure: str | None = None
    report = run.report
    try:
        for _ in range(MAX_PASSES):
            sources = SourceCache(run.index.source_bytes, run.index.cache)
            edits, skipped = plan_edits(report, interfaces_dir, cached, sources)
            changed = [e for e in edits if e.changed]
            if changed:
                failure = _write_journaled(record, changed)
            if failure is not None:
                with signals.held():
                    undone = record.rollback()
                if undone.restored:
                    failure += (
                        f"; the {len(undone.restored)} file(s) earlier passes wrote were restored"
                    )
                if undone.left:
                    failure += f" ({undone.details()})"
            run = run_check(options)
            report = run.report
            if failure or not changed:
                break
        if record.entries:
            with signals.held():
                record.close()
    except BaseException as exc:
        # Also when the journal is closed already: a run that says it was interrupted has
        # changed nothing.
        if record.entries:
            how = "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed"
            with signals.held():
                undone = record.rollback()
                _say(f"{how}: the run's writes are undone: {undone.details()}")
        raise
    written = [] if failure else list(record.entries)
    for line in skipped:
        out.write(f"not fixed: {printable(line)}\n")
    if failure:
        out.write(f"not written: {printable(failure)}\n")
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
    undecided = report.unverified_required()
    for target in undecided:
        for finding in target.unverified:
            assert finding.unverified is not None
            line = (
                f"unverified {finding.code} {target.arch}: no error left, but whether vLLM "
                f"raises depends on {finding.unverified.what}, which this check cannot read "
                f"({finding.unverified.why}): pass {' or '.join(finding.unverified.decide)} to "
                "decide it"
            )
            out.write(f"{printable(line)}\n")
    if report.errors or failure:
        return 2
    return 1 if blocked or undecided else 0
