"""The index of a whole source tree: summaries loaded on demand, names resolved across files.

Summaries are loaded lazily, so `--arch X` reads only the files X needs. A full check first
`preload`s the files it knows it will need, parsing cache misses in a process pool.
"""

from __future__ import annotations

import dataclasses
import os
import re
import stat
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from eagle3lint.engines.vllm.names import DECODER_ATTR, LANGUAGE_MODEL_ATTR
from eagle3lint.errors import InputError
from eagle3lint.index.cache import SummaryCache, content_key, file_digest
from eagle3lint.index.libraries import Library
from eagle3lint.index.model import (
    BodySpan,
    ClassSummary,
    FactorySummary,
    FileSummary,
    ForwardSummary,
    ImportRef,
)
from eagle3lint.index.modules import module_name_for, resolve_relative
from eagle3lint.signals import worker_pool
from eagle3lint.sources.files import (
    SourceNotFound,
    Stamp,
    UnreadableSource,
    check_syntax,
    decode_source,
    decode_text,
    read_source_bytes,
    read_source_stamped,
)

INLINE_PARSE_LIMIT = 6
"""Below this many cache misses, those the workers did not take at once are parsed here
rather than queued for them."""

_CALL_ARG = re.compile(r"[A-Za-z_][\w.]*")
_CALL = re.compile(r"^([A-Za-z_][\w.]*)\((.*)\)$")
"""A base written as a call: `as_embedding_model(LlamaForCausalLM)`."""
_BOUND = "<bound>"
"""Prefix of a factory class's base already resolved to the qualname of the argument."""


@dataclass(frozen=True, slots=True)
class ClassRef:
    """A class found in the index, with the file that defines it."""

    file: FileSummary
    cls: ClassSummary

    @property
    def qualname(self) -> str:
        return f"{self.file.module}.{self.cls.name}"

    @property
    def name(self) -> str:
        return self.cls.name


@dataclass(frozen=True, slots=True)
class ExternalRef:
    """A name that resolves outside the analysed trees (`torch.nn.Module`) or not at all."""

    text: str


@dataclass(frozen=True, slots=True)
class ModuleRef:
    module: str


Resolved = ClassRef | ExternalRef | ModuleRef


@dataclass(frozen=True, slots=True)
class SourceFile:
    """A file of an analysed tree: absolute path, and path relative to its import root."""

    path: Path
    relpath: str


ParseResult = tuple[str, FileSummary | None, str, int | None, str]
"""(relpath, summary, cache key or error message, error line, error code)."""

ParseJob = tuple[str, bytes, str, tuple[str, ...] | None, list[BodySpan] | None]
"""(relpath, bytes, cache key, the classes to read (None: all of them), and where the class
bodies are when a summary of these bytes said so: then those classes are parsed alone, for a
summary that holds them and nothing else)."""


def _parse_job(job: ParseJob) -> ParseResult:
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


class _Parses:
    """The cache misses of one `preload`, parsed by the index's worker processes or here.

    The first misses start at once, one per worker; the rest wait until every miss is known,
    and go largest first so that one big file does not finish last. Results come back in the
    order they always did: the modules' order for a few, largest first for many."""

    def __init__(
        self,
        pool: Callable[[], ProcessPoolExecutor] | None,
        workers: int,
        ahead: dict[str, tuple[str, Future[ParseResult]]],
    ) -> None:
        self.pool = pool
        self.workers = workers
        self.ahead = ahead
        self.jobs: dict[str, tuple[int, ParseJob]] = {}
        self.started: dict[str, Future[ParseResult]] = {}

    def add(self, job: ParseJob, position: int) -> None:
        self.jobs[job[0]] = (position, job)
        early = self.ahead.pop(job[0], None)
        # A parse started ahead is of the bytes read then (and of every class): used only if
        # these are the same.
        if early is not None and early[0] == job[2]:
            self.started[job[0]] = early[1]
        elif self.pool is not None and len(self.started) < self.workers:
            self.started[job[0]] = self.pool().submit(_parse_job, job)

    def has(self, relpath: str) -> bool:
        return relpath in self.jobs

    def results(self, idle: Callable[[Callable[[], bool]], None] | None) -> Iterator[ParseResult]:
        """The parse results; `idle(done)` is given the wait for a worker, to work until
        `done()` (or until it has nothing left to do)."""
        order = [job for _, job in sorted(self.jobs.values(), key=lambda item: item[0])]
        if len(order) >= INLINE_PARSE_LIMIT and self.pool is not None:
            order = sorted(order, key=lambda job: -len(job[1]))
            pool = self.pool()
            for job in order:
                if job[0] not in self.started:
                    self.started[job[0]] = pool.submit(_parse_job, job)
        # Too few to wait for a pool: what did not start there is parsed here meanwhile.
        for job in order:
            started = self.started.get(job[0])
            if started is None:
                yield _parse_job(job)
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
                self.started[relpath] = (key, self.pool.submit(_parse_job, job))

    def close(self) -> None:
        """Stop the workers, when no index took them over."""
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=True)
            self.pool = None


class ProjectIndex:
    """Summaries of the files under one or more import roots, with name resolution."""

    def __init__(
        self,
        roots: Iterable[Path],
        cache: SummaryCache | None = None,
        jobs: int | None = None,
        ahead: ParsesAhead | None = None,
        libraries: Iterable[Library] = (),
    ) -> None:
        self.roots = [r.resolve() for r in roots]
        self.libraries = list(libraries)
        """Installed packages some of whose modules are read too (`index.libraries`)."""
        self.cache = cache
        self.jobs = jobs or os.cpu_count() or 1
        self.errors: list[InputError] = []
        self._by_module: dict[str, FileSummary | None] = {}
        self._files: dict[str, SourceFile | None] = {}
        self._mro: dict[str, list[ClassRef | ExternalRef]] = {}
        self.digests: dict[str, str] = {}
        """Digest of the bytes read from each file, for the whole-run cache."""
        self.texts: dict[str, bytes] = {}
        """The bytes read from each file, by path: suppressions and `fix` read them here."""
        self.stamps: dict[str, Stamp] = {}
        """What `stat` said of each file as it was read, where that tells a later change
        (`sources.files.stamp_of`): the whole-run cache then need not read it again."""
        self._outside: dict[str, str | None] = {}
        """Files the run read besides module summaries (the contract's runner and config
        files, --hf-config): path → digest, "" when unreadable, None when absent."""
        self.memo: dict[str, object] = {}
        """Facts derived from the summaries once per run (such as the registry's entries)."""
        self.on_load: Callable[[], None] | None = None
        """Called once per file summarised, parsed or from the cache (a progress hook)."""
        self.relative_home: str | None = None
        """The package a relative import resolves in when nothing beside the importing file
        provides it: an out-of-tree model file copied from vLLM (`from .interfaces import
        SupportsEagle3`) means its tree's models package."""
        self._workers: ProcessPoolExecutor | None = None
        self._parsing: dict[str, tuple[str, Future[ParseResult]]] = {}
        """Parses started ahead (`ParsesAhead`), by relative path: (cache key, result)."""
        if ahead is not None:
            self._workers, self._parsing, ahead.pool = ahead.pool, ahead.started, None
        self._keys: dict[str, str] = {}
        """The cache key of each file read, by path."""
        self._loaded_ahead: dict[str, tuple[bytes, Stamp | None, str, FileSummary]] = {}
        """Files read while a worker parsed (`read_ahead`), by path: their bytes, stamp,
        cache key and cached summary."""

    def _pool(self) -> ProcessPoolExecutor:
        """The parser processes, started at the first cache miss and kept until `close`: each
        spends a third of a second importing libcst, which a second wave of misses reuses."""
        if self._workers is None:
            self._workers = worker_pool(self.jobs)
        return self._workers

    def close(self) -> None:
        """Stop the parser processes (a later cache miss starts them again)."""
        if self._workers is not None:
            self._workers.shutdown(cancel_futures=True)
            self._workers = None

    # -- files ----------------------------------------------------------------------------
    def source_file(self, module: str) -> SourceFile | None:
        if module in self._files:
            return self._files[module]
        found = None
        for root in self._roots_for(module):
            for candidate in _candidates(root, module):
                # Anything there but a folder is the module: a FIFO, a device or a dangling
                # link is then named as unreadable instead of the module seeming absent.
                if _present(candidate):
                    found = SourceFile(candidate, candidate.relative_to(root).as_posix())
                    break
            if found:
                break
        self._files[module] = found
        return found

    def _roots_for(self, module: str) -> list[Path]:
        """Where `module` is looked for: the analysed trees, then a library that reads it."""
        return self.roots + [lib.folder for lib in self.libraries if lib.reads(module)]

    def note_absent(self, path: Path) -> None:
        """Note a path the run looked for a file at and did not find among the `inputs`."""
        self._outside.setdefault(str(path), None)

    def module_of(self, path: Path) -> str | None:
        """Module name of a file under one of the roots: where it sits, not where a symlink
        leads (a model file linked from outside its tree is still that tree's module)."""
        path = Path(os.path.abspath(path))
        path = path.parent.resolve() / path.name
        for root in self.roots:
            if path.is_relative_to(root):
                rel = path.relative_to(root).as_posix()
                module = module_name_for(rel)[0]
                self._files.setdefault(module, SourceFile(path, rel))
                return module
        return None

    def read_outside(self, path: Path) -> bytes:
        """The bytes of a file the run reads besides module summaries (the contract's runner
        and config files), noted among the index's `inputs`, absent or unreadable too."""
        try:
            data, stamp = read_source_stamped(path)
        except SourceNotFound:
            self._outside[str(path)] = None
            raise
        except UnreadableSource:
            self._outside[str(path)] = ""
            raise
        self.note_outside(path, data)
        self._note_stamp(str(path), stamp)
        return data

    def _note_stamp(self, path: str, stamp: Stamp | None) -> None:
        if stamp is not None:
            self.stamps[path] = stamp

    def note_outside(self, path: Path, data: bytes) -> None:
        """Note the bytes of a file read elsewhere (`--hf-config`) among the `inputs`."""
        self._outside[str(path)] = file_digest(data)
        self.texts[str(path)] = data

    def source_bytes(self, path: str) -> bytes | None:
        """The bytes this index read from the file at `path` (as `display_path` gives it)."""
        return self.texts.get(path)

    def inputs(
        self,
    ) -> tuple[dict[str, str], list[str], dict[str, str], dict[str, Stamp]]:
        """What decided this run's results: each file it found (with the digest of the bytes
        it read, or "" when it only saw the file exist), each path it looked for a file at and
        did not find, the path relative to its import root of each file it summarised, and
        the `stamps`."""
        present = {
            str(source.path): self.digests.get(str(source.path), "")
            for source in self._files.values()
            if source is not None
        }
        absent = [
            str(candidate)
            for module, source in self._files.items()
            if source is None
            for root in self._roots_for(module)
            for candidate in _candidates(root, module)
        ]
        summarised = {
            str(source.path): source.relpath
            for source in self._files.values()
            if source is not None and str(source.path) in self.digests
        }
        for path, digest in self._outside.items():
            if digest is None:
                absent.append(path)
            else:
                present.setdefault(path, digest)
        return present, sorted(set(absent)), summarised, self.stamps

    def error_for(self, module: str) -> InputError | None:
        """The input error recorded when the file of `module` could not be read or parsed."""
        source = self.source_file(module)
        if source is None or self._by_module.get(module) is not None:
            return None
        return next((e for e in self.errors if e.path == str(source.path)), None)

    def display_path(self, file: FileSummary) -> str:
        source = self.source_file(file.module)
        return str(source.path) if source else file.path

    # -- summaries ------------------------------------------------------------------------
    def summary(self, module: str) -> FileSummary | None:
        """The summary of `module`'s file; the bodies of its top-level classes are read when
        a class is asked for (`class_ref`, `resolve`)."""
        if module not in self._by_module:
            self.preload([module], wanted={module: ()})
        return self._by_module.get(module)

    def preload(
        self,
        modules: Iterable[str],
        idle: Callable[[Callable[[], bool]], None] | None = None,
        wanted: Mapping[str, Collection[str]] | None = None,
    ) -> None:
        """Load the summaries of `modules`, parsing cache misses in parallel.

        A module `wanted` names is summarised for those classes alone, the bodies of its other
        top-level classes left unread (`index.skim`); one loaded before with some of them
        unread is read again, and the bodies read then are added to the summary already handed
        out. Files are read and their cache entries looked for first, so that the misses
        (after an edit, the edited file) go to a worker at once and are parsed there, libcst
        imported, while this process loads the cached summaries of the other files, then does
        `idle`'s work (see `_Parses.results`)."""
        parses = _Parses(self._pool if self.jobs > 1 else None, self.jobs, self._parsing)
        pending: dict[str, str] = {}
        found: list[tuple[str, ParseJob, FileSummary | None]] = []
        for module in dict.fromkeys(modules):
            names = None if wanted is None or module not in wanted else tuple(wanted[module])
            if module in self._by_module:
                loaded = self._by_module[module]
                source = self.source_file(module)
                if loaded is not None and source is not None and _unread(loaded, names):
                    path = str(source.path)
                    job = (source.relpath, self.texts[path], self._keys[path], names, None)
                    pending[source.relpath] = module
                    parses.add(_rest_of(job, loaded), len(found))
                continue
            source = self.source_file(module)
            self._by_module[module] = None
            if source is None:
                continue
            path = str(source.path)
            ahead = self._loaded_ahead.pop(path, None)
            if ahead is not None:
                data, stamp, key, cached = ahead
            else:
                try:
                    data, stamp = read_source_stamped(source.path)
                except UnreadableSource as exc:
                    self.errors.append(InputError(path, str(exc), code=exc.code))
                    continue
                key, cached = content_key(data, source.relpath), None
            self.digests[path] = file_digest(data)
            self.texts[path] = data
            self._keys[path] = key
            self._note_stamp(path, stamp)
            job = (source.relpath, data, key, names, None)
            pending[source.relpath] = module
            found.append((module, job, cached))
            if cached is None and (self.cache is None or not self.cache.holds(key)):
                parses.add(job, len(found))
        for position, (module, job, cached) in enumerate(found, 1):
            if parses.has(job[0]):
                continue
            if cached is None and self.cache:
                cached = self.cache.load(job[2])
            if cached is None:
                parses.add(job, position)  # an entry that does not load is a miss
                continue
            self._by_module[module] = cached
            if self.on_load:
                self.on_load()
            if _unread(cached, job[3]):
                # Cached by a run that read other classes: the bodies missing are read now.
                parses.add(_rest_of(job, cached), position)
        for relpath, summary, detail, line, code in parses.results(idle):
            module = pending[relpath]
            if summary is None:
                source = self.source_file(module)
                self.errors.append(
                    InputError(str(source.path if source else relpath), detail, line, code)
                )
                continue
            handed_out = self._by_module.get(module)
            if handed_out is not None:
                _add_bodies(handed_out, summary)
                summary = handed_out
            else:
                self._by_module[module] = summary
                if self.on_load:
                    self.on_load()
            if self.cache and detail:
                self.cache.store(detail, summary)

    def preload_closure(self, roots: Iterable[tuple[str, str]]) -> None:
        """Load the files that resolving the classes `roots` ((module, name) pairs) will need.

        Resolution follows bases, the decoder a model builds and per-platform variants into
        other files; fetching those wave after wave, each wave parsed in parallel, keeps a cold
        run from parsing them one at a time later. Only names the classes really use are
        followed, so attention layers and other helpers are never parsed.
        """
        frontier = set(roots)
        seen: set[tuple[str, str]] = set()
        while frontier:
            ahead = _LoadAhead(self, frontier, seen)
            wanted: dict[str, set[str]] = {}
            for module, name in frontier:
                wanted.setdefault(module, set()).add(name)
            self.preload(sorted(wanted), ahead.run, wanted)
            seen |= frontier
            needed: set[tuple[str, str]] = set()
            for module, name in frontier:
                summary = self._by_module.get(module)
                if summary is not None:
                    needed.update(self._needed_by(summary, name))
            frontier = needed - seen

    def read_ahead(self, module: str) -> FileSummary | None:
        """The cached summary of `module`'s file, read with the file's bytes for the `preload`
        that asks for it (as if it read them then); None on a miss, which is left to it."""
        source = self.source_file(module)
        if source is None or self.cache is None:
            return None
        path = str(source.path)
        if path not in self._loaded_ahead:
            try:
                data, stamp = read_source_stamped(source.path)
            except UnreadableSource:
                return None
            key = content_key(data, source.relpath)
            found = self.cache.load(key) if self.cache.holds(key) else None
            if found is None:
                return None
            self._loaded_ahead[path] = (data, stamp, key, found)
        return self._loaded_ahead[path][3]

    def _needed_by(self, summary: FileSummary, name: str) -> Iterator[tuple[str, str]]:
        """The (module, name) pairs that resolving `name` in `summary` looks at next."""
        cls = summary.classes.get(name)
        texts: list[str] = []
        if cls is not None:
            for base in cls.bases:
                call = _CALL.match(base)
                texts += [call[1], *_CALL_ARG.findall(call[2])] if call else [base.split("[")[0]]
            # The decoder layers a model builds: their forwards tell its residual convention.
            layers = (*cls.layer_classes, *cls.layer_params.values())
            for layer in (*layers, *cls.super_init_classes.values()):
                texts += summary.class_maps.get(layer, [layer])
            for attr in (DECODER_ATTR, LANGUAGE_MODEL_ATTR):
                assign = cls.init_assigns.get(attr)
                # A model built by architecture name is found through the registry instead.
                named = assign is not None and assign.architectures
                callee = assign.callee if assign is not None and not named else None
                if callee and callee.startswith("self."):
                    callee = cls.held_callee(callee.removeprefix("self."))
                if callee and not callee.startswith("self."):
                    texts.append(callee)
        elif name in summary.aliases:
            call = _CALL.match(summary.aliases[name])
            texts += [call[1], *_CALL_ARG.findall(call[2])] if call else [summary.aliases[name]]
        else:
            texts.append(name)
        for text in texts:
            head, *rest = text.split(".")
            if head in summary.classes and not rest:
                yield summary.module, head
                continue
            ref = self.imported(summary, head)
            if ref is None:
                lazy = summary.lazy_exports.get(head)
                if lazy:
                    yield lazy, head
                continue
            if ref.name is None:
                if rest:
                    yield ref.module, rest[0]
            elif self.source_file(f"{ref.module}.{ref.name}"):
                if rest:
                    yield f"{ref.module}.{ref.name}", rest[0]
            else:
                yield ref.module, ref.name
        for item in summary.platform_imports:
            if item.local == name and item.ref.name:
                yield item.ref.module, item.ref.name

    def loaded(self) -> list[FileSummary]:
        return [s for s in self._by_module.values() if s is not None]

    # -- names ----------------------------------------------------------------------------
    def imported(self, summary: FileSummary, local: str) -> ImportRef | None:
        """Where the local name `local` of `summary` is imported from (None: not imported)."""
        ref = summary.imports.get(local)
        if ref is None or not ref.written or self.relative_home is None:
            return ref
        beside = ref.name and self.source_file(f"{ref.module}.{ref.name}")
        if beside or self.source_file(ref.module):
            return ref
        target = ref.written.lstrip(".") or None
        level = len(ref.written) - len(target or "")
        home = resolve_relative(f"{self.relative_home}.__init__", False, level, target)
        # Also without a tree (checked against the newest contract): the name is then the
        # one vLLM's own files import, which the contract knows.
        return ImportRef(home, ref.name, ref.written)

    def resolve(self, module: str, name: str, _depth: int = 0) -> Resolved:
        """What `name` means at the top level of `module` (following imports and aliases)."""
        if _depth > 20:
            return ExternalRef(f"{module}.{name}")
        if module not in self._by_module:
            self.preload([module], wanted={module: (name,)})
        summary = self._by_module.get(module)
        if summary is None:
            if self.source_file(f"{module}.{name}"):
                return ModuleRef(f"{module}.{name}")
            return ExternalRef(f"{module}.{name}")
        if name in summary.classes:
            found = self.class_ref(module, name)
            return found if found is not None else ExternalRef(f"{module}.{name}")
        if name in summary.aliases and summary.aliases[name] != name:
            return self._base(module, summary.aliases[name], _depth + 1)
        ref = self.imported(summary, name)
        if ref is None and name in summary.lazy_exports:
            return self.resolve(summary.lazy_exports[name], name, _depth + 1)
        if ref is None:
            if self.source_file(f"{module}.{name}"):
                return ModuleRef(f"{module}.{name}")
            return ExternalRef(f"{module}.{name}")
        if ref.name is None:
            return ModuleRef(ref.module)
        if self.source_file(f"{ref.module}.{ref.name}"):
            return ModuleRef(f"{ref.module}.{ref.name}")
        return self.resolve(ref.module, ref.name, _depth + 1)

    def class_ref(self, module: str, name: str) -> ClassRef | None:
        """The class `name` defined at the top level of `module`, its body read."""
        if module not in self._by_module:
            self.preload([module], wanted={module: (name,)})
        summary = self._by_module.get(module)
        if summary is None or name not in summary.classes:
            return None
        if name in summary.unread:
            self.preload([module], wanted={module: (name,)})
            if name in summary.unread:
                return None  # reading it failed: the file's error says why
        return ClassRef(summary, summary.classes[name])

    def resolve_dotted(self, module: str, text: str, _depth: int = 0) -> Resolved:
        """Resolve `a.b.C` as written in `module`."""
        head, *rest = text.split(".")
        current = self.resolve(module, head, _depth)
        for part in rest:
            if not isinstance(current, ModuleRef):
                return ExternalRef(text)
            current = self.resolve(current.module, part, _depth + 1)
        return current

    def variants(self, module: str, name: str) -> dict[str, ClassRef]:
        """Per-platform classes a package picks with `if current_platform.is_x():` imports."""
        summary = self.summary(module)
        result: dict[str, ClassRef] = {}
        if summary is None:
            return result
        for item in summary.platform_imports:
            if item.local != name:
                continue
            target = (
                self.resolve(item.ref.module, item.ref.name) if item.ref.name else ModuleRef("")
            )
            if isinstance(target, ClassRef):
                result[item.platform] = target
        return result

    def bases(self, ref: ClassRef) -> list[ClassRef | ExternalRef]:
        out: list[ClassRef | ExternalRef] = []
        for base in ref.cls.bases:
            target = self._base(ref.file.module, base)
            if isinstance(target, ClassRef) and target.qualname == ref.qualname:
                target = ExternalRef(base)
            out.append(target if not isinstance(target, ModuleRef) else ExternalRef(base))
        return out

    def _base(self, module: str, text: str, _depth: int = 0) -> Resolved:
        """A base class as written in `module`: a name, or a call of a class factory."""
        if _depth > 20:
            return ExternalRef(text)
        if text.startswith(_BOUND):
            owner, _, name = text.removeprefix(_BOUND).rpartition(".")
            return self.resolve(owner, name, _depth + 1)
        call = _CALL.match(text)
        if call is None:
            return self.resolve_dotted(module, text.split("[")[0], _depth)
        found = self._factory_class(module, call[1], call[2].strip(), _depth + 1)
        return found or ExternalRef(text)

    def _factory_class(
        self, module: str, callee: str, argument: str, _depth: int
    ) -> ClassRef | None:
        """`factory(Arg)` → the class the factory builds, with its parameter bound to Arg."""
        found = self._resolve_factory(module, callee)
        if found is None or "," in argument or "=" in argument:
            return None
        file, factory = found
        arg = self._base(module, argument, _depth)
        if not isinstance(arg, ClassRef):
            return None
        param = re.compile(rf"\b{re.escape(factory.params[0])}\b")
        bound = _BOUND + arg.qualname
        cls = dataclasses.replace(
            factory.cls,
            name=f"{factory.cls.name}[{arg.qualname}]",
            bases=[param.sub(lambda _: bound, b) for b in factory.cls.bases],
        )
        return ClassRef(file, cls)

    def _resolve_factory(
        self, module: str, text: str, depth: int = 0
    ) -> tuple[FileSummary, FactorySummary] | None:
        summary = self.summary(module)
        if summary is None or depth > 20:
            return None
        head, *rest = text.split(".")
        if rest:
            owner = self.resolve(module, head)
            if isinstance(owner, ModuleRef) and len(rest) == 1:
                return self._resolve_factory(owner.module, rest[0], depth + 1)
            return None
        if head in summary.factories:
            return summary, summary.factories[head]
        ref = self.imported(summary, head)
        if ref is not None and ref.name:
            return self._resolve_factory(ref.module, ref.name, depth + 1)
        return None

    def forward_of(self, ref: ClassRef) -> tuple[ClassRef, ForwardSummary] | None:
        """The forward `ref` runs: its own or the nearest inherited one, with its class."""
        for entry in self.mro(ref):
            if isinstance(entry, ClassRef) and entry.cls.forward is not None:
                return entry, entry.cls.forward
        return None

    def mro(self, ref: ClassRef) -> list[ClassRef | ExternalRef]:
        """C3 linearisation over resolved bases; external bases stay as opaque entries."""
        found = self._mro.get(ref.qualname)
        if found is None:
            found = self._mro[ref.qualname] = _c3(ref, self, frozenset())
        return found


class _LoadAhead:
    """While a worker parses a file of a `preload_closure` wave, this process reads the cached
    summaries the next waves will ask for, as far as the summaries loaded so far tell.

    Only what the closure reaches anyway is looked up (the same files and absent paths the
    waves record), never through a file still being parsed."""

    def __init__(
        self, index: ProjectIndex, wave: set[tuple[str, str]], seen: set[tuple[str, str]]
    ) -> None:
        self.index = index
        self.wave = wave
        self.visited = seen | wave
        self.todo: list[tuple[str, str]] | None = None

    def run(self, done: Callable[[], bool]) -> None:
        """Read ahead until `done()` or nothing is left; a later call goes on from there."""
        index = self.index
        if self.todo is None:
            self.todo = [
                pair
                for module, name in sorted(self.wave)
                if (summary := index._by_module.get(module)) is not None
                for pair in index._needed_by(summary, name)
            ]
        while self.todo and not done():
            pair = self.todo.pop()
            if pair in self.visited:
                continue
            self.visited.add(pair)
            module, name = pair
            if module in index._by_module:
                summary = index._by_module[module]  # None: being parsed, or not summarised
            else:
                summary = index.read_ahead(module)
            if summary is not None:
                self.todo += index._needed_by(summary, name)


def _unread(summary: FileSummary, names: tuple[str, ...] | None) -> bool:
    """Whether any class of `names` (None: any class) has its body unread in `summary`."""
    return bool(summary.unread) and (names is None or not set(names).isdisjoint(summary.unread))


def _rest_of(job: ParseJob, summary: FileSummary) -> ParseJob:
    """`job` reduced to reading the bodies of its classes that `summary` left unread."""
    wanted = job[3]
    missing = tuple(n for n in summary.unread if wanted is None or n in wanted)
    return (*job[:3], missing, summary.bodies)


def _add_bodies(into: FileSummary, read: FileSummary) -> None:
    """Put the class bodies `read` has and `into` left unread into `into`, in place: the
    class references handed out hold it."""
    still = set(read.unread)
    now = {name for name in into.unread if name in read.classes and name not in still}
    for name in now:
        into.classes[name] = read.classes[name]
    into.unread = [name for name in into.unread if name not in now]
    if not into.unread:
        into.bodies = []


def _present(candidate: Path) -> bool:
    """Whether something other than a folder is at `candidate`, or might be: a path that
    cannot be looked at (a folder without access) counts, so reading it names the problem."""
    try:
        return not stat.S_ISDIR(os.stat(candidate).st_mode)
    except (FileNotFoundError, NotADirectoryError):
        return os.path.islink(candidate)  # a dangling link: there, and unreadable
    except OSError:
        return True


def _candidates(root: Path, module: str) -> tuple[Path, ...]:
    """Where `module` would be under `root`: a module file or a package (nowhere, for a name
    that is not a dotted module name, such as a registry entry holding a path)."""
    parts = module.split(".")
    if not all(part.isidentifier() for part in parts):
        return ()
    return root.joinpath(*parts).with_suffix(".py"), root.joinpath(*parts, "__init__.py")


def _key(item: ClassRef | ExternalRef) -> str:
    return item.qualname if isinstance(item, ClassRef) else f"<external>{item.text}"


def _c3(ref: ClassRef, index: ProjectIndex, seen: frozenset[str]) -> list[ClassRef | ExternalRef]:
    if ref.qualname in seen:
        return [ref]
    seen = seen | {ref.qualname}
    bases = index.bases(ref)
    sequences: list[list[ClassRef | ExternalRef]] = []
    for base in bases:
        if not isinstance(base, ClassRef):
            sequences.append([base])
        else:
            known = index._mro.get(base.qualname)
            sequences.append(known if known is not None else _c3(base, index, seen))
    sequences.append(list(bases))
    items = {_key(x): x for seq in sequences for x in seq}
    keys = [[_key(x) for x in seq] for seq in sequences if seq]
    result = [_key(ref)]
    while keys:
        for seq in keys:
            head = seq[0]
            if not any(head in other[1:] for other in keys):
                break
        else:
            # Inconsistent hierarchy (Python would refuse it); fall back to depth-first order.
            head = keys[0][0]
        if head not in result:
            result.append(head)
        keys = [rest for seq in keys if (rest := [k for k in seq if k != head])]
    return [ref, *(items[k] for k in result[1:])]
