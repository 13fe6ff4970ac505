"""Module names from paths: one spelling for the extractor and the index (no libcst here, so
warm runs that only read cached summaries do not import it)."""

from __future__ import annotations

import os
import stat
from pathlib import Path


def module_name_for(relpath: str) -> tuple[str, bool]:
    """Dotted module name of a path relative to the import root, and whether it is a package."""
    parts = relpath.removesuffix(".py").split("/")
    is_package = parts[-1] == "__init__"
    if is_package:
        parts = parts[:-1]
    return ".".join(parts), is_package


def resolve_relative(module: str, is_package: bool, level: int, target: str | None) -> str:
    parts = module.split(".") if module else []
    if not is_package:
        parts = parts[:-1]
    if level > 1:
        parts = parts[: len(parts) - (level - 1)] if level - 1 <= len(parts) else []
    if target:
        parts.append(target)
    return ".".join(parts)


def present_at(candidate: Path) -> bool:
    """Whether something other than a folder is at `candidate`, or might be: a path that
    cannot be looked at (a folder without access) counts, so reading it names the problem."""
    try:
        return not stat.S_ISDIR(os.stat(candidate).st_mode)
    except (FileNotFoundError, NotADirectoryError):
        return os.path.islink(candidate)  # a dangling link: there, and unreadable
    except OSError:
        return True


def candidates(root: Path, module: str) -> tuple[Path, ...]:
    """Where `module` would be under `root`: a module file or a package (nowhere, for a name
    that is not a dotted module name, such as a registry entry holding a path)."""
    parts = module.split(".")
    if not all(part.isidentifier() for part in parts):
        return ()
    return root.joinpath(*parts).with_suffix(".py"), root.joinpath(*parts, "__init__.py")
