"""transformers' model classes behind vLLM's Transformers modeling backend.

The backend (`model_executor/models/transformers/`) builds its decoder as
`AutoModel.from_config(config)`: transformers' base model of the checkpoint's model_type
(`MODEL_MAPPING_NAMES` in `models/auto/modeling_auto.py`), such as `GPTNeoXModel`. What the EAGLE
proposer takes from that decoder (its input embedding, `embed_tokens` or `embedding`) is then
transformers' code, read here from its sources as vLLM would import them (never imported):
`models/<type>/modeling_<type>.py`, generated self-contained by transformers' modular tooling.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from eagle3lint.config_classes import transformers_library
from eagle3lint.index.project import ProjectIndex
from eagle3lint.sources.files import SourceNotFound, UnreadableSource, decode_text

AUTO_MODELING = Path("transformers", "models", "auto", "modeling_auto.py")
_MAPPING = re.compile(r"^(\w+_MAPPING_NAMES)\s*=\s*OrderedDict\(\s*\[(.*?)^\s*\]\s*\)", re.M | re.S)
_PAIR = re.compile(r"""\(\s*["'](\w+)["']\s*,\s*["'](\w+)["']\s*\)""")
_SELF_ASSIGN = re.compile(r"^\s+self\.(\w+)\s*(?::[^=\n]*)?=(?!=)", re.M)
_CLASS = "^class {name}\\(([^)]*)\\):\n"
_NEXT_TOP_LEVEL = re.compile(r"^\S", re.M)


@dataclass(frozen=True, slots=True)
class HfDecoder:
    """transformers' base model class the backend builds for a model_type."""

    model_type: str
    name: str
    path: str
    attributes: frozenset[str]
    """What its `__init__` (or any method of the class) assigns to `self`."""
    open_by: str | None
    """Why an attribute it does not assign may still exist (a base other than its
    `PreTrainedModel`); None when the class itself says it all."""


@dataclass(frozen=True, slots=True)
class AutoMappings:
    """transformers' auto mappings: the base model of each model_type, and the model_type of
    every class any mapping names (`GPTNeoXForCausalLM` → `gpt_neox`)."""

    version: str | None
    root: Path
    base_models: dict[str, str]
    model_types: dict[str, str]


def auto_mappings(index: ProjectIndex) -> AutoMappings | str:
    """The mappings of the transformers the analysed vLLM imports, or why there are none."""
    memo = index.memo.setdefault("hf-auto-mappings", {})
    assert isinstance(memo, dict)
    if "found" not in memo:
        memo["found"] = _read_mappings(index)
    return memo["found"]


def _read_mappings(index: ProjectIndex) -> AutoMappings | str:
    library = transformers_library(index)
    if library is None:
        return "transformers is not installed beside this vLLM nor for this Python"
    text = _read(index, library.folder / AUTO_MODELING)
    if text is None:
        return f"transformers {library.version or ''} has no readable {AUTO_MODELING}"
    base_models: dict[str, str] = {}
    model_types: dict[str, str] = {}
    for mapping in _MAPPING.finditer(text):
        pairs = _PAIR.findall(mapping.group(2))
        if mapping.group(1) == "MODEL_MAPPING_NAMES":
            base_models.update(pairs)
        for model_type, name in pairs:
            model_types.setdefault(name, model_type)
    return AutoMappings(library.version, library.folder, base_models, model_types)


def hf_decoder(index: ProjectIndex, model_type: str) -> HfDecoder | str:
    """The base model class `AutoModel.from_config` builds for `model_type`, or why it is not
    known here."""
    mappings = auto_mappings(index)
    if isinstance(mappings, str):
        return mappings
    name = mappings.base_models.get(model_type)
    if name is None:
        return f"transformers {mappings.version or ''} has no base model for {model_type!r}"
    path = mappings.root / "transformers" / "models" / model_type / f"modeling_{model_type}.py"
    text = _read(index, path)
    match = re.search(_CLASS.format(name=re.escape(name)), text or "", re.M)
    if text is None or match is None:
        return f"{name} was not found in transformers' models/{model_type}/"
    following = _NEXT_TOP_LEVEL.search(text, match.end())
    body = text[match.end() : following.start() if following else len(text)]
    bases = [b.strip() for b in match.group(1).split(",") if b.strip()]
    own = [b for b in bases if not b.endswith("PreTrainedModel") and b != "GenerationMixin"]
    return HfDecoder(
        model_type,
        name,
        str(path),
        frozenset(_SELF_ASSIGN.findall(body)),
        f"it also inherits {', '.join(own)}" if own else None,
    )


def _read(index: ProjectIndex, path: Path) -> str | None:
    try:
        return decode_text(index.read_outside(path))
    except (SourceNotFound, UnreadableSource):
        return None
