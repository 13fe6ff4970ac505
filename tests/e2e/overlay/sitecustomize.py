"""Repaired files laid over an installed vLLM, in every Python process a run starts.

`runs.py` puts this folder on PYTHONPATH and names the folder of repaired files in
`EAGLE3LINT_E2E_OVERLAY` (laid out as the package is: `vllm/model_executor/models/x.py`): a
`vllm.*` module found there is imported from there, every other one from the installed package.
vLLM inspects model classes in a subprocess of its own, which this reaches too.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType


class _Overlay(importlib.abc.MetaPathFinder):
    def __init__(self, root: Path) -> None:
        self.root = root

    def find_spec(
        self, name: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if not name.startswith("vllm."):
            return None
        file = self.root.joinpath(*name.split(".")).with_suffix(".py")
        return importlib.util.spec_from_file_location(name, file) if file.is_file() else None


_ROOT = os.environ.get("EAGLE3LINT_E2E_OVERLAY")
if _ROOT:
    sys.meta_path.insert(0, _Overlay(Path(_ROOT)))
