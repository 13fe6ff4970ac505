"""Installed libraries whose sources decide facts about the analysed tree: transformers' config
classes say which attributes a checkpoint's config has when vLLM builds it from them.

Only files are read (the index parses them as it parses the tree), never imported: the package
is found where vLLM would import it from, beside the analysed `vllm` package (an installed vLLM,
`site-packages/vllm` next to `site-packages/transformers`), else where this interpreter would
import it from (`importlib.util.find_spec`, which runs nothing for a top-level package).
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

TRANSFORMERS = "transformers"
READ_MODULES = re.compile(
    r"transformers\.(configuration_utils|models\.\w+\.(?:configuration|modeling)_\w+)"
)
"""The modules of transformers the index reads: those of its config classes, and of its model
classes for the Transformers modeling backend (its package `__init__` files import lazily, so a
name imported from them is found by `config_classes`). `modeling_utils`, whose
`PreTrainedModel` is the largest file of the package, stays external: what the backend needs
from it is one documented default."""


@dataclass(frozen=True, slots=True)
class Library:
    """An installed package of which the index reads the modules `modules` matches, from
    `folder` (the folder holding the package); every other module of it stays external."""

    name: str
    folder: Path
    modules: re.Pattern[str]
    version: str | None = None
    """As its installed metadata folder names it (`transformers-4.57.6.dist-info`)."""

    def reads(self, module: str) -> bool:
        return self.modules.fullmatch(module) is not None


def find_transformers(import_root: Path | None) -> tuple[Library | None, list[Path]]:
    """transformers as the analysed vLLM would import it, and the paths looked at where it was
    not (an install there later changes what a check says, so the whole-run cache notes them)."""
    looked: list[Path] = []
    beside = [import_root] if import_root is not None else []
    spec = importlib.util.find_spec(TRANSFORMERS)
    if spec is not None and spec.origin:
        beside.append(Path(spec.origin).parent.parent)
    else:
        looked += [Path(entry or os.getcwd(), TRANSFORMERS, "__init__.py") for entry in sys.path]
    for folder in beside:
        marker = folder / TRANSFORMERS / "__init__.py"
        if marker.is_file():
            library = Library(TRANSFORMERS, folder.resolve(), READ_MODULES, _version(folder))
            return library, looked
        looked.append(marker)
    return None, looked


def _version(folder: Path) -> str | None:
    """The version of the package installed in `folder`, from its metadata folder's name."""
    for found in sorted(folder.glob(f"{TRANSFORMERS}-*.dist-info")):
        return found.name.removeprefix(f"{TRANSFORMERS}-").removesuffix(".dist-info")
    return None
