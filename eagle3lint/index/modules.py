"""Module names from paths: one spelling for the extractor and the index (no libcst here, so
warm runs that only read cached summaries do not import it)."""

from __future__ import annotations


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
