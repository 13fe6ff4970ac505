"""The release of a dependency (transformers) that an engine's requirement resolves to, fetched
like an engine release: the newest final release on the package index that the requirement's
specifier allows, its wheel sha256-checked against the index's digest and only the Python
sources asked for kept in the cache (`sources.wheels`), never imported.

What a requirement resolved to is recorded in the cache (`releases/<name>-resolved.json`) the
first time: a later check of the same release reads the same sources, offline too, until
`eagle3lint cache clean`. A newer release of the dependency published meanwhile does not change
a verdict behind the user's back; the report names the version read.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

from eagle3lint.cachedir import RESOLVED_SUFFIX, default_cache_dir, trusted_folder
from eagle3lint.errors import DownloadError, UsageError
from eagle3lint.sources.files import MAX_CACHE_ENTRY_BYTES, UnreadableSource, read_regular
from eagle3lint.sources.release_index import indexed_releases
from eagle3lint.sources.wheels import fetch_release
from eagle3lint.storage import write_atomically
from eagle3lint.trust import make_folders


def record_path(name: str, cache_root: Path | None = None) -> Path:
    """Where what `name`'s requirements resolved to is recorded."""
    return (cache_root or default_cache_dir()) / "releases" / f"{name}{RESOLVED_SUFFIX}"


def resolve(requirement: Requirement, why: str, cache_root: Path | None = None) -> str:
    """The version `requirement` resolves to: as recorded, else the newest final release the
    index has that its specifier allows (then recorded). `why` names who requires it, for
    the message when the index cannot be asked."""
    store = record_path(requirement.name, cache_root)
    key = str(requirement.specifier) or "*"
    trusted = trusted_folder(store.parent)  # a record others could write would pick sources
    recorded = _recorded(store) if trusted else {}
    if isinstance(recorded.get(key), str):
        return recorded[key]
    try:
        versions = indexed_releases(
            cache_root,
            requirement.name,
            hint=f"{why} requires {requirement}: run again when the index is reachable",
        )
    except UsageError as exc:
        raise DownloadError(str(exc)) from exc
    allowed = list(requirement.specifier.filter(versions))
    if not allowed:
        raise DownloadError(
            f"no release of {requirement.name} on the package index matches {why}'s "
            f"requirement {requirement}"
        )
    newest = max(allowed, key=Version)
    if trusted:
        try:
            make_folders(store.parent)
            data = json.dumps(recorded | {key: newest}, sort_keys=True)
            write_atomically(store, data.encode(), private=True)
        except OSError:
            pass  # an unwritable cache only costs the next run a look-up
    return newest


def fetch(
    name: str,
    version: str,
    keep: Callable[[str], bool],
    cache_root: Path | None = None,
    progress: bool = False,
) -> Path:
    """The folder holding `name`'s package of release `version` (downloaded on first use)."""
    return fetch_release(version, cache_root, progress, name, keep).parent


def _recorded(store: Path) -> dict[str, object]:
    try:
        data = json.loads(read_regular(store, MAX_CACHE_ENTRY_BYTES, private=True))
    except (UnreadableSource, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}
