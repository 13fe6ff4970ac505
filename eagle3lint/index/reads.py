"""What a verdict read: the modules and files the index handed out while it was computed.

A target's verdict is a function of the files it read, so recording them per target tells
which targets a change can alter (`checkrun.dependencies`): a change to a file outside a
target's reads cannot change its findings. Reads are recorded where the index hands something
out (a file looked for, a summary, a name resolved, a class read, a file read outside the
summaries), not where it loads, because the second target to ask for a file finds it loaded.
Facts derived once per run and reused (`remembered`, the MRO memo) keep the reads that derived
them and hand them to every later reader, for the same reason.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")


class ReadLog:
    """The open recordings of an index: each read goes to every one (they nest: a fact
    remembered inside a target's recording belongs to both)."""

    def __init__(self) -> None:
        self._recording: list[set[str]] = []
        self._remembered: dict[str, tuple[object, frozenset[str]]] = {}

    def touch(self, name: str) -> None:
        """Note that `name` (a dotted module, or the path of a file read outside the
        summaries) was read."""
        for reads in self._recording:
            reads.add(name)

    def touch_all(self, names: Iterable[str]) -> None:
        for reads in self._recording:
            reads.update(names)

    @contextmanager
    def recording(self) -> Iterator[set[str]]:
        """The names read until the block ends."""
        reads: set[str] = set()
        self._recording.append(reads)
        try:
            yield reads
        finally:
            # By identity: two recordings holding the same names are equal sets.
            self._recording[:] = [each for each in self._recording if each is not reads]

    def remembered(self, key: str, compute: Callable[[], T], passed_on: bool = True) -> T:
        """`compute()`, computed once per run; every caller is noted as reading what the
        first computation read, unless not `passed_on`: then no recording notes those reads,
        for a fact whose every reader also reads, itself, the part it uses."""
        found = self._remembered.get(key)
        if found is None:
            outer = self._recording
            if not passed_on:
                self._recording = []
            try:
                with self.recording() as reads:
                    value = compute()
            finally:
                self._recording = outer
            found = self._remembered[key] = (value, frozenset(reads) if passed_on else frozenset())
        self.touch_all(found[1])
        return found[0]  # type: ignore[return-value]
