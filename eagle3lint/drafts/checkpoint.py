"""A drafter checkpoint's tensor names and shapes, read from safetensors headers.

A `.safetensors` file starts with an 8-byte little-endian header length and a JSON header
mapping each tensor name to `{dtype, shape, data_offsets}`; `model.safetensors.index.json`
maps tensor names to shard files. Those are nearly all `pair` needs: the one tensor whose
values are read is `d2t` (a few hundred KiB of integers, with the standard library); no torch is
imported.

The header's layout is checked as the safetensors library checks it before vLLM loads a tensor
(`Metadata::validate` and `SafeTensors::read_metadata` of its Rust crate): sorted by offsets,
the tensors tile the bytes after the header exactly (no hole, no overlap, offsets in order,
nothing past the end or left over), each spans its dtype times its shape. A file the library
refuses keeps its tensors for the other checks, and its reason (`Checkpoint.refused`).
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
DTYPE_BITS = {
    **dict.fromkeys(("F4",), 4),
    **dict.fromkeys(("F6_E2M3", "F6_E3M2"), 6),
    **dict.fromkeys(("BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "F8_E8M0"), 8),
    **dict.fromkeys(("I16", "U16", "F16", "BF16"), 16),
    **dict.fromkeys(("I32", "U32", "F32"), 32),
    **dict.fromkeys(("I64", "U64", "F64", "C64"), 64),
}
"""Bits per element of each dtype safetensors knows (its `Dtype::bitsize`, 0.6). A dtype not
here is not refused: a newer safetensors may know it; its span is then not checked."""
USIZE = 2**64
"""Offsets and sizes are `usize` in the safetensors crate: one this large fails to load."""


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
    refused: dict[str, str] = field(default_factory=dict)
    """Files the safetensors library refuses to load, with why (see `layout_refusal`)."""

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


def _read_header(path: Path) -> tuple[dict[str, Tensor], int, str]:
    """The tensors of one file, the size of its header and why the safetensors library refuses
    the file ("" when it loads it). Messages quote nothing of the file: an index can name one
    the user never chose (the length field of `/etc/passwd` is its first 8 bytes)."""
    try:
        fd, opened = open_regular(path)  # not a FIFO or a device: they would block or never end
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
        offsets = _offsets(info)
        start, end = offsets if offsets is not None and offsets[0] <= offsets[1] else (0, 0)
        tensors[name] = Tensor(
            name,
            str(info.get("dtype", "?")),
            tuple(shape),
            str(path),
            8 + size + start,
            8 + size + end,
        )
    return tensors, size, layout_refusal(header, opened.st_size - 8 - size)


def _offsets(info: dict[str, object]) -> tuple[int, int] | None:
    """A tensor's `data_offsets` as the safetensors crate reads them (two `usize`), else None."""
    offsets = info.get("data_offsets")
    if not isinstance(offsets, list) or len(offsets) != 2:
        return None
    begin, end = offsets
    if all(isinstance(o, int) and not isinstance(o, bool) and 0 <= o < USIZE for o in offsets):
        return begin, end
    return None


def layout_refusal(header: dict[str, object], data_size: int) -> str:
    """Why the safetensors library refuses a file with this header and `data_size` bytes after
    it (what is wrong, then the library's error in brackets), or "" when it loads it. Tensors
    are taken in the order of their offsets, as the library sorts them; its first complaint is
    given."""
    metadata = header.get("__metadata__")
    if metadata is not None and not (
        isinstance(metadata, dict) and all(isinstance(v, str) for v in metadata.values())
    ):
        return "its __metadata__ is not an object of strings (InvalidHeaderDeserialization)"
    spans: list[tuple[int, int, str, dict[str, object]]] = []
    for name, info in header.items():
        if name == "__metadata__" or not isinstance(info, dict):
            continue
        offsets = _offsets(info)
        if offsets is None:
            return (
                f"tensor {name!r} has no data_offsets of two non-negative integers "
                "(InvalidHeaderDeserialization)"
            )
        if not isinstance(info.get("dtype"), str):
            return f"tensor {name!r} has no dtype (InvalidHeaderDeserialization)"
        spans.append((*offsets, name, info))
    covered = 0
    for begin, end, name, info in sorted(spans, key=lambda span: span[:2]):
        if end < begin:
            return f"tensor {name!r} has data_offsets that end before they begin (InvalidOffset)"
        if begin < covered:
            return f"tensor {name!r} overlaps the tensor before it (InvalidOffset)"
        if begin > covered:
            return f"the bytes before tensor {name!r} belong to no tensor (InvalidOffset)"
        covered = end
        wrong = _span_refusal(name, info, end - begin)
        if wrong:
            return wrong
    if covered > data_size:
        return "its tensors end past the end of the file (MetadataIncompleteBuffer)"
    if covered < data_size:
        return "the bytes after its last tensor belong to no tensor (MetadataIncompleteBuffer)"
    return ""


def _span_refusal(name: str, info: dict[str, object], span: int) -> str:
    """Why a tensor's span is not its dtype times its shape ("" when it is, or the dtype is not
    one `DTYPE_BITS` knows)."""
    dtype, shape = str(info["dtype"]), info.get("shape")
    bits = DTYPE_BITS.get(dtype)
    if bits is None or not isinstance(shape, list):
        return ""
    count = 1
    for dim in shape:  # stops at the first overflow, as the crate's checked product does
        count *= dim
        if count * bits >= USIZE:
            return f"tensor {name!r} is too large to address (ValidationOverflow)"
    size, odd = divmod(count * bits, 8)
    what = f"{dtype} x {shape}"
    if odd:
        return f"tensor {name!r} ({what}) is not a whole number of bytes (MisalignedSlice)"
    if size != span:
        return (
            f"the data_offsets of tensor {name!r} do not span {what} ({size:,} bytes) "
            "(TensorInvalidInfo)"
        )
    return ""


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
        tensors, size, refusal = _read_header(path)
        if refusal:
            checkpoint.refused[str(path)] = refusal
        read += size
        if read > MAX_CHECKPOINT_HEADER_BYTES:
            raise UsageError(
                f"--draft-weights: the headers of these {len(files)} files hold more than "
                f"{MAX_CHECKPOINT_HEADER_BYTES // 2**20} MiB, more than any drafter's: not read"
            )
        for name, tensor in tensors.items():
            checkpoint.tensors.setdefault(name, tensor)
    return checkpoint
