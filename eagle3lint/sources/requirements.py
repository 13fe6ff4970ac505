"""What an engine tree says it requires of a dependency (transformers' version range), read
from files beside it, never from the interpreter running eagle3lint.

A release fetched from PyPI keeps its wheel's METADATA beside its sources
(`sources.wheel_metadata`), an installed engine has its `dist-info` there: their
`Requires-Dist` says it. A checkout lists it in its requirement files (vLLM's
`requirements/common.txt`, `requirements-common.txt` before 0.7). A requirement that applies
only with an extra is not the release's; other markers are not evaluated (they would make the
answer this machine's).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from email.parser import Parser
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

CHECKOUT_FILES = ("requirements/common.txt", "requirements-common.txt")
"""A checkout's requirement files that name the dependencies every build has, relative to the
folder holding the engine's package."""


@dataclass(frozen=True, slots=True)
class Required:
    """A dependency's requirement and where it was read."""

    requirement: Requirement
    where: str
    """`vllm==0.33.0` (its metadata), or the checkout's requirement file."""
    path: Path


def required(
    root: Path, package: str, dependency: str, read: Callable[[Path], str | None]
) -> Required | None:
    """What the `package` tree in `root` requires of `dependency`, or None when nothing beside
    it says. `read` gives a file's text, None when it is not there."""
    wanted = canonicalize_name(dependency)
    for metadata in sorted(root.glob(f"{package}-*.dist-info/METADATA")):
        text = read(metadata)
        if text is None:
            continue
        fields = Parser().parsestr(text, headersonly=True)
        found = _first(fields.get_all("Requires-Dist") or [], wanted)
        if found is not None:
            return Required(found, f"{fields['Name']}=={fields['Version']}", metadata)
    for name in CHECKOUT_FILES:
        text = read(root / name)
        found = _first(_requirement_lines(text), wanted) if text is not None else None
        if found is not None:
            return Required(found, f"the checkout's {name}", root / name)
    return None


def _requirement_lines(text: str) -> list[str]:
    """The requirement lines of a pip requirements file: without comments, options (`-r`,
    `--extra-index-url`) and blank lines."""
    lines = (line.split(" #", 1)[0].strip() for line in text.splitlines())
    return [line for line in lines if line and not line.startswith(("#", "-"))]


def _first(lines: list[str], wanted: str) -> Requirement | None:
    for line in lines:
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            continue
        if canonicalize_name(requirement.name) != wanted:
            continue
        if requirement.marker is not None and "extra" in str(requirement.marker):
            continue
        return requirement
    return None
