"""A drafter checkpoint's tensor names and shapes, read from safetensors headers only.

A `.safetensors` file starts with an 8-byte little-endian header length and a JSON header
mapping each tensor name to `{dtype, shape, data_offsets}`; `model.safetensors.index.json`
maps tensor names to shard files. Those are all `pair` needs: no tensor data is read and no
torch is imported.
"""

from __future__ import annotations

import json
import os
import struct
from dataclasses import dataclass, field
from pathlib import Path

from eagle3lint.errors import UsageError
from eagle3lint.sources.files import (
    MAX_CONFIG_BYTES,
    UnreadableSource,
    open_regular,
    read_regular,
)

MAX_HEADER_BYTES = 100 * 2**20
"""safetensors' own limit on the JSON header; a larger length field means a corrupt file."""
INDEX_FILE = "model.safetensors.index.json"


@dataclass(frozen=True, slots=True)
class Tensor:
    name: str
    dtype: str
    shape: tuple[int, ...]
    file: str


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
    try:
        fd, _ = open_regular(path)  # not a FIFO or a device: they would block or never end
        with os.fdopen(fd, "rb") as handle:
            size_bytes = handle.read(8)
            if len(size_bytes) < 8:
                raise UsageError(f"--draft-weights: {path} is too short to be a safetensors file")
            (size,) = struct.unpack("<Q", size_bytes)
            if size > MAX_HEADER_BYTES:
                raise UsageError(
                    f"--draft-weights: {path} declares a {size}-byte header (safetensors allows "
                    f"{MAX_HEADER_BYTES}): not a safetensors file"
                )
            raw = handle.read(size)
    except UnreadableSource as exc:
        raise UsageError(f"--draft-weights: {path} {exc}") from exc
    except OSError as exc:
        raise UsageError(f"--draft-weights: {path}: {exc.strerror or exc}") from exc
    if len(raw) < size:
        raise UsageError(f"--draft-weights: {path} ends inside its header")
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise UsageError(f"--draft-weights: {path} has no JSON header ({exc})") from exc
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
        tensors[name] = Tensor(name, str(info.get("dtype", "?")), tuple(shape), str(path))
    return tensors


def weight_files(folder: Path) -> list[Path]:
    """The weight files of a checkpoint folder: the shards its index names, else every
    `*.safetensors` in it."""
    index = folder / INDEX_FILE
    if os.path.lexists(index):
        try:
            data = json.loads(read_regular(index, MAX_CONFIG_BYTES, "index").decode("utf-8"))
            weight_map = data["weight_map"]
            shards = sorted({str(v) for v in weight_map.values()})
        except UnreadableSource as exc:
            raise UsageError(f"--draft: {index} {exc}") from exc
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as e:
            raise UsageError(f"--draft: {index} is not a safetensors index ({e})") from e
        missing = [s for s in shards if not (folder / s).is_file()]
        if missing:
            raise UsageError(f"--draft: {index} names shards that are not there: {missing}")
        return [folder / s for s in shards]
    return sorted(folder.glob("*.safetensors"))


def read_checkpoint(files: list[Path]) -> Checkpoint:
    """The tensors of all `files` (a name in two files keeps the first)."""
    checkpoint = Checkpoint(files=list(files))
    for path in files:
        for name, tensor in read_header(path).items():
            checkpoint.tensors.setdefault(name, tensor)
    return checkpoint
