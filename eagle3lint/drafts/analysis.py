"""What a draft/target pair amounts to in one release: the drafter class vLLM builds, the layer
ids each runner requests and the layers they tap, the aux count, the vocabulary mapping.

The draft-pairing rule turns it into findings; `pair` shows it as its summary table.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eagle3lint.drafts.context import Served, derived_length, rope_types, served
from eagle3lint.drafts.draft import (
    SPECULATORS,
    SUB_CONFIG,
    DraftPairing,
    Translated,
    translate,
)
from eagle3lint.drafts.rotary import HeadRotary, untrained_partial_rotary
from eagle3lint.engines.vllm.contract.drafter import (
    DrafterClassFacts,
    DrafterContract,
    RunnerIds,
    read_drafter_contract,
)
from eagle3lint.engines.vllm.contract.method_choice import DraftSeen, Resolution
from eagle3lint.engines.vllm.contract.model import REGISTRY, V1
from eagle3lint.engines.vllm.names import LANGUAGE_MODEL_ATTR
from eagle3lint.engines.vllm.targets import Target
from eagle3lint.index.model import DictEntry
from eagle3lint.index.project import ProjectIndex
from eagle3lint.layer_ids import listed
from eagle3lint.sources.files import UnreadableSource, read_source_bytes
from eagle3lint.sources.source_text import function_named

DRAFTER_FAMILIES = ("Eagle3", "DFlash", "DSpark")
"""The registry keys of the drafters `pair` reads (`Eagle3LlamaForCausalLM`, `DFlashDraftModel`,
`Qwen3DSparkModel`)."""


@dataclass
class RunnerRequest:
    """The layer ids one model runner asks the target for."""

    runner: RunnerIds
    ids: list[Any] | None
    """None: the config holds none where this runner looks, so the target's default is used."""
    source: str = ""
    key: str = ""
    """The config key the ids were read from (`eagle_aux_hidden_state_layer_ids`)."""


@dataclass
class Analysis:
    """One pair in one release."""

    target_arch: str
    release: str
    draft_format: str
    declared_arch: str | None
    translated: Translated
    drafter: DictEntry | None
    """The registry entry of the drafter architecture; None when it is not registered."""
    facts: DrafterContract
    drafter_facts: DrafterClassFacts | None
    target_hidden: int | None
    target_layers: int | None
    target_vocab: int | None
    requests: list[RunnerRequest] = field(default_factory=list)
    default_ids: list[int] | None = None
    default_source: str = ""
    pre_layer_taps: bool | None = None
    """The target taps before each layer (cannot capture index num_layers); None: no taps."""
    uses_aux: bool = True
    aux_expected: int | None = None
    aux_source: str = ""
    id_places: dict[str, list[Any]] = field(default_factory=dict)
    """Every place in the draft config holding a list named like layer ids."""
    resolution: Resolution = field(default_factory=lambda: Resolution("eagle3", "configured"))
    """The method the release runs the draft with, and why."""
    runner: str | None = None
    """The model runner that runs the pair (`v1`, `v2`); None when the tree has one choice."""
    runner_why: str = ""
    draft_positions: int | None = None
    """The length vLLM derives from the draft config (None: it holds no length key)."""
    draft_rope: list[str] = field(default_factory=list)
    served: Served | None = None
    """The context the target is served at (`--max-model-len`, else its own length)."""
    head_rotary: HeadRotary | None = None
    """A partial rotary factor the head's trainer did not train with (speculators < 0.7.0)."""
    unregistered: str | None = None
    """The draft's own architecture (EAGLE-style config) when no registry dict names it: vLLM
    refuses the draft before it chooses a method."""

    @property
    def checked(self) -> bool:
        """Whether `pair` checks this pair: run as EAGLE-3, or as DFlash or DSpark where the
        release's drafter class was read."""
        method = self.resolution.method
        family = method in ("dflash", "dspark") and self.drafter_facts is not None
        return method == "eagle3" or family

    @property
    def chosen(self) -> RunnerRequest | None:
        """The request of the runner that runs the pair (the first one when the tree has no
        choice to make)."""
        for request in self.requests:
            if self.runner is not None and request.runner.runner.endswith(f" {self.runner}"):
                return request
        return self.requests[0] if self.requests else None

    def ids_of(self, request: RunnerRequest | None) -> list[Any] | None:
        """The ids `request`'s runner asks for: the config's, else the target's default."""
        ids = request.ids if request is not None else None
        return ids if ids is not None else self.default_ids

    @property
    def tapped_ids(self) -> list[Any] | None:
        """The ids the runner that runs the pair requests, or the target's default."""
        return self.ids_of(self.chosen)

    @property
    def aux_provided(self) -> int | None:
        """How many aux states the target returns for `tapped_ids`."""
        return self.states_for(self.tapped_ids)

    @staticmethod
    def states_for(ids: list[Any] | None) -> int | None:
        """How many aux states the target returns for `ids`: every vLLM decoder taps by
        membership (`idx in aux_hidden_state_layers`), so a repeated id is captured once."""
        if ids is None:
            return None
        return len({k if _is_int(k) else repr(k) for k in ids})

    @staticmethod
    def captured(ids: list[Any]) -> list[Any]:
        """The order the aux states arrive in: the decoder's loop order, each layer once."""
        ints = sorted({k for k in ids if _is_int(k)})
        return ints + [k for k in ids if not _is_int(k)]

    @property
    def draft_vocab(self) -> int | None:
        value = self.translated.config.get("draft_vocab_size")
        if not _is_int(value):
            value = self.translated.config.get("vocab_size")
        return value if _is_int(value) else None

    @property
    def draft_width(self) -> int | None:
        """What the drafter sizes `fc` by: target_hidden_size, else its own hidden_size."""
        for key in ("target_hidden_size", "hidden_size"):
            value = self.translated.config.get(key)
            if _is_int(value):
                return value
        return None

    listed = staticmethod(listed)
    """A list of ids as messages show it: a few of a long one, and the count."""

    @staticmethod
    def physical(ids: list[Any]) -> str:
        """`2→out of layer 1` style: index k is the stream entering layer k (a few of a long
        list, and the count)."""
        return listed(ids, _physical, brackets=False)

    def vocab_mapping(self, pairing: DraftPairing) -> str:
        draft, target = self.draft_vocab, self.target_vocab
        if draft is None or target is None:
            return "unknown (no vocab size)"
        if draft == target:
            return f"shared vocabulary ({target})"
        if pairing.checkpoint is None:
            return f"{draft} → {target} (no weights given: d2t not checked)"
        has = [name for name in ("d2t", "t2d") if pairing.checkpoint.find(name)]
        return f"{draft} → {target} via {'/'.join(has)}" if has else f"{draft} → {target}, no d2t"

    def to_json(self, pairing: DraftPairing, verdict: str) -> dict[str, object]:
        return {
            "target_arch": self.target_arch,
            "release": self.release,
            "draft": {
                "config": str(pairing.draft.path),
                "format": self.draft_format,
                "declared_arch": self.declared_arch,
                "arch": self.translated.architecture,
                "drafter_class": self.drafter.cls if self.drafter else None,
                "weights": [str(p) for p in pairing.checkpoint.files] if pairing.checkpoint else [],
            },
            "layer_ids": [
                {
                    "runner": r.runner.runner,
                    "ids": r.ids,
                    "source": r.source or None,
                    "captured": self.captured(ids) if (ids := self.ids_of(r)) is not None else None,
                }
                for r in self.requests
            ],
            "default_ids": self.default_ids,
            "tapped_ids": self.tapped_ids,
            "aux_expected": self.aux_expected if self.uses_aux else None,
            "aux_provided": self.aux_provided,
            "vocab": {"draft": self.draft_vocab, "target": self.target_vocab},
            "vocab_mapping": self.vocab_mapping(pairing),
            "pipeline_parallel_size": pairing.pipeline_size,
            "method": {
                "name": self.resolution.method,
                "how": self.resolution.how or None,
                "refusal": self.resolution.refusal or None,
                "configured": pairing.settings.method if pairing.settings.given else None,
                "model": pairing.settings.model if pairing.settings.given else None,
            },
            "runner": self.runner,
            "verdict": verdict,
        }


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _physical(k: Any) -> str:
    if not _is_int(k):
        return f"{k!r}→?"
    return "0→embeddings" if k == 0 else f"{k}→out of layer {k - 1}"


def speculative_entries(index: ProjectIndex) -> dict[str, DictEntry]:
    """The registry's speculative-decoding dict: the one registering `Eagle3*` drafters."""
    summary = index.summary(REGISTRY)
    if summary is None:
        return {}
    for literal in summary.registry_dicts.values():
        keys = {e.key: e for e in literal.entries}
        if any("Eagle3" in key for key in keys):
            return keys
    return {}


def registered_architectures(index: ProjectIndex) -> set[str]:
    """Every architecture the registry's dicts name (the draft's own `architectures` must be
    one: vLLM builds the draft's model config before it chooses the method)."""
    summary = index.summary(REGISTRY)
    if summary is None:
        return set()
    return {e.key for literal in summary.registry_dicts.values() for e in literal.entries}


def analyse(pairing: DraftPairing, target: Target) -> Analysis:
    """The pair as the target's release builds it; made once per target and kept on the
    pairing, for the rules that need it (the draft-pairing rule, and the taps rule for the ids
    and the pipeline size)."""
    kept = pairing.analysis
    if isinstance(kept, Analysis) and kept.target_arch == target.arch:
        return kept
    pairing.analysis = _analyse(pairing, target)
    return pairing.analysis


def _analyse(pairing: DraftPairing, target: Target) -> Analysis:
    index, contract = target.index, target.contract
    entries = speculative_entries(index)
    modules = sorted(
        {
            e.module.rsplit(".", 1)[-1]
            for k, e in entries.items()
            if any(family in k for family in DRAFTER_FAMILIES)
        }
    )
    every = sorted({e.module.rsplit(".", 1)[-1] for e in entries.values()})
    facts = read_drafter_contract(Path(contract.root), modules, every, index.cache)
    resolution, translated = _method_and_translation(pairing, facts, entries)
    drafter = entries.get(translated.architecture or "")
    text = pairing.target_text
    analysis = Analysis(
        target_arch=target.arch,
        release=contract.version or "?",
        draft_format=pairing.draft.format,
        declared_arch=pairing.draft.declared_architecture(),
        translated=translated,
        drafter=drafter,
        facts=facts,
        drafter_facts=facts.drafters.get(drafter.module.rsplit(".", 1)[-1]) if drafter else None,
        target_hidden=_int(text.get("hidden_size")),
        target_layers=_int(text.get("num_hidden_layers")),
        target_vocab=_int(text.get("vocab_size")),
        resolution=resolution,
    )
    analysis.runner, analysis.runner_why = _runner(pairing, target)
    analysis.draft_positions = derived_length(translated.config)
    analysis.draft_rope = rope_types(translated.config)
    analysis.served = served(pairing.target, pairing.max_model_len, pairing.hf_overrides)
    analysis.head_rotary = untrained_partial_rotary(pairing.draft.data)
    declared = analysis.declared_arch
    if pairing.draft.format != SPECULATORS and declared is not None:
        known = registered_architectures(index)
        if known and declared not in known:
            analysis.unregistered = declared
    for runner in facts.runners:
        analysis.requests.append(_request(runner, translated))
    analysis.id_places = _id_places(translated.config)
    if analysis.target_layers is not None:
        found = default_layers(target, index, contract.getter, analysis.target_layers)
        if found is not None:
            analysis.default_ids, analysis.default_source = found
    analysis.pre_layer_taps = _pre_layer_taps(target, index)
    _aux_count(analysis)
    return analysis


def _method_and_translation(
    pairing: DraftPairing, facts: DrafterContract, entries: dict[str, DictEntry]
) -> tuple[Resolution, Translated]:
    """The method the release chooses for the draft, and the draft config as that method's
    drafter reads it. A speculators config is translated first (its loading picks the
    architecture the method choice then looks at); an EAGLE-style one is renamed for the
    method chosen."""
    draft, settings = pairing.draft, pairing.settings
    translated = translate(draft, facts, None) if draft.format == SPECULATORS else None
    if translated is not None:
        archs = (translated.architecture,) if translated.architecture else ()
        model_type: Any = "speculators"
    else:
        declared = draft.data.get("architectures")
        archs = (
            tuple(a for a in declared if isinstance(a, str)) if isinstance(declared, list) else ()
        )
        model_type = draft.data.get("model_type")
    entry = next((entries[a] for a in archs if a in entries), None)
    seen = DraftSeen(
        settings.model,
        archs,
        model_type if isinstance(model_type, str) else None,
        entry.cls if entry else None,
    )
    if facts.method_choice is None:
        resolution = Resolution(settings.method or "eagle3", "configured (not read)")
    else:
        resolution = facts.method_choice.resolve(settings.method, seen)
    if not settings.given:
        resolution.how = "assumed: pair got --draft, not --speculative-config"
    return resolution, translated or translate(draft, facts, resolution.method)


def _runner(pairing: DraftPairing, target: Target) -> tuple[str | None, str]:
    """The runner the pair runs on by default on the run's platform: the target's, unless the
    speculative config asks for what V2 lacks (parallel drafting for EAGLE before 0.34)."""
    runners = target.contract.runners
    if runners is None:
        return None, ""
    if len(runners.present) == 1:
        return runners.present[0], "the only runner"
    options = pairing.settings.options
    if options.get("parallel_drafting") is True:
        lacks = [f for f in runners.v1_features if "parallel drafting" in f]
        if lacks:
            return V1, f"V2 lacks {lacks[0]}"
    return target.runner, f"the target's default on {target.contract.setup.platform}"


def _int(value: Any) -> int | None:
    return value if _is_int(value) else None


def _request(runner: RunnerIds, translated: Translated) -> RunnerRequest:
    for source in runner.sources:
        value = translated.value(source)
        if value and isinstance(value, list | tuple):
            ids = [k + source.shift if _is_int(k) else k for k in value]
            return RunnerRequest(runner, ids, source.text(), source.key)
    return RunnerRequest(runner, None)


def _id_places(config: dict[str, Any]) -> dict[str, list[Any]]:
    places: dict[str, list[Any]] = {}
    for holder, prefix in ((config, ""), (config.get(SUB_CONFIG), f"{SUB_CONFIG}.")):
        if not isinstance(holder, dict):
            continue
        for key, value in holder.items():
            if key.endswith("layer_ids") and isinstance(value, list) and value:
                places[prefix + key] = value
    return places


def _aux_count(analysis: Analysis) -> None:
    """How many aux states the drafter's `fc` is sized for, read as its class reads it."""
    sub = analysis.translated.config.get(SUB_CONFIG)
    if isinstance(sub, dict) and sub.get("use_aux_hidden_state") is False:
        analysis.uses_aux = False
        return
    facts = analysis.drafter_facts
    if facts is None:
        return
    if facts.fixed_aux is not None:
        analysis.aux_expected = facts.fixed_aux
        analysis.aux_source = f"fixed in {Path(facts.path).name}"
        return
    if facts.count_runner_ids:
        # The reader is model runner V2's (`get_eagle3_aux_layers_from_config`).
        reader = next((r for r in analysis.requests if r.runner.runner.endswith(" v2")), None)
        ids = (reader or analysis.chosen).ids if (reader or analysis.chosen) else None
        if ids:
            analysis.aux_expected, analysis.aux_source = len(ids), "one per id the runner reads"
            return
    for key in facts.count_keys:
        value = analysis.translated.config.get(key)
        if _is_int(value):
            analysis.aux_expected, analysis.aux_source = value, key
            return
    for source in facts.count_id_sources:
        value = analysis.translated.value(source)
        if value and isinstance(value, list | tuple):
            analysis.aux_expected = len(value)
            analysis.aux_source = f"len({source.text()})"
            return
    default = analysis.translated.config.get(facts.default_count_key)
    if facts.default_count_key and _is_int(default):
        analysis.aux_expected, analysis.aux_source = default, facts.default_count_key
        return
    analysis.aux_expected, analysis.aux_source = facts.default_aux, "default"


def _pre_layer_taps(target: Target, index: ProjectIndex) -> bool | None:
    inner = target.decoder_owner.inner_model
    found = index.forward_of(inner) if inner is not None else None
    if found is None:
        return None
    forward = found[1]
    taps = [t for loop in forward.loops for t in loop.taps] + forward.pre_loop_taps
    return all(t.before_layer for t in taps) if taps else None


def default_layers(
    target: Target, index: ProjectIndex, getter: str, num_layers: int
) -> tuple[list[int], str] | None:
    """The ids the target's getter returns for `num_layers` layers (the config's text
    `num_hidden_layers`), read from its `return` tuple (`(2, num_layers // 2, num_layers - 3)`);
    None when it is not such a tuple."""
    current: Target | None = target
    for _ in range(4):
        if current is None:
            return None
        found = current.method(getter)
        if found is None:
            return None
        owner, method = found
        if method.delegates_to is None:
            break
        current = current.language_model if method.delegates_to == LANGUAGE_MODEL_ATTR else None
    else:
        return None
    source = index.source_file(owner.file.module)
    try:
        text = read_source_bytes(source.path).decode("utf-8", errors="replace") if source else ""
    except UnreadableSource:
        return None
    lines = text.splitlines(keepends=True)
    body = function_named("".join(lines[method.line - 1 :]), getter)
    if body is None:
        return None
    returned = re.search(r"return\s+(\([^()]*(?:\([^()]*\)[^()]*)*\))", body[0])
    # The layer list's length, or the config's count where the decoder is not vLLM's (the
    # Transformers backend's `num_layers = self.text_config.num_hidden_layers`).
    counted = re.search(
        r"\b(\w+)\s*=\s*(?:len\([^()]*layers\)|self(?:\.\w+)*\.num_hidden_layers\b)", body[0]
    )
    if returned is None or counted is None:
        return None
    try:
        values = _evaluate(
            ast.parse(returned.group(1), mode="eval").body, counted.group(1), num_layers
        )
    except (SyntaxError, ValueError, RecursionError):
        return None
    where = f"{index.display_path(owner.file)}:{method.line}"
    return (values if isinstance(values, list) else [values]), where


def _evaluate(node: ast.expr, name: str, value: int) -> Any:
    """Integer arithmetic on one name: the only expressions a default getter returns."""
    if isinstance(node, ast.Tuple):
        return [_evaluate(e, name, value) for e in node.elts]
    if isinstance(node, ast.Constant) and _is_int(node.value):
        return node.value
    if isinstance(node, ast.Name) and node.id == name:
        return value
    if isinstance(node, ast.BinOp):
        left, right = _evaluate(node.left, name, value), _evaluate(node.right, name, value)
        operations = {ast.Add: int.__add__, ast.Sub: int.__sub__, ast.FloorDiv: int.__floordiv__}
        for kind, operation in operations.items():
            if isinstance(node.op, kind) and (kind is not ast.FloorDiv or right):
                return operation(left, right)
    raise ValueError("not integer arithmetic on the layer count")
