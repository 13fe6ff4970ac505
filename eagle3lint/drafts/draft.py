"""The drafter as a vLLM release sees it: its config (either format), translated the way the
release translates it, and its checkpoint's tensor headers."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eagle3lint.drafts.checkpoint import Checkpoint, read_checkpoint, weight_files
from eagle3lint.engines.vllm.contract.drafter import ConfigKey, DrafterContract
from eagle3lint.errors import UsageError
from eagle3lint.hf_config import MAX_CONFIG_BYTES, read_config_json, text_config
from eagle3lint.layer_ids import check_layer_ids
from eagle3lint.sources.documents import parse_json
from eagle3lint.sources.files import UnreadableSource, read_regular

EAGLE_STYLE = "eagle"
SPECULATORS = "speculators"
IDS_KEY = "eagle_aux_hidden_state_layer_ids"
SUB_CONFIG = "eagle_config"
"""The sub-dict EAGLE-style checkpoints keep their EAGLE-3 settings in."""
MAX_SPECULATIVE_TOKENS = 16_383
"""Largest `num_speculative_tokens` taken. vLLM refuses 0 and less (`gt=0`); a decode step
schedules 1 + k tokens a request, and from 0.33 vLLM refuses a k its `max_num_batched_tokens`
cannot hold (16,384 at most by default). Drafters propose 1 to 16."""


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

    def made_for(self) -> str | None:
        """The method the checkpoint itself was made for, as far as it says: its speculators
        type, a DFlash/DSpark architecture or `dflash_config`, else eagle3 for an EAGLE-3
        architecture or EAGLE-3 settings; None when it does not say."""
        kind = self.data.get("speculators_model_type")
        if isinstance(kind, str):
            return "dflash" if kind.startswith("dflash") else kind
        declared = self.declared_architecture() or ""
        if "DSpark" in declared:
            return "dspark"
        if "DFlash" in declared or "dflash_config" in self.data:
            return "dflash"
        if "Eagle3" in declared or IDS_KEY in self.data or SUB_CONFIG in self.data:
            return "eagle3"
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


def translate(draft: DraftConfig, facts: DrafterContract, method: str | None) -> Translated:
    """What the release turns `draft` into: for an EAGLE-style config, EAGLEConfig's renaming
    for `method` (none for a method EAGLEConfig does not wrap); for a speculators one, the
    function registered for its `speculators_model_type` (`update_eagle3`)."""
    if draft.format == EAGLE_STYLE:
        declared = draft.declared_architecture()
        arch = declared
        renaming = facts.renamings.get(method or "")
        if declared is not None and renaming is not None:
            arch = renaming.apply(declared)
        return Translated(dict(draft.data), arch)
    kind = draft.data.get("speculators_model_type")
    translation = facts.speculators.get(kind) if isinstance(kind, str) else None
    layer = draft.layer_config()
    if translation is None:
        known = ", ".join(repr(k) for k in facts.speculators) or "none"
        return Translated(
            layer,
            None,
            f"speculators_model_type {kind!r} is not one this release loads (it loads {known})",
        )
    if translation.refusal:
        return Translated(layer, None, translation.refusal)
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
        refusal = (translation.unmapped or "Unsupported model_type {model_type}").replace(
            "{model_type}", str(model_type)
        )
    return Translated(config, arch, refusal, passed)


def _literal(text: str) -> Any:
    """A default's source text as a value (`True`, `3`, `None`); other text stays text."""
    try:
        return json.loads({"True": "true", "False": "false", "None": "null"}.get(text, text))
    except ValueError:
        return text


@dataclass(frozen=True, slots=True)
class SpeculativeConfig:
    """The `--speculative-config` JSON `vllm serve` takes, as far as `pair` reads it."""

    method: str | None
    """None: unset, so the release chooses one from the draft (`draft_model` when nothing
    names one)."""
    model: str
    """The draft as typed: a folder or a model id; the method choice tests this string."""
    options: dict[str, Any] = field(default_factory=dict)
    given: bool = True
    """False when `pair` got only `--draft`: the method is then taken as eagle3."""

    @classmethod
    def parse(cls, text: str) -> SpeculativeConfig:
        """The JSON object of `--speculative-config`: inline, or a file holding it."""
        raw = text.strip()
        try:
            if raw.startswith(("{", "[")):
                data = parse_json(raw.encode("utf-8", errors="replace"))
            else:
                file = Path(raw).expanduser()
                if not file.is_file():
                    raise UsageError(
                        f"--speculative-config: {raw!r} is neither a JSON object nor a file"
                    )
                data = parse_json(read_regular(file, MAX_CONFIG_BYTES, "speculative config"))
        except UnreadableSource as exc:
            raise UsageError(f"--speculative-config: {exc}") from exc
        if not isinstance(data, dict):
            raise UsageError("--speculative-config: must be a JSON object")
        method, model = data.get("method"), data.get("model")
        if method is not None and not isinstance(method, str):
            raise UsageError(f"--speculative-config: method must be a string, not {method!r}")
        if not isinstance(model, str) or not model:
            raise UsageError(
                '--speculative-config: "model" must name the draft (a folder or a model id); '
                "pair checks drafts, not methods without one (ngram, suffix)"
            )
        tokens = data.get("num_speculative_tokens")
        if tokens is not None and not 0 < (_whole_number(tokens) or 0) <= MAX_SPECULATIVE_TOKENS:
            raise UsageError(
                f"--speculative-config: num_speculative_tokens must be a whole number from 1 to "
                f"{MAX_SPECULATIVE_TOKENS:,}, not {_shown(tokens)} (vLLM refuses 0 and less, and "
                "from 0.33 more than its max_num_batched_tokens holds: 16,384 at most by default)"
            )
        return cls(method, model, data)


def _whole_number(value: Any) -> int | None:
    """`value` as vLLM's pydantic configs read an `int` (lax mode: `3`, `3.0`, `"3"`, `true`),
    or None when they refuse it (`3.5`, `"three"`, a list)."""
    if isinstance(value, str):
        try:
            value = float(value.strip()) if "." in value else int(value.strip())
        except ValueError:
            return None
    if isinstance(value, float):
        return int(value) if value.is_integer() else None
    return value if isinstance(value, int) else None


def _shown(value: Any) -> str:
    """A value of the speculative config for a message, cut to a line's width."""
    text = json.dumps(value)
    return text if len(text) <= 40 else f"{text[:37]}..."


def locate_draft(model: str) -> Path:
    """The folder holding the draft's config.json: `model` itself, or its snapshot in the local
    Hugging Face cache (`HF_HUB_CACHE`, `HF_HOME/hub`, ~/.cache/huggingface/hub). Nothing is
    downloaded."""
    path = Path(model).expanduser()
    if path.exists():
        return path
    if re.fullmatch(r"[\w.-]+/[\w.-]+", model) is None:
        raise UsageError(f"--speculative-config: model {model!r} is not a folder or a model id")
    roots = [os.environ.get("HF_HUB_CACHE")]
    if os.environ.get("HF_HOME"):
        roots.append(os.path.join(os.environ["HF_HOME"], "hub"))
    roots.append(str(Path.home() / ".cache" / "huggingface" / "hub"))
    repo = "models--" + model.replace("/", "--")
    for root in filter(None, roots):
        snapshots = Path(root) / repo / "snapshots"
        ref = Path(root) / repo / "refs" / "main"
        try:
            chosen = snapshots / ref.read_text().strip() if ref.is_file() else None
            if chosen is None or not (chosen / "config.json").is_file():
                found = sorted(snapshots.glob("*/config.json"), key=lambda p: p.stat().st_mtime)
                chosen = found[-1].parent if found else None
        except OSError:
            chosen = None
        if chosen is not None:
            return chosen
    raise UsageError(
        f"--speculative-config: {model} is not in the local Hugging Face cache; fetch its "
        f"config and weights first (`hf download {model}`), or give --draft FOLDER"
    )


@dataclass
class DraftPairing:
    """What `pair` was given: both configs, the draft's checkpoint, the speculative config and
    the pipeline size.

    The draft-pairing rule fills `analysis` when it runs; the command reads it back for its
    summary table."""

    draft: DraftConfig
    target_path: Path
    target: dict[str, Any]
    checkpoint: Checkpoint | None
    pipeline_size: int = 1
    speculative: SpeculativeConfig | None = None
    analysis: Any = None
    max_model_len: int | None = None
    """`--max-model-len`; None: the target's default length."""
    hf_overrides: dict[str, Any] = field(default_factory=dict)
    """`--hf-overrides`: applied to the target's config (vLLM does not pass a dict to the
    draft's)."""

    @property
    def settings(self) -> SpeculativeConfig:
        """The speculative config; with `--draft` alone, method eagle3 for that draft."""
        if self.speculative is not None:
            return self.speculative
        return SpeculativeConfig("eagle3", str(self.draft.path.parent), given=False)

    @property
    def target_text(self) -> dict[str, Any]:
        return text_config(self.target)

    @classmethod
    def load(
        cls,
        draft: Path | None,
        weights: list[Path],
        target: Path,
        pipeline_size: int,
        speculative: SpeculativeConfig | None = None,
    ) -> DraftPairing:
        if draft is None:
            if speculative is None:
                raise UsageError("give the draft: --speculative-config JSON or --draft FOLDER")
            draft = locate_draft(speculative.model)
        data, file, text = read_config_json(draft, "--draft")
        check_layer_ids(data, file)
        target_data, target_file, _ = read_config_json(target, "--target")
        if not weights and draft.is_dir():
            weights = weight_files(draft)
        missing = [w for w in weights if not w.is_file()]
        if missing:
            raise UsageError(f"--draft-weights: {missing[0]} does not exist")
        checkpoint = read_checkpoint(weights) if weights else None
        return cls(
            DraftConfig(file, data, text),
            target_file,
            target_data,
            checkpoint,
            pipeline_size,
            speculative,
        )

    def target_architecture(self) -> str:
        """The target config's `architectures[0]`: the architecture `pair` checks."""
        archs = self.target.get("architectures")
        if not isinstance(archs, list) or not archs or not isinstance(archs[0], str):
            raise UsageError(
                f"--target: {self.target_path} names no architecture (its `architectures` list "
                "says which vLLM model class loads it)"
            )
        return archs[0]
