"""What a config class says about the attributes of the configs built from it.

vLLM builds a checkpoint's config from a config class, vLLM's own (`transformers_utils/configs`)
or transformers'; the attributes its `__init__` sets (with their defaults), its class-level
attributes (transformers 5 declares them as annotated fields) and the aliases of its
`attribute_map` exist on every config it builds. A config.json key sets an attribute of its name
(`PretrainedConfig.__init__(**kwargs)` sets what is left over) unless an `__init__` takes it as a
named parameter and stores it under another name or not at all. What it does not declare
exists only if something else supplies it: a `__getattr__` or `__getattribute__` of its own, or a
base class whose source was not read. transformers' classes are read from its sources (see
`index.libraries`), found as transformers finds them: `models/<type>/configuration_<type>.py`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from eagle3lint.index.libraries import TRANSFORMERS, UNKNOWN, Library
from eagle3lint.index.project import ProjectIndex
from eagle3lint.index.refs import ClassRef, ExternalRef

BASE_CONFIGS = frozenset({"PretrainedConfig", "PreTrainedConfig"})
"""transformers' base config class (renamed in 5.0): its `__getattribute__` serves
`attribute_map`, which is read, and its `__init__` sets only generic settings."""
BASE_MODULE = f"{TRANSFORMERS}.configuration_utils"
DYNAMIC = ("__getattr__", "__getattribute__")
ALIASES = "attribute_map"
MAX_DEPTH = 12
CANDIDATE_FOLDERS = 3
"""Model folders of transformers tried for a class named outside its configuration module."""


@dataclass(frozen=True, slots=True)
class ConfigFacts:
    """The attributes a config class declares through its MRO, and whether that is all."""

    name: str
    declared: frozenset[str]
    open_by: str | None
    """Why an attribute it does not declare may still exist (a dynamic lookup, a base not
    read); None when what it declares is all a config built from it has."""
    consumed: dict[str, str] = field(default_factory=dict)
    """config.json keys an `__init__` of the MRO takes as a parameter without storing them (and
    that nothing else declares), each with that class's name: such a key is no attribute."""


def config_facts(index: ProjectIndex, ref: ClassRef | ExternalRef) -> ConfigFacts | str:
    """The facts of the config class `ref`, or why its source could not be read."""
    key = ref.qualname if isinstance(ref, ClassRef) else ref.text
    return index.remembered(f"config-facts:{key}", lambda: _facts(index, ref))


def transformers_library(index: ProjectIndex) -> Library | None:
    return next((lib for lib in index.libraries if lib.name == TRANSFORMERS), None)


def _facts(index: ProjectIndex, ref: ClassRef | ExternalRef) -> ConfigFacts | str:
    found = ref if isinstance(ref, ClassRef) else locate(index, ref.text)
    if isinstance(found, str):
        return found
    declared: set[str] = set()
    open_by: list[str] = []
    seen: set[str] = set()
    consumed: dict[str, str] = {}
    _collect(index, found, declared, open_by, seen, 0, consumed)
    kept = {k: v for k, v in consumed.items() if k not in declared}
    return ConfigFacts(found.name, frozenset(declared), "; ".join(open_by) or None, kept)


def _collect(
    index: ProjectIndex,
    ref: ClassRef,
    declared: set[str],
    open_by: list[str],
    seen: set[str],
    depth: int,
    consumed: dict[str, str],
) -> None:
    for entry in index.mro(ref):
        if _key(entry) in seen:
            continue
        seen.add(_key(entry))
        if isinstance(entry, ExternalRef):
            name = entry.text.rsplit(".", 1)[-1]
            if name in BASE_CONFIGS or name == "object":
                continue
            base = locate(index, entry.text) if depth < MAX_DEPTH else "too deep"
            if isinstance(base, str):
                open_by.append(f"its base {entry.text} was not read ({base})")
            else:
                _collect(index, base, declared, open_by, seen, depth + 1, consumed)
            continue
        cls = entry.cls
        base_class = entry.file.module == BASE_MODULE and cls.name in BASE_CONFIGS
        if base_class:
            # Its own bases (hub mixins) hold no config attributes.
            seen.update(_key(e) for e in index.mro(entry))
        declared.update(cls.init_assigns)
        if not base_class:
            for param in cls.init_consumes:
                consumed.setdefault(param, cls.name)
        declared.update(name for name in cls.attrs if not name.startswith("__"))
        aliases = cls.attrs.get(ALIASES)
        if aliases is not None and not base_class:
            if aliases.keys is None:
                open_by.append(f"{cls.name}.{ALIASES} is not a literal")
            else:
                declared.update(aliases.keys)
        dynamic = [m for m in DYNAMIC if m in cls.methods]
        if dynamic and not base_class:
            open_by.append(f"{cls.name} defines {' and '.join(dynamic)}")


def _key(entry: ClassRef | ExternalRef) -> str:
    return entry.qualname if isinstance(entry, ClassRef) else entry.text


def locate(index: ProjectIndex, text: str) -> ClassRef | str:
    """The class a dotted name outside the analysed trees means (`transformers.FuyuConfig`,
    `transformers.models.qwen2.Qwen2Config`), read from transformers' sources; else why not."""
    module, _, name = text.rpartition(".")
    if module.split(".")[0] != TRANSFORMERS:
        return f"{text} is not part of vLLM's sources or of transformers"
    library = transformers_library(index)
    if library is None:
        return UNKNOWN
    for candidate in _candidate_modules(index, library, module, name):
        found = index.class_ref(candidate, name)
        if found is not None:
            return found
    return f"{name} was not found in transformers {library.version or ''}".replace("  ", " ")


_WORD = re.compile(r"[^a-z0-9]")


def _candidate_modules(index: ProjectIndex, library: Library, module: str, name: str) -> list[str]:
    """Where transformers defines class `name`, written as imported from `module`: its model
    package's configuration module when the import names one, else the model folders whose
    name starts `name` (`Qwen2VLVisionConfig` → `qwen2_vl`), longest first."""
    models = f"{TRANSFORMERS}.models."
    found: list[str] = []
    if module == BASE_MODULE or (module.startswith(models) and ".configuration_" in module):
        found.append(module)
    elif module.startswith(models):
        folder = module.removeprefix(models).split(".")[0]
        found.append(f"{models}{folder}.configuration_{folder}")
    stem = _WORD.sub("", name.removesuffix("Config").lower())
    if name in BASE_CONFIGS:
        return [BASE_MODULE]
    prefixes = [f for f in _model_folders(index, library) if stem.startswith(_WORD.sub("", f))]
    prefixes.sort(key=len, reverse=True)
    found += [f"{models}{f}.configuration_{f}" for f in prefixes[:CANDIDATE_FOLDERS]]
    return list(dict.fromkeys(found))


def _model_folders(index: ProjectIndex, library: Library) -> list[str]:
    """The model folders of transformers (listed once per run)."""
    root = library.folder / TRANSFORMERS / "models"

    def listed() -> list[str]:
        try:
            return sorted(e.name for e in os.scandir(root) if e.is_dir() and e.name.isidentifier())
        except OSError:
            return []

    return index.remembered(f"model-folders:{library.folder}", listed)
