"""What resolving a class reads next: the files `ProjectIndex.preload_closure` fetches wave by
wave, and the cached summaries of later waves read while a worker parses this one."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING

from eagle3lint.engines.vllm.names import DECODER_ATTR, LANGUAGE_MODEL_ATTR
from eagle3lint.index.hierarchy import CALL, CALL_ARG
from eagle3lint.index.model import FileSummary

if TYPE_CHECKING:
    from eagle3lint.index.project import ProjectIndex


def needed_by(index: ProjectIndex, summary: FileSummary, name: str) -> Iterator[tuple[str, str]]:
    """The (module, name) pairs that resolving `name` in `summary` looks at next."""
    cls = summary.classes.get(name)
    texts: list[str] = []
    if cls is not None:
        for base in cls.bases:
            call = CALL.match(base)
            texts += [call[1], *CALL_ARG.findall(call[2])] if call else [base.split("[")[0]]
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
        call = CALL.match(summary.aliases[name])
        texts += [call[1], *CALL_ARG.findall(call[2])] if call else [summary.aliases[name]]
    else:
        texts.append(name)
    for text in texts:
        head, *rest = text.split(".")
        if head in summary.classes and not rest:
            yield summary.module, head
            continue
        ref = index.imported(summary, head)
        if ref is None:
            lazy = summary.lazy_exports.get(head)
            if lazy:
                yield lazy, head
            continue
        if ref.name is None:
            if rest:
                yield ref.module, rest[0]
        elif index.source_file(f"{ref.module}.{ref.name}"):
            if rest:
                yield f"{ref.module}.{ref.name}", rest[0]
        else:
            yield ref.module, ref.name
    for item in summary.platform_imports:
        if item.local == name and item.ref.name:
            yield item.ref.module, item.ref.name


class LoadAhead:
    """While a worker parses a file of a `preload_closure` wave, this process reads the cached
    summaries the next waves will ask for, as far as the summaries loaded so far tell.

    Only what the closure reaches anyway is looked up (the same files and absent paths the
    waves record), never through a file still being parsed."""

    def __init__(
        self,
        index: ProjectIndex,
        loaded: Mapping[str, FileSummary | None],
        wave: set[tuple[str, str]],
        seen: set[tuple[str, str]],
    ) -> None:
        self.index = index
        self.loaded = loaded
        """The index's summaries by module (None: being parsed, or not summarised)."""
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
                if (summary := self.loaded.get(module)) is not None
                for pair in needed_by(index, summary, name)
            ]
        while self.todo and not done():
            pair = self.todo.pop()
            if pair in self.visited:
                continue
            self.visited.add(pair)
            module, name = pair
            summary = self.loaded[module] if module in self.loaded else index.read_ahead(module)
            if summary is not None:
                self.todo += needed_by(index, summary, name)
