"""The drafter as a vLLM release sees it: its config (either format), translated the way the
release translates it, and its checkpoint's tensor headers."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eagle3lint.drafts.checkpoint import Checkpoint, read_checkpoint, weight_files
from eagle3lint.engines.vllm.contract.drafter import ConfigKey, DrafterContract
from eagle3lint.errors import UsageError
from eagle3lint.hf_config import read_config_json, text_config

EAGLE_STYLE = "eagle"
SPECULATORS = "speculators"
SUB_CONFIG = "eagle_config"
"""The sub-dict EAGLE-style checkpoints keep their EAGLE-3 settings in."""
MAX_LAYER_IDS = 1024
"""Most ids a layer-id list of a draft config may hold. EAGLE-3 taps three layers and no model
has more than a few hundred; every list is compared, shown and handed to the taps rule whole
(10^6 ids took over two minutes)."""


@dataclass
class DraftConfig:
    """A draft config.json: its data, where it is and its text (for finding key lines)."""

    path: Path
    data: dict[str, Any]
    text: str

    @property
    def format(self) -> str:
        return SPECULATORS if "speculators_model_type" in self.data else EAGLE_STYLE

    def line_of(self, key: str) -> int:
        """The line of the first `"key":` in the file (1 when it is not there)."""
        match = re.search(rf'"{re.escape(key)}"\s*:', self.text)
        return self.text.count("\n", 0, match.start()) + 1 if match else 1

    def declared_architecture(self) -> str | None:
        archs = self.data.get("architectures")
        if isinstance(archs, list) and archs and isinstance(archs[0], str):
            return archs[0]
        return None

    def layer_config(self) -> dict[str, Any]:
        """A speculators config's `transformer_layer_config` (empty when absent or not a dict)."""
        found = self.data.get("transformer_layer_config")
        return found if isinstance(found, dict) else {}


@dataclass
class Translated:
    """The draft config as the drafter class reads it after the release's translation."""

    config: dict[str, Any]
    architecture: str | None
    """The architecture vLLM looks up; None when the translation refuses the config."""
    refusal: str = ""
    """Why the translation refuses it, in the release's words."""
    passed: set[str] = field(default_factory=set)
    """Top-level keys of a speculators config the translation copies (or defaults)."""

    def value(self, key: ConfigKey) -> Any:
        holder = self.config.get(key.container) if key.container else self.config
        return holder.get(key.key) if isinstance(holder, dict) else None


def translate(draft: DraftConfig, facts: DrafterContract) -> Translated:
    """What the release turns `draft` into: EAGLEConfig's renaming for an EAGLE-style config,
    the speculators translation (`update_eagle3`) for a speculators one."""
    if draft.format == EAGLE_STYLE:
        declared = draft.declared_architecture()
        arch = declared
        if declared is not None and facts.renaming is not None:
            arch = facts.renaming.apply(declared)
        return Translated(dict(draft.data), arch)
    translation = facts.speculators
    layer = draft.layer_config()
    if translation is None:
        return Translated(layer, None, "this release has no speculators translation for eagle3")
    config = dict(layer)
    passed: set[str] = set()
    for rule in translation.passthrough:
        if rule.source in draft.data:
            config[rule.target] = draft.data[rule.source]
            passed.add(rule.source)
        elif rule.default is not None:
            config[rule.target] = _literal(rule.default)
    model_type = layer.get("model_type")
    arch = translation.architecture(model_type if isinstance(model_type, str) else None)
    refusal = ""
    if arch is None:
        refusal = f"Unsupported model_type {model_type} for Eagle3 speculator"
    return Translated(config, arch, refusal, passed)


def _check_id_lists(data: dict[str, Any], file: Path) -> None:
    """Refuse a layer-id list (a `*layer_ids` key at the top level or in a sub-dict) longer
    than `MAX_LAYER_IDS`."""
    for holder, prefix in (
        (data, ""),
        *((data.get(key), f"{key}.") for key in (SUB_CONFIG, "transformer_layer_config")),
    ):
        if not isinstance(holder, dict):
            continue
        for key, value in holder.items():
            if key.endswith("layer_ids") and isinstance(value, list) and len(value) > MAX_LAYER_IDS:
                raise UsageError(
                    f"--draft: {file}: {prefix}{key} holds {len(value):,} layer ids "
                    f"(at most {MAX_LAYER_IDS:,} are read)"
                )


def _literal(text: str) -> Any:
    """A default's source text as a value (`True`, `3`, `None`); other text stays text."""
    try:
        return json.loads({"True": "true", "False": "false", "None": "null"}.get(text, text))
    except ValueError:
        return text


@dataclass
class DraftPairing:
    """What `pair` was given: both configs, the draft's checkpoint and the pipeline size.

    The draft-pairing rule fills `analysis` when it runs; the command reads it back for its
    summary table."""

    draft: DraftConfig
    target_path: Path
    target: dict[str, Any]
    checkpoint: Checkpoint | None
    pipeline_size: int = 1
    analysis: Any = None

    @property
    def target_text(self) -> dict[str, Any]:
        return text_config(self.target)

    @classmethod
    def load(
        cls, draft: Path, weights: list[Path], target: Path, pipeline_size: int
    ) -> DraftPairing:
        data, file, text = read_config_json(draft, "--draft")
        _check_id_lists(data, file)
        target_data, target_file, _ = read_config_json(target, "--target")
        if not weights and draft.is_dir():
            weights = weight_files(draft)
        missing = [w for w in weights if not w.is_file()]
        if missing:
            raise UsageError(f"--draft-weights: {missing[0]} does not exist")
        checkpoint = read_checkpoint(weights) if weights else None
        return cls(
            DraftConfig(file, data, text), target_file, target_data, checkpoint, pipeline_size
        )

    def draft_layer_ids(self) -> list[int] | None:
        """The ids the draft config holds (top level, else `eagle_config`), when they are
        non-negative integers: what the target's taps rule may assume is requested."""
        for holder in (self.draft.data, self.draft.data.get(SUB_CONFIG)):
            ids = (
                holder.get("eagle_aux_hidden_state_layer_ids") if isinstance(holder, dict) else None
            )
            if isinstance(ids, list) and ids:
                valid = all(isinstance(k, int) and not isinstance(k, bool) and k >= 0 for k in ids)
                return ids if valid else None
        return None

    def target_architecture(self) -> str:
        """The target config's `architectures[0]`: the architecture `pair` checks."""
        archs = self.target.get("architectures")
        if not isinstance(archs, list) or not archs or not isinstance(archs[0], str):
            raise UsageError(
                f"--target: {self.target_path} names no architecture (its `architectures` list "
                "says which vLLM model class loads it)"
            )
        return archs[0]
