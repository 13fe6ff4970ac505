"""The columns of a matrix: release trees given as paths, and `--vllm` (or `--sglang`) versions,
ranges, latest.

A range `A..B` means every final release on the package index from A to B inclusive (the
engine's release list, `Wing.list_releases`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from packaging.version import InvalidVersion, Version

from eagle3lint.engines import Wing, default_wing
from eagle3lint.errors import DownloadError, UsageError

MAX_RANGE_RELEASES = 50
"""Releases one `A..B` may expand to: each is a download and a check of its own. The
documented ranges hold 35 (`0.11.0..0.33.0`) and 36 (`0.11.0..latest`, with 0.34.0);
PyPI lists 101 final releases in all."""
LATEST = "latest"


@dataclass(frozen=True, slots=True)
class Column:
    """One release of the matrix: a tree on disk, or a version fetched from the index."""

    path: Path | None = None
    version: str | None = None
    engine: str = "vllm"
    """The wing whose release `version` is."""

    @property
    def spec(self) -> str:
        return str(self.path) if self.path is not None else str(self.version)


def sort_key(version: str | None) -> tuple[int, Version]:
    """Releases in version order; a column whose version is unknown goes last."""
    try:
        return (0, Version(version or ""))
    except InvalidVersion:
        return (1, Version("0"))


def expand_specs(
    specs: list[str], index: list[str] | None = None, wing: Wing | None = None
) -> list[str]:
    """`0.16.0`, `0.12.0..0.33.0`, `0.12.0..latest` and `latest` → versions of `wing`'s engine
    (vLLM's by default), in order, without repeats.

    `index` is the package index's list (fetched on first need when None)."""
    wing = wing or default_wing()
    flag, label = f"--{wing.name}", wing.label
    versions: list[str] = []
    for raw in specs:
        spec = raw.strip()
        if spec == LATEST or ".." in spec:
            index = index if index is not None else wing.list_releases()
        if spec == LATEST:
            versions.append(index[-1])  # type: ignore[index]
        elif ".." in spec:
            low, _, high = (part.strip() for part in spec.partition(".."))
            high = index[-1] if high == LATEST else high  # type: ignore[index]
            for bound in (low, high):
                _check_version(bound, spec, wing)
            if Version(low) > Version(high):
                raise UsageError(f"{flag} {spec}: the range is empty ({low} is after {high})")
            found = [v for v in index or () if Version(low) <= Version(v) <= Version(high)]
            if not found:
                raise UsageError(f"{flag} {spec}: no final {label} release in that range")
            if len(found) > MAX_RANGE_RELEASES:
                newest = found[-MAX_RANGE_RELEASES:]
                raise UsageError(
                    f"{flag} {spec}: the range holds {len(found)} releases, more than the "
                    f"{MAX_RANGE_RELEASES} one range may expand to (each is a download and a "
                    f"check); narrow it ({flag} {newest[0]}..{newest[-1]} holds the newest "
                    f"{MAX_RANGE_RELEASES}) or split it into several {flag} ranges"
                )
            versions += found
        else:
            _check_version(spec, spec, wing)
            versions.append(spec)
    return list(dict.fromkeys(versions))


def _check_version(version: str, spec: str, wing: Wing) -> None:
    try:
        wing.check_version(version)
    except DownloadError:
        raise UsageError(
            f"--{wing.name} {spec}: {version!r} is not a {wing.label} version "
            "(expected 0.16.0, a range 0.12.0..0.33.0, or latest)"
        ) from None
