"""What a run read, for the caches: the bytes, digest and `stat` stamp of each file, the files
read besides module summaries, and the paths looked at and found empty (`inputs`, which the
whole-run cache keeps), and what each name read was (`state`, which the dependency record keeps).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from eagle3lint.index.cache import file_digest
from eagle3lint.index.modules import candidates
from eagle3lint.index.reads import ReadLog
from eagle3lint.index.refs import SourceFile
from eagle3lint.sources.files import (
    SourceNotFound,
    Stamp,
    UnreadableSource,
    read_source_stamped,
)


class InputLog(ReadLog):
    """The inputs of a `ProjectIndex` (its base: the modules' files are its `source_file`)."""

    _files: dict[str, SourceFile | None]
    source_file: Callable[[str], SourceFile | None]
    _roots_for: Callable[[str], list[Path]]

    def __init__(self) -> None:
        super().__init__()
        self.digests: dict[str, str] = {}
        """Digest of the bytes read from each file, for the whole-run cache."""
        self.sizes: dict[str, int] = {}
        self.texts: dict[str, bytes] = {}
        """The bytes read from each file, by path: suppressions and `fix` read them here."""
        self.stamps: dict[str, Stamp] = {}
        """What `stat` said of each file as it was read, where that tells a later change
        (`sources.files.stamp_of`): the whole-run cache then need not read it again."""
        self._outside: dict[str, str | None] = {}
        """Files the run read besides module summaries (the contract's runner and config
        files, --hf-config): path → digest, "" when unreadable, None when absent."""
        self.adopted: set[str] = set()
        """Modules whose summaries a reused verdict read, in an earlier run (`adopt`)."""

    def note_absent(self, path: Path) -> None:
        """Note a path the run looked for a file at and did not find among the `inputs`."""
        self._outside.setdefault(str(path), None)

    def read_outside(self, path: Path) -> bytes:
        """The bytes of a file the run reads besides module summaries (the contract's runner
        and config files), noted among the index's `inputs`, absent or unreadable too."""
        self.touch(str(path))
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
        self.touch(str(path))
        self._outside[str(path)] = file_digest(data)
        self.texts[str(path)] = data

    def state(self, name: str) -> tuple[str | None, str]:
        """What this run found of `name` (a module, or a path read outside the summaries):
        its file, None when absent, and the digest of the bytes read ("" when only seen to
        exist or unreadable)."""
        if name in self._outside:
            digest = self._outside[name]
            return (None, "") if digest is None else (name, digest)
        source = self._files.get(name) or self.source_file(name)
        path = str(source.path) if source is not None else None
        return path, self.digests.get(path, "") if path is not None else ""

    def source_bytes(self, path: str) -> bytes | None:
        """The bytes this index read from the file at `path` (as `display_path` gives it)."""
        return self.texts.get(path)

    def inputs(
        self,
    ) -> tuple[dict[str, str], list[str], dict[str, str], dict[str, Stamp], dict[str, int]]:
        """What decided this run's results: each file it found (with the digest of the bytes
        it read, or "" when it only saw the file exist), each path it looked for a file at and
        did not find, the path relative to its import root of each file it summarised, the
        `stamps`, and how many bytes it read of each summarised file."""
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
            for candidate in candidates(root, module)
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
        sizes = {path: self.sizes[path] for path in summarised if path in self.sizes}
        return present, sorted(set(absent)), summarised, self.stamps, sizes

    def adopt(
        self, name: str, module: bool, path: str | None, digest: str, stamp: list[int] | None
    ) -> None:
        """Take `name` (a module, or a file read besides the summaries) as read, as the
        record of a verdict this run reuses says it was and the run found it still is
        (`checkrun.dependencies`): among the `inputs`, and the files a summary was read of."""
        if stamp is not None and path is not None and len(stamp) == len(Stamp.__args__):
            self.stamps.setdefault(path, tuple(stamp))  # type: ignore[arg-type]
            self.sizes.setdefault(path, stamp[0])
        if not module:
            self._outside.setdefault(name, None if path is None else digest)
        elif path is not None and digest:
            self.digests.setdefault(path, digest)
            self.adopted.add(name)
