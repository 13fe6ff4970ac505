"""The repair plan: which files `fix` rewrites, and for each target it leaves alone, why.

`check` computes the plan for every target it shows repairs for, so that `[*]` is a promise
(a finding is fixable only when its target's plan succeeds), and `fix` writes the plan of the
check it ran: the same planner, one reading of the code.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Executor
from pathlib import Path

import libcst as cst

from eagle3lint.codemod.errors import CodemodRefused
from eagle3lint.codemod.registry import apply_repair, edit_order
from eagle3lint.codemod.verify import VerdictStore, render_checked
from eagle3lint.findings import Repair, Severity
from eagle3lint.plans import Chain, FileEdit, Plan
from eagle3lint.sources.files import UnreadableSource, decode_source, read_source_bytes


def plan_repairs(repairs: Iterable[Repair]) -> dict[Path, list[Repair]]:
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

    def alone(self, path: Path) -> SourceCache:
        """A cache for `path` alone, to rewrite it in a worker process: the bytes the check
        read (if it read them) and the verdicts' store go with it, not what this one parsed."""
        return SourceCache({str(path): self._known(str(path))}.get, self.verdicts)

    def size(self, path: Path) -> int:
        """The file's size in bytes, as the check read it or as it is now (0: unreadable)."""
        known = self._known(str(path))
        if known is not None:
            return len(known)
        try:
            return path.stat().st_size
        except OSError:
            return 0

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
    relatively, as vLLM does; any other file (a model family's package, out-of-tree code)
    absolutely.
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
            changed = apply_repair(module, repair, relative)
        except CodemodRefused as exc:
            edit.refused.append((repair, exc.reason))
            continue
        if changed is module:
            # The check found the change missing and the codemod finds it made: they read this
            # code differently, so writing nothing would leave a `[*]` finding in place.
            edit.refused.append((repair, f"the {repair.kind} codemod finds it done already"))
            continue
        module = changed
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


def plan(
    chains: Sequence[Chain],
    interfaces_dir: Path | None = None,
    read_only: Path | None = None,
    excluded: Callable[[str], bool] | None = None,
    sources: SourceCache | None = None,
    workers: Executor | None = None,
) -> Plan:
    """The edits to make, all or nothing per target.

    A target gets its repairs only if every error blocking it has one, every file they touch
    may be edited (none under `read_only`, a cached release, nor `excluded` from the check)
    and no codemod refuses any of them: half a chain (SupportsEagle3 added, the taps refused)
    would turn vLLM's clear refusal into a crash after the weights load. Repairs shared by
    several targets (one decoder under DeepseekV3 and Kimi-K2.5) are applied once. `sources`
    holds what the check read. `workers`, the check's parser processes when it started them,
    rewrite the files side by side (each parses its file again when the plan is redone).
    """
    sources = sources or SourceCache()
    result = Plan()
    wanted: list[tuple[str, set[Repair]]] = []
    for chain in chains:
        repairs = {f.repair for f in chain.findings if f.repair is not None}
        if not repairs:
            continue
        why = _unrepairable(chain, repairs, read_only, excluded)
        if why:
            result.refused[chain.arch] = [why]
        else:
            wanted.append((chain.arch, repairs))
    refused: dict[Repair, str] = {}
    while True:
        kept = {r for _, repairs in wanted if not repairs & refused.keys() for r in repairs}
        result.edits = _rewrites(plan_repairs(kept), interfaces_dir, sources, workers)
        new = {r: why for edit in result.edits for r, why in edit.refused if r not in refused}
        if not new:
            break
        refused.update(new)
    for arch, repairs in wanted:
        # One reason per cause: a file whose rewrite fails refuses each repair made in it.
        reasons: dict[str, list[Repair]] = {}
        for repair in sorted(repairs & refused.keys(), key=lambda r: (r.path, r.kind)):
            reasons.setdefault(refused[repair], []).append(repair)
        for why, items in reasons.items():
            where = ", ".join(dict.fromkeys(r.path for r in items))
            kinds = ", ".join(dict.fromkeys(r.kind for r in items))
            result.refused.setdefault(arch, []).append(f"{kinds} in {where} refused: {why}")
    return result


def _rewrites(
    files: dict[Path, list[Repair]],
    interfaces_dir: Path | None,
    sources: SourceCache,
    workers: Executor | None,
) -> list[FileEdit]:
    """`rewrite` of each file, in `files`' order; in `workers` when there are several files
    (the largest first, so that it does not finish last)."""
    if workers is None or len(files) < 2:
        return [rewrite(path, items, interfaces_dir, sources) for path, items in files.items()]
    sized = sorted(files, key=lambda path: -sources.size(path))
    started = {
        path: workers.submit(rewrite, path, files[path], interfaces_dir, sources.alone(path))
        for path in sized
    }
    return [started[path].result() for path in files]


def _unrepairable(
    chain: Chain,
    repairs: set[Repair],
    read_only: Path | None,
    excluded: Callable[[str], bool] | None,
) -> str | None:
    """Why the target cannot be repaired whatever the codemods say, or None."""
    unfixable = [f for f in chain.findings if f.severity is Severity.ERROR and not f.repair]
    if unfixable:
        # A code fix repairs elsewhere says why not here; the others have no codemod at all.
        return "; ".join(
            dict.fromkeys(
                f"{f.code} cannot be repaired here: {f.fix_refused}"
                if f.fix_refused
                else f"{f.code} has no automatic fix"
                for f in unfixable
            )
        )
    if read_only is not None:
        cached = sorted(
            {r.path for r in repairs if Path(r.path).resolve().is_relative_to(read_only)}
        )
        if cached:
            return (
                f"its repair needs {', '.join(cached)}, in a cached release that is not yours "
                "to edit: run fix on a checkout or a copy of the sources"
            )
    if excluded is not None:
        outside = sorted({r.path for r in repairs if excluded(r.path)})
        if outside:
            return f"its repair needs {', '.join(outside)}, which the configuration excludes"
    return None
