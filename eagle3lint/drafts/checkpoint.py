"""A drafter checkpoint's tensor names and shapes, read from safetensors headers.

A `.safetensors` file starts with an 8-byte little-endian header length and a JSON header
mapping each tensor name to `{dtype, shape, data_offsets}`; `model.safetensors.index.json`
maps tensor names to shard files. Those are nearly all `pair` needs: the one tensor whose
values are read is `d2t` (a few hundred KiB of integers, with the standard library); no torch is
imported.
"""

from __future__ import annotations

import array
import os
import struct
import sys
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from eagle3lint.errors import UsageError
from eagle3lint.sources.documents import parse_json, read_json
from eagle3lint.sources.files import UnreadableSource, open_regular

MAX_HEADER_BYTES = 16 * 2**20
"""Largest safetensors header read. The format allows 100 MB (safetensors' `MAX_HEADER_SIZE`),
but a header takes about 100 bytes per tensor: a few KB for a drafter, a few hundred KB for a
shard of the largest models. A 99 MB header of small tensors took 69 s and 1.3 GB to read."""
MAX_CHECKPOINT_HEADER_BYTES = 64 * 2**20
"""Most header bytes read from all the weight files of one checkpoint (its folder can hold, or
link to, the same large-header file many times)."""
INDEX_FILE = "model.safetensors.index.json"


MAX_VALUE_BYTES = 16 * 2**20
"""Largest tensor whose values are read (`d2t`: 8 bytes per draft token, 256 KiB for 32,000)."""
INTEGER_DTYPES = {"I64": ("q", 8), "I32": ("i", 4)}


@dataclass(frozen=True, slots=True)
class Tensor:
    name: str
    dtype: str
    shape: tuple[int, ...]
    file: str
    start: int = 0
    """Where its bytes start in the file (after the 8-byte length and the header)."""
    end: int = 0

    def integers(self) -> list[int] | None:
        """Its values, for an integer vector of at most `MAX_VALUE_BYTES`; None when the file
        holds no such data (a header-only file, another dtype, a short file)."""
        kind = INTEGER_DTYPES.get(self.dtype)
        count = self.shape[0] if len(self.shape) == 1 else -1
        if kind is None or count < 0 or self.end - self.start != count * kind[1]:
            return None
        if self.end - self.start > MAX_VALUE_BYTES:
            return None
        try:
            fd, _ = open_regular(Path(self.file))
            with os.fdopen(fd, "rb") as handle:
                handle.seek(self.start)
                data = handle.read(self.end - self.start)
        except (UnreadableSource, OSError):
            return None
        if len(data) != self.end - self.start:
            return None
        values = array.array(kind[0])
        values.frombytes(data)
        if sys.byteorder == "big":  # safetensors stores little-endian
            values.byteswap()
        return values.tolist()


@dataclass
class Checkpoint:
    """Every tensor of the drafter's weight files, by name."""

    files: list[Path] = field(default_factory=list)
    tensors: dict[str, Tensor] = field(default_factory=dict)

    def find(self, part: str) -> Tensor | None:
        """The first tensor whose name contains `part`, as vLLM's `load_weights` matches."""
        return next((t for name, t in self.tensors.items() if part in name), None)

    def weight(self, module: str) -> Tensor | None:
        """`<module>.weight` under any prefix (`fc.weight`, `model.fc.weight`)."""
        wanted = f"{module}.weight"
        return next(
            (t for n, t in self.tensors.items() if n == wanted or n.endswith(f".{wanted}")), None
        )


def read_header(path: Path) -> dict[str, Tensor]:
    """The tensors one `.safetensors` file declares; UsageError when it is not one."""
    return _read_header(path)[0]


def _read_header(path: Path) -> tuple[dict[str, Tensor], int]:
    """The tensors of one file and the size of its header. Messages quote nothing of the file:
    an index can name one the user never chose (the length field of `/etc/passwd` is its first
    8 bytes)."""
    try:
        fd, _ = open_regular(path)  # not a FIFO or a device: they would block or never end
        with os.fdopen(fd, "rb") as handle:
            size_bytes = handle.read(8)
            if len(size_bytes) < 8:
                raise UsageError(f"--draft-weights: {path} is too short to be a safetensors file")
            (size,) = struct.unpack("<Q", size_bytes)
            if size > MAX_HEADER_BYTES:
                raise UsageError(
                    f"--draft-weights: {path} is not a safetensors file, or one whose header is "
                    f"over the {MAX_HEADER_BYTES // 2**20} MiB read (real ones are far smaller)"
                )
            raw = handle.read(size)
    except UnreadableSource as exc:
        raise UsageError(f"--draft-weights: {path} {exc}") from exc
    except OSError as exc:
        raise UsageError(f"--draft-weights: {path}: {exc.strerror or exc}") from exc
    if len(raw) < size:
        raise UsageError(f"--draft-weights: {path} ends inside its header")
    try:
        header = parse_json(raw)
    except UnreadableSource as exc:
        message = f"--draft-weights: {path} is not a safetensors file: its header {exc}"
        raise UsageError(message) from exc
    if not isinstance(header, dict):
        raise UsageError(f"--draft-weights: {path}'s header is not a JSON object")
    tensors: dict[str, Tensor] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        shape = info.get("shape") if isinstance(info, dict) else None
        if not isinstance(shape, list) or not all(
            isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape
        ):
            raise UsageError(f"--draft-weights: {path}: tensor {name!r} has no valid shape")
        offsets = info.get("data_offsets")
        start = end = 0
        if (
            isinstance(offsets, list)
            and len(offsets) == 2
            and all(isinstance(o, int) and not isinstance(o, bool) and o >= 0 for o in offsets)
            and offsets[0] <= offsets[1]
        ):
            start, end = 8 + size + offsets[0], 8 + size + offsets[1]
        tensors[name] = Tensor(
            name, str(info.get("dtype", "?")), tuple(shape), str(path), start, end
        )
    return tensors, size


def weight_files(folder: Path) -> list[Path]:
    """The weight files of a checkpoint folder: the shards its index names, else every
    `*.safetensors` in it. A shard is named by a path inside the folder (see `_shard`)."""
    index = folder / INDEX_FILE
    if os.path.lexists(index):
        try:
            weight_map = read_json(index, "index")["weight_map"]
            names = set(weight_map.values())
        except UnreadableSource as exc:
            raise UsageError(f"--draft: {index} {exc}") from exc
        except (KeyError, TypeError, AttributeError) as e:
            raise UsageError(f"--draft: {index} is not a safetensors index (no weight_map)") from e
        shards = sorted({_shard(index, name) for name in names})
        missing = [s for s in shards if not (folder / s).is_file()]
        if missing:
            raise UsageError(f"--draft: {index} names shards that are not there: {missing}")
        return [folder / s for s in shards]
    return sorted(folder.glob("*.safetensors"))


def _shard(index: Path, name: object) -> str:
    """A shard's path relative to the checkpoint folder, as the index names it: relative, with
    no `..`, so that an index cannot point `pair` at `/etc/passwd` or `../../secret`. A shard
    that is a symbolic link is followed (Hugging Face's cache links every file of a snapshot to
    `../../blobs/`): reading it shows nothing of it but its tensor names and shapes."""
    shard = PurePosixPath(name) if isinstance(name, str) and name else None
    if shard is None or shard.is_absolute() or ".." in shard.parts or "\\" in str(name):
        raise UsageError(
            f"--draft: {index} names a shard outside its folder: {name!r} (shards are named "
            "by paths relative to the index's folder, without `..`)"
        )
    return str(shard)


def read_checkpoint(files: list[Path]) -> Checkpoint:
    """The tensors of all `files` (a name in two files keeps the first)."""
    checkpoint = Checkpoint(files=list(files))
    read = 0
    for path in files:
        tensors, size = _read_header(path)
        read += size
        if read > MAX_CHECKPOINT_HEADER_BYTES:
            raise UsageError(
                f"--draft-weights: the headers of these {len(files)} files hold more than "
                f"{MAX_CHECKPOINT_HEADER_BYTES // 2**20} MiB, more than any drafter's: not read"
            )
        for name, tensor in tensors.items():
            checkpoint.tensors.setdefault(name, tensor)
    return checkpoint
