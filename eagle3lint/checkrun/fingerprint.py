"""The fingerprint of the code that decides a check's results: eagle3lint's and every rule
plugin's, read from the files (the run cache's key, and the dependency record's)."""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path


@cache
def code_fingerprint() -> str:
    """A hash of eagle3lint's own sources and of every rule plugin's: the entry points (name
    and module) and the Python files beside each plugin module (a
    built-in rule's `rules/_<rule>_*.py` helpers, outside the package folder in a checkout).
    Read from the files, without importing the plugins: a check answered from the cache never
    loads them (a third of a hook's run)."""
    from importlib.metadata import entry_points
    from importlib.util import find_spec

    from eagle3lint.rule import ENTRY_POINT_GROUP

    package = Path(__file__).parent.parent
    files = sorted(package.rglob("*.py"))
    digest = hashlib.blake2b(digest_size=16)
    for point in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda p: (p.name, p.value)):
        digest.update(f"{point.name}\0{point.value}\0".encode())
        try:
            spec = find_spec(point.module)
        except (ImportError, ValueError):  # the run will report the plugin as broken
            spec = None
        origin = Path(spec.origin) if spec is not None and spec.origin else None
        if origin is None or not origin.is_file():
            continue
        # A module inside a package brings the package's other modules (its helpers); a
        # top-level module, only itself (its folder is site-packages).
        files += sorted(origin.parent.glob("*.py")) if "." in point.module else [origin]
    for path in dict.fromkeys(files):
        digest.update(str(path).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()
