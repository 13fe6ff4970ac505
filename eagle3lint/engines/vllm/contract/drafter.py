"""The drafter side of the EAGLE-3 contract: what one vLLM tree reads from a draft config.

`eagle3lint pair` needs, for the analysed release: which drafter architectures are registered,
how an EAGLE-style config's architecture is renamed and how a speculators config is translated,
where each model runner reads the aux layer ids, how many aux states the drafter class expects
and which norm flags it reads, which classes the proposer accepts and whether it checks the
embedding width before sharing the target's. Each is found by its shape in the release's own
files (a statement pattern, not a line or a version), because vLLM moves and renames them.
The facts are cached by the content of the files read, like the gate and the proposer mapping.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from eagle3lint.engines.vllm.contract.draft_context import (
    SELECTION,
    V1_RUNNER,
    DraftContext,
    read_draft_context,
)
from eagle3lint.engines.vllm.contract.draft_rotary import (
    CONFIG_PATCH,
    LLAMA,
    ROTARY_FILES,
    DraftRotary,
    read_draft_rotary,
)
from eagle3lint.engines.vllm.contract.drafter_class import (
    IDS_KEY,
    MODELS_DIR,
    ConfigKey,
    DrafterClassFacts,
    drafter_bases,
    drafter_class,
    layer_bases,
)
from eagle3lint.engines.vllm.contract.method_choice import (
    SPECULATIVE,
    SPECULATOR_CONFIG,
    MethodChoice,
    read_method_choice,
    speculator_config_files,
)
from eagle3lint.engines.vllm.contract.model import PROPOSER_FILES
from eagle3lint.index.cache import SummaryCache, content_key
from eagle3lint.sources.files import UnreadableSource, read_source_bytes
from eagle3lint.sources.source_text import (
    function_around,
    function_named,
    line_at,
    strip_comments,
)

EAGLE_CONFIG = "transformers_utils/configs/eagle.py"
SPECULATORS_ALGOS = "transformers_utils/configs/speculators/algos.py"
V2_EAGLE_UTILS = "v1/worker/gpu/spec_decode/eagle/utils.py"
"""Where model runner V2 shares the target's lm_head with the drafter (and quantizes it)."""
ID_RUNNERS = (
    ("model runner v1", "v1/worker/gpu_model_runner.py"),
    ("model runner v2", "v1/worker/gpu/spec_decode/eagle/eagle3_utils.py"),
)
"""Where each model runner reads the layer ids from the draft config."""


@dataclass(slots=True)
class RunnerIds:
    """Where one model runner reads the layer ids: the first source holding a list wins."""

    runner: str
    path: str
    line: int
    sources: list[ConfigKey] = field(default_factory=list)


@dataclass(slots=True)
class Renaming:
    """`EAGLEConfig`'s renaming of an EAGLE-style draft architecture for method eagle3."""

    path: str
    line: int
    prefix: str
    keep_prefixes: list[str] = field(default_factory=list)
    keep_suffixes: list[str] = field(default_factory=list)
    keep_names: list[str] = field(default_factory=list)

    def apply(self, arch: str) -> str:
        if (
            any(arch.startswith(p) for p in self.keep_prefixes)
            or any(arch.endswith(s) for s in self.keep_suffixes)
            or arch in self.keep_names
        ):
            return arch
        return f"{self.prefix}{arch}"


@dataclass(slots=True)
class PassThrough:
    """`pre_trained_config[target] = config_dict.get(source, default)` in the translation."""

    target: str
    source: str
    default: str | None = None
    """The default's source text; None when the key is copied only if present."""


@dataclass(slots=True)
class SpeculatorsTranslation:
    """How one registered function (`update_eagle3` for `speculators_model_type: eagle3`)
    turns a speculators config into the drafter's config."""

    path: str
    line: int
    refusal: str = ""
    """The error the function raises for every config of its type (P-EAGLE in 0.34)."""
    unmapped: str = ""
    """The error for a `model_type` the map lacks, `{model_type}` left in."""
    forced_arch: str | None = None
    arch_by_model_type: dict[str, str] = field(default_factory=dict)
    default_model_type: str | None = None
    passthrough: list[PassThrough] = field(default_factory=list)

    def architecture(self, model_type: str | None) -> str | None:
        """The drafter architecture for `transformer_layer_config.model_type`; None when the
        translation raises for it."""
        if self.forced_arch is not None:
            return self.forced_arch
        return self.arch_by_model_type.get(model_type or self.default_model_type or "")


@dataclass(slots=True)
class DrafterContract:
    """Everything `pair` reads from the release, apart from the registry (read by the index)."""

    renamings: dict[str, Renaming] = field(default_factory=dict)
    """By method (`eagle`, `eagle3`, `dflash`): the methods whose drafts EAGLEConfig wraps."""
    speculators: dict[str, SpeculatorsTranslation] = field(default_factory=dict)
    """By `speculators_model_type`: the types the release loads."""
    speculators_path: str = ""
    method_choice: MethodChoice | None = None
    runners: list[RunnerIds] = field(default_factory=list)
    proposer_path: str | None = None
    proposer_line: int = 0
    proposer_accepts: list[str] | None = None
    """Classes the proposer asserts the drafter is; None when it asserts nothing."""
    embed_width_checked: bool = False
    """The proposer keeps the draft's own embedding when its width differs from the target's."""
    drafters: dict[str, DrafterClassFacts] = field(default_factory=dict)
    """By module name (`llama_eagle3`)."""
    head_quantization_refusal: str = ""
    """Model runner V2's error for `draft_lm_head_quantization` with a drafter that keeps its own
    lm_head; empty where the release has no such refusal."""
    head_quantization_path: str = ""
    context: DraftContext = field(default_factory=DraftContext)
    """How the release fits the draft's positions to the served context."""
    rotary: DraftRotary = field(default_factory=DraftRotary)
    """Where the release makes the drafter's rotary embedding partial."""


def read_drafter_contract(
    vllm_dir: Path,
    drafter_modules: list[str],
    speculative_modules: list[str],
    cache: SummaryCache | None,
) -> DrafterContract:
    """The drafter facts of the tree at `vllm_dir`, for the given EAGLE-3 drafter modules;
    `speculative_modules` are every speculative-decoding module of the registry (the draft
    classes that declare their method)."""
    rels = [
        EAGLE_CONFIG,
        SPECULATORS_ALGOS,
        SPECULATIVE,
        SPECULATOR_CONFIG,
        *(rel for _, rel in ID_RUNNERS),
        *PROPOSER_FILES,
        *(f"{MODELS_DIR}/{m}.py" for m in sorted({*drafter_modules, *speculative_modules})),
        *(p.relative_to(vllm_dir).as_posix() for p in speculator_config_files(vllm_dir)),
    ]
    rels += [V2_EAGLE_UTILS, SELECTION, V1_RUNNER, *ROTARY_FILES, CONFIG_PATCH, LLAMA]
    texts: dict[str, str] = {}
    digest = hashlib.blake2b(digest_size=20)
    # Which modules are drafters decides what is read of them, not only which files are read.
    digest.update("\0".join(drafter_modules).encode() + b"\1")

    def take(rel: str) -> None:
        digest.update(f"{vllm_dir / rel}\0".encode())
        with contextlib.suppress(UnreadableSource):
            data = read_source_bytes(vllm_dir / rel)
            digest.update(data)
            texts[rel] = data.decode("utf-8", errors="replace")

    for rel in dict.fromkeys(rels):
        take(rel)
    # The decoder layers the drafters build on: whether they read a sliding window.
    for base in sorted({b for m in drafter_modules for b in layer_bases(texts, m)} - set(rels)):
        take(base)
    key = content_key(digest.digest(), "drafter-contract-6")
    cached = cache.load(key, DrafterContract) if cache else None
    if cached is not None:
        return cached

    def read(path: Path) -> str | None:
        try:
            return texts.get(path.relative_to(vllm_dir).as_posix())
        except ValueError:
            return None

    facts = DrafterContract(
        renamings=_renamings(texts.get(EAGLE_CONFIG), str(vllm_dir / EAGLE_CONFIG)),
        speculators=_speculators(texts.get(SPECULATORS_ALGOS), str(vllm_dir / SPECULATORS_ALGOS)),
        speculators_path=str(vllm_dir / SPECULATORS_ALGOS),
        method_choice=read_method_choice(vllm_dir, read),
        runners=[
            found
            for runner, rel in ID_RUNNERS
            if (found := _runner_ids(runner, texts.get(rel), str(vllm_dir / rel))) is not None
        ],
        drafters=_drafters(texts, drafter_modules, vllm_dir / MODELS_DIR),
        context=read_draft_context(texts, str(vllm_dir)),
        rotary=read_draft_rotary(texts, str(vllm_dir)),
    )
    _read_proposer(facts, vllm_dir, texts)
    refusal = re.search(
        r"raise\s+ValueError\(\s*[\"'](draft_lm_head_quantization needs[^\"'\n]*)[\"']"
        r"(?:\s*[\"']([^\"'\n]*)[\"'])?",
        texts.get(V2_EAGLE_UTILS, ""),
    )
    if refusal is not None:
        facts.head_quantization_refusal = refusal.group(1) + (refusal.group(2) or "")
        facts.head_quantization_path = str(vllm_dir / V2_EAGLE_UTILS)
    if cache:
        cache.store(key, facts)
    return facts


def _drafters(
    texts: dict[str, str], modules: list[str], models_dir: Path
) -> dict[str, DrafterClassFacts]:
    """Each drafter module's facts; a module that builds no `fc` of its own takes those of the
    drafter module it builds on (DSpark on DFlash)."""
    found: dict[str, DrafterClassFacts] = {}
    for module in modules:
        bases = {b: texts.get(b, "") for b in layer_bases(texts, module)}
        facts = drafter_class(module, texts.get(f"{MODELS_DIR}/{module}.py"), models_dir, bases)
        if facts is not None:
            found[module] = facts
    for module in modules:
        inherited = [found[b] for b in drafter_bases(texts, module, modules) if b in found]
        if module not in found and inherited:
            found[module] = inherited[0]
    return found


def _renamings(text: str | None, path: str) -> dict[str, Renaming]:
    """Each `method == "<m>"` branch of EAGLEConfig: `arch if arch.startswith("Eagle3") or
    arch.endswith("Eagle3") else f"Eagle3{arch}"` and its kin."""
    found: dict[str, Renaming] = {}
    for branch in re.finditer(r"method\s*==\s*[\"'](\w+)[\"']", text or ""):
        assert text is not None
        end = re.search(r"\n[ \t]*(?:elif\b|else:)", text[branch.end() :])
        body = text[branch.end() : branch.end() + end.start()] if end else text[branch.end() :]
        prefix = re.search(r"f[\"'](\w*)\{arch\}[\"']", body)
        if prefix is None or branch.group(1) in found:
            continue
        found[branch.group(1)] = Renaming(
            path,
            line_at(text, branch.start()),
            prefix.group(1),
            re.findall(r"\.startswith\([\"'](\w+)[\"']\)", body),
            re.findall(r"\.endswith\([\"'](\w+)[\"']\)", body),
            re.findall(r"\barch\s*==\s*[\"'](\w+)[\"']", body),
        )
    return found


# The patterns below run on text of the analysed tree, so none may backtrack more than a
# constant per character: a `\w+` that starts anywhere in a long word is anchored by `\b`, two
# `\s*` are never adjacent, `[^)]*` does not cross an opening bracket, and a default's text is
# taken possessively, at most 200 characters (a long identifier in a drafter module took 13 s).
_PASS = re.compile(
    r"pre_trained_config\[[\"'](\w+)[\"']\]\s*=\s*config_dict"
    r"(?:\.get\(\s*[\"'](\w+)[\"']\s*(?:,\s*([^)\s][^)\n]{0,200}+)\s*)?\)"
    r"|\[\s*[\"'](\w+)[\"']\s*\])"
)


def _speculators(text: str | None, path: str) -> dict[str, SpeculatorsTranslation]:
    """The function registered for each `speculators_model_type`."""
    found: dict[str, SpeculatorsTranslation] = {}
    for registered in re.finditer(
        r"@\w+\(\s*[\"'](\w+)[\"']\s*\)[ \t]*\n\s*def\s+(\w+)", text or ""
    ):
        assert text is not None
        translation = _translation(text, registered.group(2), path)
        if translation is not None:
            found.setdefault(registered.group(1), translation)
    return found


def _translation(text: str, function: str, path: str) -> SpeculatorsTranslation | None:
    found = function_named(text, function)
    if found is None:
        return None
    body, line = found
    body = strip_comments(body)
    facts = SpeculatorsTranslation(path, line)
    lines = [line for line in body.split("\n")[1:] if line.strip()]
    indent = min((len(line) - len(line.lstrip()) for line in lines), default=0)
    # A raise at the body's own indentation is unconditional: every config of the type fails.
    refused = re.search(
        rf"^[ \t]{{{indent}}}raise\s+\w+\(\s*[\"']([^\"'\n]+)[\"']", "\n".join(lines), re.MULTILINE
    )
    if refused is not None:
        facts.refusal = refused.group(1)
        return facts
    for match in _PASS.finditer(body):
        target, source, default, indexed = match.groups()
        if target == "architectures":
            continue
        default = default.rstrip() if default is not None else None
        facts.passthrough.append(PassThrough(target, source or indexed, default))
    # `= ["X"]`, or `= selected or ["X"]` (DSpark keeps a listed architecture it supports; the
    # default is what a head of another name gets).
    forced = re.search(
        r"pre_trained_config\[[\"']architectures[\"']\]\s*="
        r"[ \t]*(?:\w+[ \t]+or[ \t]+)?\[[\"'](\w+)",
        body,
    )
    if forced is not None:
        facts.forced_arch = forced.group(1)
        return facts
    mapped = re.search(r"pre_trained_config\[[\"']architectures[\"']\]\s*=\s*\[(\w+)\[", body)
    if mapped is not None:
        literal = re.search(rf"\b{mapped.group(1)}\s*=\s*\{{([^{{}}]*)\}}", body)
        if literal is not None:
            facts.arch_by_model_type = dict(
                re.findall(r"[\"'](\w+)[\"']\s*:\s*[\"'](\w+)[\"']", literal.group(1))
            )
        unmapped = re.search(r"raise\s+\w+\(\s*f[\"'](Unsupported model_type[^\"'\n]*)", body)
        facts.unmapped = unmapped.group(1) if unmapped else ""
        default = re.search(r"\.get\(\s*[\"']model_type[\"']\s*,\s*[\"'](\w+)[\"']", body)
        facts.default_model_type = default.group(1) if default else None
    return facts


def _runner_ids(runner: str, text: str | None, path: str) -> RunnerIds | None:
    """The ids sources of the function reading `eagle_aux_hidden_state_layer_ids`, in order:
    `getattr(cfg, k)`, `<sub>.get(k)` and `for name in (...)` lookups, and the `[i + 1 for i in
    ...]` conversions of DFlash and DSpark keys (with their shift)."""
    if text is None:
        return None
    found = function_around(text, f'"{IDS_KEY}"')
    if found is None:
        return None
    body, line = found
    body = strip_comments(body)
    containers = dict(re.findall(r"\b(\w+)\s*=\s*getattr\(\s*\w+,\s*[\"'](\w+)[\"']", body))
    loops = {
        var: re.findall(r"[\"'](\w+)[\"']", names)
        for var, names in re.findall(r"^[ \t]*for\s+(\w+)\s+in\s+\(([^()]*)\)", body, re.MULTILINE)
    }
    loop_of = _loop_variables(body, loops)
    sources: list[ConfigKey] = []
    statement = re.compile(
        r"(?:\blayer_ids\s*=\s*getattr\(\s*\w+,\s*[\"'](\w+)[\"']"
        r"|hasattr\(\s*\w+,\s*[\"'](\w+)[\"']\)"
        r"|\blayer_ids\s*=\s*(\w+)\.get\(\s*[\"'](\w+)[\"']\s*\)"
        # `[i + 1 for i in (sub.get("k") or [])]`, `[i + 1 for i in name]`
        r"|\blayer_ids\s*=\s*\[\s*\w+[ \t]*\+[ \t]*(\d+)\s+for\s+\w+\s+in\s+"
        r"(?:\([ \t]*(\w+)\.get\([ \t]*[\"'](\w+)[\"'][ \t]*\)|(\w+)\s*\]))"
    )
    for match in statement.finditer(body):
        top, checked, holder, key, shift, sub, sub_key, name = match.groups()
        if shift is not None:
            if sub is not None and sub in containers:
                _add(sources, ConfigKey(containers[sub], sub_key, int(shift)))
            elif name is not None and name in containers:
                # `name = getattr(cfg, "k")`: a top-level key.
                _add(sources, ConfigKey("", containers[name], int(shift)))
            continue
        if top or checked:
            _add(sources, ConfigKey("", top or checked))
            continue
        getter = containers.get(holder)
        names = [getter] if getter is not None else loops.get(loop_of.get(holder, ""), [])
        for container in names:
            _add(sources, ConfigKey(container, key))
    return RunnerIds(runner, path, line, sources)


def _loop_variables(body: str, loops: dict[str, list[str]]) -> dict[str, str]:
    """For each name assigned a `getattr(...)` of a loop variable (`sub = getattr(cfg, name)`
    in `for name in (...)`), the first such variable, in the loops' order: one pass over the
    assignments, not one search of the body per name and loop."""
    rank = {var: number for number, var in enumerate(loops)}
    found: dict[str, tuple[int, str]] = {}
    for holder, arguments in re.findall(r"\b(\w+)\s*=\s*getattr\(([^()]*)", body):
        for word in re.findall(r"\w+", arguments):
            if word in rank and (holder not in found or rank[word] < found[holder][0]):
                found[holder] = (rank[word], word)
    return {holder: var for holder, (_, var) in found.items()}


def _add(sources: list[ConfigKey], key: ConfigKey) -> None:
    if key not in sources:
        sources.append(key)


_ACCEPTS = re.compile(
    r"assert\s+isinstance\(\s*(?:self\.)?model\s*,\s*(?:\(\s*)?([\w,][\w\s,]*+)\)?\s*\)"
)


def _read_proposer(facts: DrafterContract, vllm_dir: Path, texts: dict[str, str]) -> None:
    """The classes the proposer asserts before `combine_hidden_states`, and whether it compares
    embedding widths before sharing the target's."""
    for rel in PROPOSER_FILES:
        text = texts.get(rel)
        if text is None or "combine_hidden_states" not in text:
            continue
        facts.proposer_path = str(vllm_dir / rel)
        call = text.find("combine_hidden_states(")
        window_start = text.rfind("assert isinstance(", 0, call)
        if window_start >= 0 and call - window_start < 600:
            match = _ACCEPTS.match(text, window_start)
            if match is not None:
                facts.proposer_accepts = re.findall(r"\w+", match.group(1))
                facts.proposer_line = line_at(text, window_start)
        share = function_named(text, "_maybe_share_embeddings")
        facts.embed_width_checked = bool(
            share and re.search(r"\.weight\.shape\[-1\]", strip_comments(share[0]))
        )
        return
