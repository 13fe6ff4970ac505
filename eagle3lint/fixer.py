"""`eagle3lint fix`: apply the repairs that fixable findings ask for, then check again.

Every file is rewritten through libcst in memory; the result must compile, the file must be
unchanged on disk since it was read, and it is replaced atomically with its permissions kept.
Anything less and the file is left alone, with the reason reported.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import stat
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

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
from eagle3lint.sources.discovery import UsageError
from eagle3lint.sources.files import UnreadableSource, read_source_bytes

Transform = Callable[[cst.Module, Repair], cst.Module]

TRANSFORMS: dict[str, Transform] = {
    "add-protocol-base": lambda m, r: add_base(m, r.get("cls")),
    "add-aux-methods": lambda m, r: add_aux_methods(m, r.get("cls"), getter_name=r.get("getter")),
    "add-delegating-methods": lambda m, r: add_delegating_methods(
        m, r.get("cls"), getter_name=r.get("getter")
    ),
    "add-forward-taps": lambda m, r: add_forward_taps(m, r.get("cls"), enumerate_start=True),
    "add-mixin-taps": lambda m, r: add_mixin_taps(m, r.get("cls"), enumerate_start=True),
    "rename-method": lambda m, r: rename_method(m, r.get("cls"), r.get("old"), r.get("new")),
    "add-gate-entry": lambda m, r: add_gate_entry(m, r.get("model_type")),
    "add-proposer-branch": lambda m, r: add_proposer_branch(m, r.get("cls"), r.get("attribute")),
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


def rewrite(path: Path, repairs: list[Repair]) -> FileEdit:
    """Apply `repairs` to the file in memory; the result compiles or nothing is kept."""
    try:
        original = read_source_bytes(path)
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
            module = transform(module, repair)
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
    """Replace the file with `edit.new`; returns why it was not written, or None."""
    path = edit.path
    assert edit.new is not None
    try:
        info = path.stat()
        if not info.st_mode & stat.S_IWUSR or not os.access(path, os.W_OK):
            return f"{path} is read-only"
        if hashlib.sha256(path.read_bytes()).digest() != hashlib.sha256(edit.original).digest():
            return f"{path} changed on disk since it was read; run fix again"
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".eagle3lint")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(edit.new)
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(tmp, stat.S_IMODE(info.st_mode))
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError as exc:
        return f"cannot write {path}: {exc.strerror or exc}"
    return None


def unified_diff(edit: FileEdit) -> str:
    assert edit.new is not None
    old = edit.original.decode("utf-8", "replace").splitlines(keepends=True)
    new = edit.new.decode("utf-8", "replace").splitlines(keepends=True)
    name = str(edit.path)
    return "".join(difflib.unified_diff(old, new, f"a/{name}", f"b/{name}"))


def run_fix(options: CheckOptions, diff: bool = False) -> int:
    """The `fix` command; returns the exit code (ruff's convention for --diff)."""
    first = run_check(options)
    repairs = [f.repair for f in first.report.findings if f.repair is not None]
    release = first.workspace.vllm_dir
    if options.vllm_version and not diff and release is not None:
        # Out-of-tree files checked against a release may be fixed; the release itself not.
        cached = [r for r in repairs if Path(r.path).resolve().is_relative_to(release.resolve())]
        if cached:
            raise UsageError(
                f"--vllm {options.vllm_version} is a cached copy of a release, which is not yours "
                "to edit: add --diff to see the changes, or run fix on a checkout or a copy of "
                "the sources."
            )
    edits = [rewrite(path, items) for path, items in plan_repairs(repairs).items()]
    out = sys.stdout
    failures: list[str] = []
    changed = [e for e in edits if e.changed]
    for edit in changed:
        if diff:
            out.write(unified_diff(edit))
            continue
        problem = write_atomically(edit)
        if problem:
            failures.append(problem)
    for edit in edits:
        for repair, reason in edit.refused:
            out.write(f"refused {repair.kind} in {edit.path}: {reason}\n")
    for problem in failures:
        out.write(f"not written: {problem}\n")
    if diff:
        out.write(f"{len(changed)} file(s) would change\n")
        return 2 if first.report.errors else (1 if changed else 0)
    written = len(changed) - len(failures)
    out.write(f"{written} file(s) changed\n")
    after = run_check(options).report
    blocked = [t for t in after.targets if not t.eagle3_ready]
    for target in blocked:
        for finding in target.findings:
            if finding.severity is not Severity.ERROR:
                continue
            why = "no automatic fix" if not finding.fixable else "its fix was refused (see above)"
            out.write(
                f"remaining {finding.code} {target.arch}: {finding.message} [{why}] "
                f"({finding.path}:{finding.line})\n"
            )
    if after.errors or failures:
        return 2
    return 1 if blocked else 0
