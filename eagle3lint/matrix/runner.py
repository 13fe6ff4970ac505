"""Check every release of a matrix, several at once, with a progress line per release.

Each release is checked by the caller's `check` function, the one behind `check --format json`
(same engine, same whole-run cache), so a matrix cell is what `check` says. The first release
runs alone with every parser process, filling the per-file summary cache with the files most
releases share; the rest then run side by side, one process each, and mostly parse only the
files they changed.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from eagle3lint.checkrun.options import CheckOptions, discover_for
from eagle3lint.engines import wing_named
from eagle3lint.errors import (
    INCOMPLETE_ANALYSIS,
    UNREADABLE_INPUT,
    DownloadError,
    UnreadableSource,
    UsageError,
)
from eagle3lint.index.cache import SummaryCache, default_cache_dir
from eagle3lint.index.project import ProjectIndex
from eagle3lint.matrix.columns import Column
from eagle3lint.matrix.status import ReleaseProgress
from eagle3lint.report.model import Report
from eagle3lint.signals import stop_pool, worker_pool

JsonReport = dict[str, Any]
CheckJson = Callable[[CheckOptions], JsonReport]
"""Options → the report `check --format json` prints for them."""
Event = tuple[int, str, int]
"""(column number, state, files analysed so far)."""
FILE_EVENT_EVERY = 20

_events: Any = None
"""Where a worker sends its events: the parent's queue in a pool, a callback in-process."""


def check_releases(
    columns: Sequence[Column],
    options: CheckOptions,
    check: CheckJson,
    show_progress: bool,
) -> list[JsonReport]:
    """The report of each column, in the same order."""
    jobs = max(1, options.jobs or os.cpu_count() or 1)
    # With a pool, the first release runs alone first, with every parser process: it fills the
    # summary cache with the files the other releases share.
    pooled = jobs > 1 and len(columns) > 2
    serial = [0] if pooled else list(range(len(columns)))
    reports: list[JsonReport] = [{} for _ in columns]
    with ReleaseProgress([c.spec for c in columns], show_progress).shown() as progress:
        with _events_to(progress.event):
            for number in serial:
                try:
                    reports[number] = _check_column(number, columns[number], options, check)
                except Exception as exc:
                    reports[number] = failed_report(columns[number], exc)
                progress.done(number, reports[number])
        if not pooled:
            return reports
        single = replace(options, jobs=1)
        rest = list(range(1, len(columns)))
        left = _pooled(rest, jobs, columns, single, check, reports, progress)
        # A worker died (a crash, the OOM killer) and took the pool down: each release it left
        # runs again in a pool of its own, so that only the one that kills its worker fails.
        for number in left:
            _pooled([number], 1, columns, single, check, reports, progress)
    return reports


def _pooled(
    numbers: list[int],
    jobs: int,
    columns: Sequence[Column],
    options: CheckOptions,
    check: CheckJson,
    reports: list[JsonReport],
    progress: ReleaseProgress,
) -> list[int]:
    """Check these columns side by side into `reports`; those a broken pool left unchecked."""
    broken = []
    with _pool(min(jobs, len(numbers)), progress) as pool:
        futures: dict[Future[JsonReport], int] = {
            pool.submit(_check_column, number, columns[number], options, check): number
            for number in numbers
        }
        try:
            for future in as_completed(futures):
                number = futures[future]
                try:
                    reports[number] = future.result()
                except BrokenProcessPool as exc:
                    if len(numbers) > 1:
                        broken.append(number)
                        continue
                    reports[number] = failed_report(columns[number], exc)
                except Exception as exc:  # raised by the check, in the worker
                    reports[number] = failed_report(columns[number], exc)
                progress.done(number, reports[number])
        except BaseException:
            stop_pool(pool)  # interrupted: a running check of a release is long
            raise
    return sorted(broken)


def failed_report(column: Column, exc: Exception) -> JsonReport:
    """The report of a release that could not be checked: no target, and why (a download
    refused, a bad wheel, a tree that is not one: EAG902; anything else: EAG903)."""
    if isinstance(exc, DownloadError | UsageError | UnreadableSource):
        code, message = UNREADABLE_INPUT, str(exc)
    elif isinstance(exc, BrokenProcessPool):
        code, message = INCOMPLETE_ANALYSIS, "the process checking it died"
    else:
        detail = next(iter(str(exc).splitlines()), "")
        code, message = INCOMPLETE_ANALYSIS, f"internal error {type(exc).__name__}: {detail}"
    error = {"path": column.spec, "line": None, "code": code, "message": message}
    return {"targets": [], "errors": [error]}


@contextmanager
def _events_to(sink: Callable[[Event], None]) -> Iterator[None]:
    """Events of releases checked in this process go to `sink` while the block runs."""
    global _events
    _events = sink
    try:
        yield
    finally:
        _events = None


@contextmanager
def _pool(workers: int, progress: ReleaseProgress) -> Iterator[ProcessPoolExecutor]:
    """A process pool whose workers report progress to a thread that draws it."""
    events: multiprocessing.Queue[Event | None] = multiprocessing.Queue()
    drawer = threading.Thread(target=_draw, args=(events, progress), daemon=True)
    drawer.start()
    try:
        with worker_pool(workers, _set_queue, (events,)) as pool:
            yield pool
    finally:
        events.put(None)
        drawer.join(timeout=5)


def _draw(events: multiprocessing.Queue[Event | None], progress: ReleaseProgress) -> None:
    while True:
        try:
            event = events.get(timeout=1)
        except queue.Empty:
            continue
        if event is None:
            return
        progress.event(event)


def _set_queue(events: multiprocessing.Queue[Event]) -> None:
    global _events
    _events = events.put


def _emit(number: int, state: str, files: int = 0) -> None:
    if _events is not None:
        _events((number, state, files))


def _check_column(
    number: int, column: Column, options: CheckOptions, check: CheckJson
) -> JsonReport:
    """One release's report; the `--arch` names it does not register are left out (a release
    registering none of them gets a report with its contract and no targets)."""
    if column.version is not None:
        wing = wing_named(column.engine)
        if not wing.is_fetched(column.version):
            _emit(number, "downloading")
        wing.fetch_release(column.version)
    counted = 0

    def on_file() -> None:
        nonlocal counted
        counted += 1
        if counted % FILE_EVENT_EVERY == 0:
            _emit(number, "analysing", counted)

    _emit(number, "analysing")
    release = replace(
        options,
        paths=[column.path] if column.path is not None else [],
        release=column.version,
        release_engine=column.engine,
        progress=False,
        on_file=on_file,
    )
    if options.archs:
        workspace = discover_for(release)
        if workspace.tree is None:
            raise UsageError(f"{column.spec} is not an engine's tree")
        cache = SummaryCache(default_cache_dir()) if options.use_cache else None
        index = ProjectIndex([workspace.tree.parent], cache=cache, jobs=1)
        registered = {entry.arch for entry in workspace.wing.registry(index)}
        release.archs = [a for a in options.archs if a in registered]
        if not release.archs:
            # `check --arch` would refuse the names; the release still has a contract to show.
            wing = workspace.wing
            contract = wing.read_contract(index, workspace.tree, workspace.contract_source)
            contract = wing.for_setup(contract, index, options.platform, None)
            return Report(contract=contract).to_json()
    return check(release)
