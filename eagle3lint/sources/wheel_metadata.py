"""A release wheel's core metadata (`<name>-<version>.dist-info/METADATA`), kept beside its
Python sources in the cache: what the release requires of its dependencies (`Requires-Dist`),
transformers' version range first of all, is read from it (`sources.requirements`).

The cache folder of a release then looks like a `site-packages` holding it (`releases/0.33.0/
vllm/` and `releases/0.33.0/vllm-0.33.0.dist-info/METADATA`), so a release fetched from PyPI
and an installed one are read alike. Only that one member is copied, within a size cap; the
wheel's other metadata (its RECORD, entry points) is not kept.
"""

from __future__ import annotations

import os
import re
import zipfile
from pathlib import Path

from eagle3lint import trust
from eagle3lint.errors import DownloadError

MAX_METADATA_BYTES = 4 * 2**20
"""vLLM's METADATA is about 20 KB, most of it its README."""
_METADATA = re.compile(r"[A-Za-z0-9_.]+-[A-Za-z0-9_.+!]+\.dist-info/METADATA")
RECORD_KEY = "metadata"
"""The `.complete` key naming the kept METADATA (relative to the release folder), or null
when the wheel had none; a release cached before it was kept has no such key."""


def keep_metadata(archive: Path, into: Path) -> str | None:
    """Copy the wheel's top-level `*.dist-info/METADATA` below `into`; its path relative to
    `into`, or None when the wheel holds none."""
    try:
        with zipfile.ZipFile(archive) as wheel:
            found = [m for m in wheel.infolist() if _METADATA.fullmatch(m.filename)]
            if len(found) != 1:
                return None
            member = found[0]
            with wheel.open(member) as source:
                data = source.read(MAX_METADATA_BYTES + 1)
    except zipfile.BadZipFile as exc:
        raise DownloadError(f"{archive.name} is not a valid wheel: {exc}") from exc
    if len(data) > MAX_METADATA_BYTES:
        raise DownloadError(f"{archive.name}'s {member.filename} is too large: refused")
    destination = into.joinpath(*member.filename.split("/"))
    trust.make_folders(destination.parent)
    fd = os.open(destination, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    return member.filename
