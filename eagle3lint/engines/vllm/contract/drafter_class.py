"""How one drafter module of a vLLM tree sizes `fc` and reads its config: the aux-state count
(a literal, config keys, the ids, or for DFlash the runner's own ids), the norm flags, and
whether its layers (or the decoder layer they build on) read a sliding window. Read as text by
the drafter contract (`drafter.py`), cached with it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from eagle3lint.sources.source_text import (
    function_around,
    function_named,
    strip_comments,
)

MODELS_DIR = "model_executor/models"
IDS_KEY = "eagle_aux_hidden_state_layer_ids"
"""The key EAGLE-3 checkpoints carry their layer ids under (top level or in `eagle_config`)."""


@dataclass(slots=True)
class ConfigKey:
    """A key of the draft config: at the top level (`container` "") or in a sub-dict."""

    container: str
    key: str
    shift: int = 0
    """What the runner adds to each id (DFlash's `target_layer_ids` mean "output of layer k",
    vLLM's index k + 1)."""

    def text(self) -> str:
        name = f"{self.container}.{self.key}" if self.container else self.key
        return f"{name} (+{self.shift})" if self.shift else name


@dataclass(slots=True)
class FlagRead:
    """A norm flag the drafter class reads, where from, and its default's source text."""

    name: str
    container: str
    default: str


@dataclass(slots=True)
class DrafterClassFacts:
    """What one drafter module reads to size `fc` and choose its norms."""

    module: str
    path: str
    line: int
    """The `self.fc = ...` line."""
    fixed_aux: int | None = None
    """The aux count when it is a literal (`target_hidden_size * 3`)."""
    count_keys: list[str] = field(default_factory=list)
    """Config keys giving the aux count, first found wins (`num_aux_hidden_states`)."""
    count_id_sources: list[ConfigKey] = field(default_factory=list)
    """Else the length of the ids found here."""
    default_aux: int = 3
    count_runner_ids: bool = False
    """`fc` counts the ids model runner V2's reader returns (DFlash, 0.30 on)."""
    default_count_key: str = ""
    """The draft config key counted when no ids are found (DFlash: `num_hidden_layers`)."""
    flags: list[FlagRead] = field(default_factory=list)
    window_read: bool = False
    """The drafter's layers (its module, or the decoder layer it builds on) read the config's
    sliding window (`layer_types`, `sliding_window`)."""
    window_source: str = ""
    fc_dropped_line: int = 0
    """The loader line that drops the checkpoint's `fc.` weights when `use_aux_hidden_state`
    is false (0: it loads them whatever the flag)."""

    def flag_sources(self, name: str) -> list[str]:
        return [f.container for f in self.flags if f.name == name]


_IMPORTS = re.compile(
    r"^from[ \t]+(?:\.|vllm\.model_executor\.models\.)(\w+)[ \t]+import[ \t]+(\([^()]*\)|[^\n]*)",
    re.MULTILINE,
)
# `skip_substrs.append("fc.")` (0.18-0.25) or `orig_to_new_substr["fc."] = None` (0.27 on).
_FC_DROPPED = re.compile(
    r"if\s+not\s+self\.model\.use_aux_hidden_state\s*:\s*\n\s*"
    r"(?:skip_substrs\.append\(\s*[\"']fc\.[\"']\s*\)|orig_to_new_substr\[\s*[\"']fc\.[\"']\s*\]\s*=\s*None)"
)
_WINDOW_READ = re.compile(r"getattr\(\s*[\w.]+\s*,\s*[\"'](?:layer_types|sliding_window)[\"']")


def layer_bases(texts: dict[str, str], module: str) -> list[str]:
    """The model files a drafter module imports a decoder layer from (`from .qwen3 import
    Qwen3DecoderLayer`, `from vllm.model_executor.models.llama import (LlamaDecoderLayer as
    BaseLlamaDecoderLayer, ...)`)."""
    text = texts.get(f"{MODELS_DIR}/{module}.py", "")
    return [
        f"{MODELS_DIR}/{base}.py"
        for base, names in _IMPORTS.findall(text)
        if "DecoderLayer" in names
    ]


def drafter_bases(texts: dict[str, str], module: str, drafters: list[str]) -> list[str]:
    """The other drafter modules `module` imports its model from (`from .qwen3_dflash import
    DFlashQwen3ForCausalLM, DFlashQwen3Model` in qwen3_dspark): where its `fc` is built when
    it builds none itself."""
    text = texts.get(f"{MODELS_DIR}/{module}.py", "")
    return [
        base
        for base, names in _IMPORTS.findall(text)
        if base in drafters and base != module and re.search(r"Model\b|ForCausalLM\b", names)
    ]


def drafter_class(
    module: str, text: str | None, models_dir: Path, bases: dict[str, str]
) -> DrafterClassFacts | None:
    """How the drafter module sizes `fc`: `target_hidden_size * <count>`, where the count is a
    literal or read from config keys, else the length of the ids, else a default; and whether
    its layers read a sliding window."""
    if text is None:
        return None
    clean = strip_comments(text)
    found = function_around(clean, "self.fc = ")
    if found is None:
        return None
    body, start = found
    fc_line = start + body[: body.find("self.fc = ")].count("\n")
    facts = DrafterClassFacts(module, str(models_dir / f"{module}.py"), fc_line)
    fixed = re.search(r"hidden_size\s*\*\s*(\d+)\b", body)
    if _dflash_count(facts, body, clean):
        pass
    elif fixed is not None:
        facts.fixed_aux = int(fixed.group(1))
    else:
        multiplier = re.search(r"target_hidden_size\s*\*\s*(?:self\.)?(\w+)", body)
        if multiplier is not None:
            count = multiplier.group(1)
            facts.count_keys = re.findall(
                rf"(?:self\.)?{count}\s*=\s*getattr\(\s*self\.config,\s*[\"'](\w+)[\"']", body
            )
            if not facts.count_keys:
                # qwen3_eagle3 counts into a local first, then stores it.
                local = re.search(rf"self\.{count}\s*=\s*(\w+)\s*$", body, re.MULTILINE)
                name = local.group(1) if local else count
                facts.count_keys = re.findall(
                    rf"\b{name}\s*=\s*getattr\(\s*self\.config,\s*[\"'](\w+)[\"']", body
                )
        reads = [
            (m.start(), ConfigKey("", IDS_KEY))
            for m in re.finditer(rf"getattr\(\s*self\.config,\s*[\"']{IDS_KEY}[\"']", body)
        ] + [
            (m.start(), ConfigKey(m.group(1), IDS_KEY))
            for m in re.finditer(rf"\b(\w+)\.get\(\s*[\"']{IDS_KEY}[\"']", body)
        ]
        facts.count_id_sources = [key for _, key in sorted(reads, key=lambda r: r[0])]
        default = re.search(r"len\(\w+\)\s+if\s+\w+\s+else\s+(\d+)", body)
        if default is not None:
            facts.default_aux = int(default.group(1))
    if (dropped := _FC_DROPPED.search(clean)) is not None:
        facts.fc_dropped_line = clean.count("\n", 0, dropped.start()) + 1
    for container, name, default in _flag_reads(clean):
        facts.flags.append(FlagRead(name, container, default))
    for rel, source in ((f"{MODELS_DIR}/{module}.py", clean), *bases.items()):
        if _WINDOW_READ.search(strip_comments(source)):
            facts.window_read, facts.window_source = True, rel
            break
    return facts


def _dflash_count(facts: DrafterClassFacts, body: str, clean: str) -> bool:
    """How a DFlash drafter counts its aux states: the ids the runner's reader returns (`fc`'s
    `input_size=_get_dflash_fc_input_size(...)`, whose count falls back to `config.<key>`), or
    `len(drafter_config["target_layer_ids"])` of its `eagle_config`/`dflash_config` merge (the
    later `update` wins), else `self.config.<key>`. False for any other drafter."""
    helper = re.search(r"input_size\s*=\s*(\w+)\(", body)
    found = function_named(clean, helper.group(1)) if helper else None
    if found is not None and "aux_layers_from_config(" in found[0]:
        facts.count_runner_ids = True
        default = re.search(r"\belse\s+\w+\.(\w+)", found[0])
        facts.default_count_key = default.group(1) if default else ""
        return True
    if "num_features_to_use" not in body:
        return False
    holders = re.findall(r"getattr\(\s*self\.config,\s*[\"'](\w+_config)[\"']", body)[::-1]
    keys = re.findall(r"len\(\s*\w+\[\s*[\"'](\w+)[\"']\s*\]\s*\)", body)
    facts.count_id_sources = [ConfigKey(h, k) for k in keys for h in holders]
    default = re.search(r"num_features_to_use\s*=\s*self\.config\.(\w+)", body)
    facts.default_count_key = default.group(1) if default else ""
    return True


def _flag_reads(text: str) -> list[tuple[str, str, str]]:
    """`getattr(config, "norm_x", d)` and `eagle_config.get("norm_x", d)`: (container, name,
    default). A flag read from a sub-dict falls back to the top level when the default is itself
    a `getattr` of the config; both reads are listed."""
    reads: dict[tuple[str, str, str], None] = {}
    for match in re.finditer(
        r"getattr\(\s*(?:self\.)?config\s*,\s*[\"'](\w+)[\"']\s*(?:,\s*(\w+))?", text
    ):
        if "norm" in match.group(1):
            reads.setdefault(("", match.group(1), match.group(2) or ""))
    for match in re.finditer(r"\b(\w+)\.get\(\s*[\"'](\w+)[\"']", text):
        holder, name = match.groups()
        if holder.endswith("_config") and holder != "_config" and "norm" in name:
            reads.setdefault((holder, name, ""))
    return list(reads)
