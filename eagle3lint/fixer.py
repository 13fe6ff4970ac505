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
from pathlib import Path
from typing import BinaryIO

from eagle3lint import journal, signals, storage
from eagle3lint.engine import CheckOptions, CheckRun, run_check
from eagle3lint.findings import Finding, Severity
from eagle3lint.plans import FileEdit
from eagle3lint.report.escape import printable
from eagle3lint.sources.discovery import UsageError, Workspace
from eagle3lint.sources.files import MAX_FILE_BYTES

MAX_PASSES = 3
"""Fixing a base class can make a subclass fixable: passes until nothing changes, at most this."""


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
    name = printable(_in_tree(edit.path, root or Path.cwd()))
    return "".join(difflib.unified_diff(old, new, f"a/{name}", f"b/{name}"))


def _in_tree(path: Path, base: Path) -> str:
    """`path` relative to `base` when under it, named as it is in the tree: a model file that
    is a link by the link, not by the file it leads to, which may be anywhere. `base` is a real
    path (as `os.getcwd` gives), so the folders above the file are tried as named, then
    resolved."""
    absolute = Path(os.path.abspath(path))
    for named in (absolute, absolute.parent.resolve() / absolute.name):
        if named.is_relative_to(base):
            return named.relative_to(base).as_posix()
    return absolute.as_posix().lstrip("/")


def run_fix(options: CheckOptions, diff: bool = False, recover: bool = False) -> int:
    """The `fix` command; returns the exit code (ruff's convention for --diff).

    `recover` only undoes what an interrupted run left (`journal.py`) and writes nothing else;
    without it, a run that finds such a journal stops there and says what it would undo.
    """
    first = run_check(options)
    release = first.workspace.tree
    # Out-of-tree files checked against a cached release may be fixed; the release itself not.
    cached = release.resolve() if options.release and release is not None else None
    if cached is not None and not diff and not recover and not first.workspace.files:
        raise UsageError(
            f"--{options.release_engine} {options.release} is a cached copy of a release, which "
            "is not yours "
            "to edit: add --diff to see the changes, or run fix on a checkout or a copy of "
            "the sources."
        )
    root = _lock_root(first.workspace, cached)
    out = sys.stdout
    if diff:
        if left := journal.pending(root):
            _say(
                f"{left} was left by an interrupted fix run: the diff is against the files as "
                "it left them; `eagle3lint fix --recover` undoes what it wrote"
            )
        # The check planned a cached release alone as a copy of it (the message above sends
        # users here to see what fix would write there); out-of-tree files as they are.
        changed = first.plan.changed
        # A cached release's paths as in a checkout (`vllm/...`), where the diff applies.
        diff_root = cached.parent if cached is not None and not first.workspace.files else None
        for edit in changed:
            out.write(unified_diff(edit, diff_root))
        # Only the patch on stdout (ruff's convention), so `fix --diff > fix.patch` applies.
        for line in first.plan.lines():
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
            if recover:
                if not _recover(root):
                    _say(f"nothing to recover: no interrupted fix run left a journal in {root}")
                return 0
            _stop_at_journal(root)
            if waited:
                # The run that held the lock has likely rewritten what this check read; the
                # plan edits the bytes a check read, so check again.
                first = run_check(options)
        return _fix_locked(options, first, root)


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
    result = _journaled(root, apply=True)
    if result is not None:
        _say(result.summary())
    return result is not None


def _stop_at_journal(root: Path) -> None:
    """Stop (UsageError) where an interrupted run left its journal under `root` (the lock
    held), saying what `fix --recover` would put back: a journal is undone only when asked,
    never on the way to a fix."""
    result = _journaled(root, apply=False)
    if result is not None:
        raise UsageError(result.preview())


def _journaled(root: Path, apply: bool) -> journal.Recovery | None:
    """`journal.recover`; a journal it refuses is a usage error (exit 2), left in place."""
    try:
        return journal.recover(root, apply=apply)
    except journal.JournalError as exc:
        raise UsageError(str(exc)) from None


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
    root: Path,
) -> int:
    """Write the check's plan and check again, up to `MAX_PASSES` times; the exit code.

    The run is one transaction, journaled (`journal.py`) before any file is replaced: when a
    later pass cannot write, or the run is interrupted (Ctrl-C, SIGTERM), every file the run
    wrote gets its content from before the run back, so a failed run leaves the tree as it
    was; a run killed outright is undone by `fix --recover`.
    """
    out = sys.stdout
    record = journal.Journal(root)
    failure: str | None = None
    try:
        for _ in range(MAX_PASSES):
            changed = run.plan.changed
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
    report = run.report
    refused = run.plan.refused
    for line in run.plan.lines():
        out.write(f"not fixed: {printable(line)}\n")
    if failure:
        out.write(f"not written: {printable(failure)}\n")
    out.write(f"{len(written)} file(s) changed\n")
    blocked = [t for t in report.targets if t.has_errors]
    for target in blocked:
        for finding in target.findings:
            if finding.severity is not Severity.ERROR:
                continue
            line = (
                f"remaining {finding.code} {target.arch}: {finding.message} "
                f"[{_why_left(finding, target.arch in refused, bool(failure))}] "
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


def _why_left(finding: Finding, refused: bool, failed: bool) -> str:
    """Why an error is still there after fix, in a few words (the details are above it)."""
    if failed:
        return "not written (see above)"
    if finding.fixable:
        return f"still fixable after {MAX_PASSES} passes: run fix again"
    if refused:
        return "not fixed: see `not fixed:` above"
    return f"not fixed: {finding.fix_refused}" if finding.fix_refused else "no automatic fix"
