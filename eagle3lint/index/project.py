"""The index of a whole source tree: summaries loaded on demand, names resolved across files.

Summaries are loaded lazily, so `--arch X` reads only the files X needs. A full check first
`preload`s the files it knows it will need, parsing cache misses in a process pool
(`index.parsing`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterable, Mapping
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path

from eagle3lint.errors import InputError
from eagle3lint.index.cache import SummaryCache, content_key, file_digest
from eagle3lint.index.closure import LoadAhead, needed_by
from eagle3lint.index.hierarchy import c3, resolve_base
from eagle3lint.index.inputs import InputLog
from eagle3lint.index.libraries import Library
from eagle3lint.index.model import FileSummary, ForwardSummary, ImportRef
from eagle3lint.index.modules import candidates, module_name_for, present_at, resolve_relative
from eagle3lint.index.parsing import (
    ParseJob,
    ParseResult,
    Parses,
    ParsesAhead,
    add_bodies,
    has_unread,
    rest_of,
)
from eagle3lint.index.refs import ClassRef, ExternalRef, ModuleRef, Resolved, SourceFile
from eagle3lint.signals import worker_pool
from eagle3lint.sources.files import (
    Stamp,
    UnreadableSource,
    read_source_stamped,
)


class ProjectIndex(InputLog):
    """Summaries of the files under one or more import roots, with name resolution; what
    each verdict read is recorded (`ReadLog`), and what the run read (`InputLog`)."""

    def __init__(
        self,
        roots: Iterable[Path],
        cache: SummaryCache | None = None,
        jobs: int | None = None,
        ahead: ParsesAhead | None = None,
        libraries: Iterable[Library] = (),
    ) -> None:
        super().__init__()
        self.roots = [r.resolve() for r in roots]
        self.libraries = list(libraries)
        """Installed packages some of whose modules are read too (`index.libraries`)."""
        self.cache = cache
        self.jobs = jobs or os.cpu_count() or 1
        self.errors: list[InputError] = []
        self._by_module: dict[str, FileSummary | None] = {}
        self._files: dict[str, SourceFile | None] = {}
        self._mro: dict[str, list[ClassRef | ExternalRef]] = {}
        self._mro_reads: dict[str, frozenset[str]] = {}
        self.on_load: Callable[[], None] | None = None
        """Called once per file summarised, parsed or from the cache (a progress hook). One
        with an `expect(files)` method is also told, before each load, how many files it is
        about to read: a progress line's total (`report.progress.FileProgress`)."""
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

    def workers(self) -> ProcessPoolExecutor | None:
        """The parser processes when this run has started them, else None: other work spread
        over cores goes there rather than paying for processes of its own."""
        return self._workers

    def close(self) -> None:
        """Stop the parser processes (a later cache miss starts them again)."""
        if self._workers is not None:
            self._workers.shutdown(cancel_futures=True)
            self._workers = None

    # -- files ----------------------------------------------------------------------------
    def source_file(self, module: str) -> SourceFile | None:
        self.touch(module)
        if module in self._files:
            return self._files[module]
        found = None
        for root in self._roots_for(module):
            for candidate in candidates(root, module):
                # Anything there but a folder is the module: a FIFO, a device or a dangling
                # link is then named as unreadable instead of the module seeming absent.
                if present_at(candidate):
                    found = SourceFile(candidate, candidate.relative_to(root).as_posix())
                    break
            if found:
                break
        self._files[module] = found
        return found

    def _roots_for(self, module: str) -> list[Path]:
        """Where `module` is looked for: the analysed trees, then a library that reads it."""
        return self.roots + [lib.folder for lib in self.libraries if lib.reads(module)]

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
        self.touch(module)
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
        `idle`'s work (see `Parses.results`)."""
        parses = Parses(
            self._pool if self.jobs > 1 else None,
            self.jobs,
            self._parsing,
            running=self._workers is not None,
        )
        pending: dict[str, str] = {}
        found: list[tuple[str, ParseJob, FileSummary | None]] = []
        for module in dict.fromkeys(modules):
            names = None if wanted is None or module not in wanted else tuple(wanted[module])
            if module in self._by_module:
                loaded = self._by_module[module]
                source = self.source_file(module)
                if loaded is not None and source is not None and has_unread(loaded, names):
                    path = str(source.path)
                    job = (source.relpath, self.texts[path], self._keys[path], names, None)
                    pending[source.relpath] = module
                    parses.add(rest_of(job, loaded), len(found))
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
            self.sizes[path] = len(data)
            self.texts[path] = data
            self._keys[path] = key
            self._note_stamp(path, stamp)
            job = (source.relpath, data, key, names, None)
            pending[source.relpath] = module
            found.append((module, job, cached))
            if cached is None and (self.cache is None or not self.cache.holds(key)):
                parses.add(job, len(found))
        if found and (expect := getattr(self.on_load, "expect", None)) is not None:
            expect(len(found))
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
            if has_unread(cached, job[3]):
                # Cached by a run that read other classes: the bodies missing are read now.
                parses.add(rest_of(job, cached), position)
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
                add_bodies(handed_out, summary)
                summary = handed_out
            else:
                self._by_module[module] = summary
                if self.on_load:
                    self.on_load()
            if self.cache and detail:
                self.cache.store(detail, summary)

    def preload_closure(self, roots: Iterable[tuple[str, str]], waves: bool = True) -> None:
        """Load the files that resolving the classes `roots` ((module, name) pairs) will need.

        Resolution follows bases, the decoder a model builds and per-platform variants into
        other files; fetching those wave after wave, each wave parsed in parallel, keeps a cold
        run from parsing them one at a time later. Only names the classes really use are
        followed, so attention layers and other helpers are never parsed. Not `waves`: after
        the waves of roots that include these, the walk alone (nothing left to load), so that
        a recording notes the names a root's share of those loads read.
        """
        frontier = set(roots)
        seen: set[tuple[str, str]] = set()
        while frontier:
            if waves:
                ahead = LoadAhead(self, self._by_module, frontier, seen)
                wanted: dict[str, set[str]] = {}
                for module, name in frontier:
                    wanted.setdefault(module, set()).add(name)
                self.preload(sorted(wanted), ahead.run, wanted)
            seen |= frontier
            needed: set[tuple[str, str]] = set()
            for module, name in frontier:
                summary = self.summary(module)
                if summary is not None:
                    needed.update(needed_by(self, summary, name))
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

    def loaded(self) -> int:
        """How many modules' summaries the run read: those it loaded, and those the verdicts
        it reused read (`adopt`)."""
        return len({m for m, s in self._by_module.items() if s is not None} | self.adopted)

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
        self.touch(module)
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
            return resolve_base(self, module, summary.aliases[name], _depth + 1)
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
        self.touch(module)
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

    def resolve_callee(
        self, mro: Iterable[ClassRef | ExternalRef], owner: ClassRef, callee: str
    ) -> ClassRef | None:
        """A callee as written in `owner` (`Foo`, `self.model_cls`, `self._init_model`) → the
        class it builds; `self.<name>` is what the first class of `mro` that says holds it."""
        module, text = owner.file.module, callee
        if callee.startswith("self."):
            name = callee.removeprefix("self.")
            held = next(
                (
                    (entry.file.module, found)
                    for entry in mro
                    if isinstance(entry, ClassRef)
                    and (found := entry.cls.held_callee(name)) is not None
                ),
                None,
            )
            if held is None or held[1].startswith("self."):
                return None
            module, text = held
        found = self.resolve_dotted(module, text)
        return found if isinstance(found, ClassRef) else None

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
            target = resolve_base(self, ref.file.module, base)
            if isinstance(target, ClassRef) and target.qualname == ref.qualname:
                target = ExternalRef(base)
            out.append(target if not isinstance(target, ModuleRef) else ExternalRef(base))
        return out

    def forward_of(self, ref: ClassRef) -> tuple[ClassRef, ForwardSummary] | None:
        """The forward that runs `ref`'s layers: its own or the nearest inherited one, with its
        class; past a forward that only returns `super().forward(...)`."""
        for entry in self.mro(ref):
            if isinstance(entry, ClassRef) and entry.cls.forward is not None:
                if entry.cls.forward.returns_super:
                    continue
                return entry, entry.cls.forward
        return None

    def mro(self, ref: ClassRef) -> list[ClassRef | ExternalRef]:
        """C3 linearisation over resolved bases; external bases stay as opaque entries."""
        found = self._mro.get(ref.qualname)
        if found is None:
            with self.recording() as reads:
                found = self._mro[ref.qualname] = c3(ref, self.bases, self._mro)
                # A base's MRO taken from the memo brings the reads that made it.
                for entry in found:
                    if isinstance(entry, ClassRef):
                        self.touch_all(self._mro_reads.get(entry.qualname, ()))
                        self.touch(entry.file.module)
            self._mro_reads[ref.qualname] = frozenset(reads)
        self.touch_all(self._mro_reads[ref.qualname])
        return found
