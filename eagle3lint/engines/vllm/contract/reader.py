"""Read the EAGLE-3 contract from a vLLM tree's own sources.

Each part is found by its shape, not by a name or a line, because vLLM renames and moves them
between releases: the protocol in `interfaces.py`, the getter the runners call, the model_type
allow-list in `config/speculative.py` (renamed in 0.17, gone in 0.22) and the proposer's
image-token mapping (moved to `llm_base_proposer.py` in 0.20).
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from eagle3lint.engines.vllm.contract.draft_archs import read_draft_architectures
from eagle3lint.engines.vllm.contract.head_layers import read_head_layers
from eagle3lint.engines.vllm.contract.model import (
    GATE_FILES,
    KNOWN_GETTERS,
    PROPOSER_FILES,
    REGISTRY,
    V2_EAGLE_LOADER,
    Contract,
    Gate,
    ImageTokenMap,
    TargetEmbedding,
)
from eagle3lint.engines.vllm.contract.refusals import read_refusals
from eagle3lint.engines.vllm.contract.runners import read_methods, read_runners
from eagle3lint.engines.vllm.contract.transformers_backend import read_backend_capture
from eagle3lint.engines.vllm.names import MIXIN, PP_RELAY_FLAG, PROTOCOL
from eagle3lint.index.cache import content_key
from eagle3lint.index.project import ProjectIndex
from eagle3lint.index.refs import ClassRef
from eagle3lint.signals import worker_pool
from eagle3lint.sources.files import (
    SourceNotFound,
    UnreadableSource,
    decode_text,
)

INTERFACES = "vllm.model_executor.models.interfaces"
RUNNER_FILES = (
    "v1/worker/gpu_model_runner.py",
    "v1/worker/gpu/spec_decode/eagle/eagle3_utils.py",
    "worker/model_runner.py",
)
CONFIG_REGISTRY_FILES = ("transformers_utils/config.py",)
# The registry's first line, then the line that closes it, searched one after the other: as one
# pattern, its body (`.*?`) was searched to the end of the file from every opening line, and
# 10,000 unclosed `_CONFIG_REGISTRY = {` lines took 114 s. (`\s*\w*\s*` would be quadratic in
# a run of blanks: `(?:\w+\s*)?` splits it one way only.)
_CONFIG_REGISTRY = re.compile(r"^_CONFIG_REGISTRY\b[^=\n]*=\s*(?:\w+\s*)?[({]\s*\n", re.MULTILINE)
_CLOSING_LINE = re.compile(r"^[)}]", re.MULTILINE)
# `kimi_vl="KimiVLConfig",` (LazyConfigDict) or `"chatglm": ChatGLMConfig,` (a plain dict).
_CONFIG_ENTRY = re.compile(
    r"""^[ \t]*(?:\w+\s*=\s*["'](\w+)["']|["'][\w.-]+["']\s*:\s*["']?(\w+))""", re.MULTILINE
)
# How the defaults take a language model with no `.model` as the decoder (0.28 and later).
_TAKES_BARE_DECODER = re.compile(
    r"""getattr\(\s*parent_ref\s*,\s*["']model["']\s*,\s*parent_ref\s*\)"""
)
_GETTER_CALL = re.compile(r"^[^#\n]*\.(get_eagle3_\w*aux_hidden_state_layers)\(", re.MULTILINE)
# typing's own bookkeeping names are not protocol members.
_NOT_MEMBERS = {"__init__", "__slots__", "__doc__", "__module__", "__annotations__"}


def read_contract(index: ProjectIndex, vllm_dir: Path, source: str) -> Contract:
    """The contract of the vLLM package at `vllm_dir` (a folder holding `model_executor/`)."""
    config_facts = _start_config_facts(index, vllm_dir)
    version_file = index.summary("vllm._version")
    for module in (INTERFACES, REGISTRY, "vllm._version"):
        # These decide the contract and the targets: a file that is there but cannot be read
        # must stop the check, not make the tree look like an older release.
        if index.summary(module) is None and (error := index.error_for(module)) is not None:
            raise UnreadableSource(error.message, Path(error.path), error.code)
    contract = Contract(
        version=version_file.version if version_file else None,
        source=source,
        root=str(vllm_dir),
        interfaces_module=INTERFACES if index.summary(INTERFACES) else None,
        protocol=None,
    )
    contract = _read_protocol(index, contract)
    contract = _read_runner(index, vllm_dir, contract)
    contract = _read_config_registry(index, vllm_dir, contract)
    runners = read_runners(vllm_dir, lambda path: read_if_there(index, path))
    methods = read_methods(vllm_dir, runners, lambda path: read_if_there(index, path))
    refusals = read_refusals(vllm_dir, runners, lambda path: read_if_there(index, path))
    backend = read_backend_capture(vllm_dir, lambda path: read_if_there(index, path))
    head_layers = read_head_layers(vllm_dir, lambda path: read_if_there(index, path))
    drafts = read_draft_architectures(vllm_dir, lambda path: read_if_there(index, path))
    facts = config_facts()
    return replace(
        contract,
        gate=facts.gate,
        image_tokens=facts.image_tokens,
        target_embeddings=facts.target_embeddings,
        runners=runners,
        refusals=refusals,
        methods=methods,
        backend_capture=backend,
        head_layers=head_layers,
        draft_architectures=drafts,
    )


def read_if_there(index: ProjectIndex, path: Path) -> str | None:
    """A file's text, noted among the run's inputs; None when it is not there."""
    try:
        return _read_text(index, path)
    except SourceNotFound:
        return None


@dataclass(slots=True)
class ConfigFacts:
    """The gate and the proposer's mapping: read with a full parse of two large files, so
    cached by their content like file summaries."""

    gate: Gate | None = None
    image_tokens: ImageTokenMap | None = None
    target_embeddings: tuple[TargetEmbedding, ...] = ()


_WORKER_MIN_BYTES = 64 * 1024
"""Below this many bytes (a fixture's or a small fork's files; a release's are 100-200 KB), the
facts are read here: a worker costs more to start than their parse takes."""


def _start_config_facts(index: ProjectIndex, vllm_dir: Path) -> Callable[[], ConfigFacts]:
    """Start reading the gate and the proposer's mapping; returns a function that waits for
    them. On a cache miss they are parsed in a worker process while this one reads the
    protocol: a cold `--arch` run is a chain of parses, and this is the one that can overlap."""
    digest = hashlib.blake2b(digest_size=20)
    size = 0
    for rel in (*GATE_FILES, *PROPOSER_FILES, V2_EAGLE_LOADER):
        path = vllm_dir / rel
        digest.update(f"{path}\0".encode())
        # Absent files are part of the key; one that is there but unreadable raises here.
        with contextlib.suppress(SourceNotFound):
            data = index.read_outside(path)
            digest.update(b"\1" + data)
            size += len(data)
    key = content_key(digest.digest(), "contract-facts-5")
    cached = index.cache.load(key, ConfigFacts) if index.cache else None
    if cached is not None:
        return lambda: cached
    worth = index.jobs > 1 and size >= _WORKER_MIN_BYTES
    pool = worker_pool(1) if worth else None
    future = pool.submit(_config_facts, vllm_dir) if pool else None

    def wait() -> ConfigFacts:
        try:
            facts = future.result() if future else _config_facts(vllm_dir)
        finally:
            if pool:
                pool.shutdown()
        if index.cache:
            index.cache.store(key, facts)
        return facts

    return wait


def _config_facts(vllm_dir: Path) -> ConfigFacts:
    from eagle3lint.engines.vllm.contract.config_files import (
        read_gate,
        read_image_tokens,
        read_target_embeddings,
    )

    return ConfigFacts(
        read_gate(vllm_dir), read_image_tokens(vllm_dir), read_target_embeddings(vllm_dir)
    )


def _find_class(index: ProjectIndex, name: str) -> ClassRef | None:
    return index.class_ref(INTERFACES, name)


def _read_protocol(index: ProjectIndex, contract: Contract) -> Contract:
    protocol = _find_class(index, PROTOCOL)
    mixin = _find_class(index, MIXIN)
    multimodal = _find_class(index, "SupportsMultiModal")
    if protocol is None:
        return contract
    members: dict[str, bool] = {}
    for entry in index.mro(protocol):
        if not isinstance(entry, ClassRef) or not entry.cls.is_protocol:
            continue
        for name in entry.cls.attrs:
            members.setdefault(name, True)
        for name, method in entry.cls.methods.items():
            if name not in _NOT_MEMBERS:
                members.setdefault(name, not method.is_stub)
    defaults = frozenset(
        name for name, method in protocol.cls.methods.items() if not method.is_stub
    )
    takes_bare = bool(defaults) and bool(
        _TAKES_BARE_DECODER.search(_read_text(index, Path(index.display_path(protocol.file))))
    )
    getters = [name for name in protocol.cls.methods if name.startswith("get_eagle3_")]
    return replace(
        contract,
        protocol=protocol.qualname,
        protocol_members=tuple(sorted(members)),
        default_methods=defaults,
        defaults_take_bare_decoder=takes_bare,
        getter=getters[0] if getters else contract.getter,
        getter_source=f"{index.display_path(protocol.file)}:{protocol.cls.line}",
        mixin=mixin.qualname if mixin else None,
        mixin_pp_relay=bool(mixin and PP_RELAY_FLAG in mixin.cls.attrs),
        multimodal_protocol=multimodal.qualname if multimodal else None,
    )


def _read_text(index: ProjectIndex, path: Path) -> str:
    """A source file read outside the summaries, noted among the run's inputs."""
    data = index.read_outside(path)
    try:
        return decode_text(data)
    except UnreadableSource as exc:
        exc.path = path
        raise


def _read_config_registry(index: ProjectIndex, vllm_dir: Path, contract: Contract) -> Contract:
    """The config classes vLLM builds a model's `config` from, by model_type."""
    for rel in CONFIG_REGISTRY_FILES:
        try:
            text = _read_text(index, vllm_dir / rel)
        except UnreadableSource:
            continue
        body = _config_registry_body(text)
        if body is not None:
            names = {a or b for a, b in _CONFIG_ENTRY.findall(body)}
            return replace(contract, model_configs=frozenset(names))
    return contract


def _config_registry_body(text: str) -> str | None:
    """The lines between `_CONFIG_REGISTRY = ...({` and the first line that starts with `)` or
    `}` after it; None when there is no such pair. Only the first opening line is tried: if no
    line closes it, none closes a later one either."""
    opening = _CONFIG_REGISTRY.search(text)
    closing = _CLOSING_LINE.search(text, opening.end()) if opening else None
    return text[opening.end() : closing.start()] if opening and closing else None


def _read_runner(index: ProjectIndex, vllm_dir: Path, contract: Contract) -> Contract:
    """The getter the runner really calls; in 0.10 it is the only trace of the contract."""
    for rel in RUNNER_FILES:
        path = vllm_dir / rel
        try:
            text = _read_text(index, path)
        except SourceNotFound:
            continue
        calls = [m.group(1) for m in _GETTER_CALL.finditer(text)]
        if calls:
            line = text.count("\n", 0, text.index(calls[0])) + 1
            guarded = "supports_eagle3(" in text
            return replace(
                contract,
                getter=calls[0],
                getter_source=f"{path}:{line}",
                runtime_check=contract.runtime_check or guarded,
                unguarded_aux_calls=not guarded and f".{contract.setter}(" in text,
            )
    if contract.protocol is None:
        return replace(contract, getter=KNOWN_GETTERS[0])
    return contract
