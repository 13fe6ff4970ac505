"""Summarising the files an index reads: in worker processes, or here for a few.

A cache miss is parsed by `parse_job`, in a worker when there are enough of them to pay for
one; `ParsesAhead` starts the parses a run will need before any index asks. A summary made for
some of a file's classes leaves the others' bodies unread: `rest_of` asks for them later and
`add_bodies` puts them into the summary already handed out.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path

from eagle3lint.index.cache import SummaryCache, content_key
from eagle3lint.index.model import BodySpan, FileSummary
from eagle3lint.signals import worker_pool
from eagle3lint.sources.files import (
    UnreadableSource,
    check_syntax,
    decode_source,
    decode_text,
    read_source_bytes,
)

INLINE_PARSE_LIMIT = 6
"""Below this many cache misses, those the workers did not take at once are parsed here
rather than queued for them."""

WORKER_MIN_BYTES = 64 * 1024
"""A wave of cache misses smaller than this is parsed here, unless the workers run already:
it parses in about 0.1 s, and each worker costs 0.1-0.3 s of CPU to start and import libcst.
A release's first waves pass it (its `interfaces.py` alone is 66 KB) and start the workers as
early as before; a small tree's never do (a 35-file fixture checked cold took 0.9 s of CPU
here, 1.65 s with two workers, and 40 % more wall time)."""


ParseResult = tuple[str, FileSummary | None, str, int | None, str]
"""(relpath, summary, cache key or error message, error line, error code)."""

ParseJob = tuple[str, bytes, str, tuple[str, ...] | None, list[BodySpan] | None]
"""(relpath, bytes, cache key, the classes to read (None: all of them), and where the class
bodies are when a summary of these bytes said so: then those classes are parsed alone, for a
summary that holds them and nothing else)."""


def parse_job(job: ParseJob) -> ParseResult:
    """Worker: summarise one file; whatever goes wrong becomes an error for that file alone."""
    # libcst costs a third of a second to import; a warm run never parses, so never pays it.
    import libcst as cst

    from eagle3lint.index.extract import summarize, summarize_bodies

    relpath, data, key, wanted, bodies = job
    try:
        if bodies is not None and wanted is not None:
            # Bytes a summary was made of: they passed the nesting and syntax checks then.
            text = decode_text(data)
            summary = summarize_bodies(text, relpath, [b for b in bodies if b.name in wanted])
        else:
            text = decode_source(data)
            summary = summarize(text, relpath, wanted, check_syntax(text, relpath))
    except UnreadableSource as exc:
        return relpath, None, str(exc), exc.line, exc.code
    except cst.ParserSyntaxError as exc:
        # CPython compiled it, so this is syntax newer than the libcst installed.
        return relpath, None, f"syntax error: {exc.message}", exc.raw_line, "EAG901"
    except RecursionError:
        return relpath, None, "too deeply nested to analyse", None, "EAG901"
    except Exception as exc:
        # A bug of the extractor on unusual code must not cost the other files their analysis.
        message = f"internal error while analysing: {type(exc).__name__}: {exc}"
        return relpath, None, message, None, "EAG903"
    return relpath, summary, key, None, ""


class Parses:
    """The cache misses of one `preload`, parsed by the index's worker processes or here.

    Once the misses are worth workers (`WORKER_MIN_BYTES`, or the workers run already), the
    first start at once, one per worker; the rest wait until every miss is known, and go
    largest first so that one big file does not finish last. Results come back in the
    order they always did: the modules' order for a few, largest first for many."""

    def __init__(
        self,
        pool: Callable[[], ProcessPoolExecutor] | None,
        workers: int,
        ahead: dict[str, tuple[str, Future[ParseResult]]],
        running: bool = False,
    ) -> None:
        """`running`: whether `pool` has started its workers already (then using them costs
        nothing more, however few the misses)."""
        self.pool = pool
        self.workers = workers
        self.ahead = ahead
        self.running = running
        self.jobs: dict[str, tuple[int, ParseJob]] = {}
        self.started: dict[str, Future[ParseResult]] = {}
        self.size = 0

    def add(self, job: ParseJob, position: int) -> None:
        self.jobs[job[0]] = (position, job)
        self.size += len(job[1])
        early = self.ahead.pop(job[0], None)
        # A parse started ahead is of the bytes read then (and of every class): used only if
        # these are the same.
        if early is not None and early[0] == job[2]:
            self.started[job[0]] = early[1]
        elif (pool := self._paid_pool()) is not None and len(self.started) < self.workers:
            self.started[job[0]] = pool().submit(parse_job, job)

    def _paid_pool(self) -> Callable[[], ProcessPoolExecutor] | None:
        """The pool, when the wave's misses known so far are worth its workers
        (`WORKER_MIN_BYTES`)."""
        worth = self.running or self.size >= WORKER_MIN_BYTES
        return self.pool if worth else None

    def has(self, relpath: str) -> bool:
        return relpath in self.jobs

    def results(self, idle: Callable[[Callable[[], bool]], None] | None) -> Iterator[ParseResult]:
        """The parse results; `idle(done)` is given the wait for a worker, to work until
        `done()` (or until it has nothing left to do)."""
        order = [job for _, job in sorted(self.jobs.values(), key=lambda item: item[0])]
        if len(order) >= INLINE_PARSE_LIMIT:
            order = sorted(order, key=lambda job: -len(job[1]))
        paid = self._paid_pool()
        if len(order) >= INLINE_PARSE_LIMIT and paid is not None:
            pool = paid()
            for job in order:
                if job[0] not in self.started:
                    self.started[job[0]] = pool.submit(parse_job, job)
        # Too few to wait for a pool: what did not start there is parsed here meanwhile.
        for job in order:
            started = self.started.get(job[0])
            if started is None:
                yield parse_job(job)
                continue
            if idle is not None and not started.done():
                idle(started.done)
            yield started.result()


class ParsesAhead:
    """Parses started before any index asks for them: the files a previous run of the same
    check summarised that have changed since (after an edit, the edited file), started as soon
    as the run cache says so. The worker then imports libcst and parses while this process
    starts up, reads the contract and loads the other summaries. An index takes them over
    (`ProjectIndex(ahead=...)`) and uses a parse only for the bytes it reads itself, so a
    wrong guess costs a parse, never a result."""

    def __init__(self, cache: SummaryCache | None, jobs: int | None) -> None:
        self.cache = cache
        self.jobs = jobs or os.cpu_count() or 1
        self.pool: ProcessPoolExecutor | None = None
        self.started: dict[str, tuple[str, Future[ParseResult]]] = {}
        """By path relative to the import root: (cache key, result)."""

    def start(self, files: dict[str, str]) -> None:
        """Parse the files at these paths (path → path relative to its import root) whose
        summaries are not cached, in worker processes (none with one job)."""
        if self.jobs <= 1:
            return
        for path, relpath in files.items():
            try:
                data = read_source_bytes(Path(path))
            except UnreadableSource:
                continue  # the run that reads it reports why
            key = content_key(data, relpath)
            if self.started.get(relpath, ("",))[0] == key:
                continue  # started already
            if self.cache is None or not self.cache.holds(key):
                if self.pool is None:
                    self.pool = worker_pool(self.jobs)
                # The classes the run will read are not known yet: all of them are.
                job: ParseJob = (relpath, data, key, None, None)
                self.started[relpath] = (key, self.pool.submit(parse_job, job))

    def close(self) -> None:
        """Stop the workers, when no index took them over."""
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=True)
            self.pool = None


def has_unread(summary: FileSummary, names: tuple[str, ...] | None) -> bool:
    """Whether any class of `names` (None: any class) has its body unread in `summary`."""
    return bool(summary.unread) and (names is None or not set(names).isdisjoint(summary.unread))


def rest_of(job: ParseJob, summary: FileSummary) -> ParseJob:
    """`job` reduced to reading the bodies of its classes that `summary` left unread."""
    wanted = job[3]
    missing = tuple(n for n in summary.unread if wanted is None or n in wanted)
    return (*job[:3], missing, summary.bodies)


def add_bodies(into: FileSummary, read: FileSummary) -> None:
    """Put the class bodies `read` has and `into` left unread into `into`, in place: the
    class references handed out hold it."""
    still = set(read.unread)
    now = {name for name in into.unread if name in read.classes and name not in still}
    for name in now:
        into.classes[name] = read.classes[name]
    into.unread = [name for name in into.unread if name not in now]
    if not into.unread:
        into.bodies = []
