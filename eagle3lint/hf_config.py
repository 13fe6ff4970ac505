"""Hugging Face config.json reading: the file, its text sub-config and the model_type vLLM
gates on. Engine-neutral: `check` and the drafter library both read configs through it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from eagle3lint.errors import UsageError
from eagle3lint.sources.documents import parse_json
from eagle3lint.sources.files import (
    MAX_CONFIG_BYTES,
    SourceNotFound,
    UnreadableSource,
    read_regular,
)


def read_config_json(path: Path, option: str) -> tuple[dict[str, Any], Path, str]:
    """A config.json (or the folder holding one): its object, its file and its text.

    `option` names the command-line option in messages (`--hf-config`, `--draft`)."""
    file = path / "config.json" if path.is_dir() else path
    try:
        raw = read_regular(file, MAX_CONFIG_BYTES, "config")
        data = parse_json(raw)
    except SourceNotFound as exc:
        raise UsageError(f"{option}: {file} does not exist") from exc
    except UnreadableSource as exc:
        raise UsageError(f"{option}: {file} {exc}") from exc
    if not isinstance(data, dict):
        raise UsageError(f"{option}: {file} does not hold a JSON object")
    if not (text_model_type(data) or data.get("architectures") or data.get("model_type")):
        # Any JSON object was taken for a config, so a wrong file (a tokenizer config, the
        # speculative config) read as a checkpoint with no attribute set.
        raise UsageError(
            f"{option}: {file} is not a model's config.json: it names no model_type and no "
            "architectures (a checkpoint's config.json names both)"
        )
    return data, file, raw.decode("utf-8")


def text_config(data: dict[str, Any]) -> dict[str, Any]:
    """transformers' get_text_config(): the text sub-config of a multimodal config."""
    for key in ("text_config", "language_config", "llm_config", "thinker_config"):
        sub = data.get(key)
        if isinstance(sub, dict):
            inner = sub.get("text_config", sub) if key == "thinker_config" else sub
            return inner if isinstance(inner, dict) else sub
    return data


def load_hf_config(path: Path) -> tuple[dict[str, Any], str]:
    """A config.json (or the folder holding one) and the text model_type vLLM gates on."""
    data, _, _ = read_config_json(path, "--hf-config")
    return data, text_model_type(data)


def text_model_type(data: dict[str, Any]) -> str:
    """The model_type of a config's text model (what vLLM gates on); "" when it has none."""
    model_type = text_config(data).get("model_type") or data.get("model_type")
    return str(model_type) if model_type else ""
