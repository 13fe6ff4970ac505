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
from dataclasses import dataclass, replace
from pathlib import Path

import libcst as cst

from eagle3lint.contract.model import (
    KNOWN_GETTERS,
    Contract,
    Gate,
    ImageTokenBranch,
    ImageTokenMap,
)
from eagle3lint.index.cache import content_key
from eagle3lint.index.extract import code, dotted, string_value
from eagle3lint.index.project import ClassRef, ProjectIndex
from eagle3lint.sources.files import UnreadableSource, read_source, read_source_bytes

INTERFACES = "vllm.model_executor.models.interfaces"
RUNNER_FILES = (
    "v1/worker/gpu_model_runner.py",
    "v1/worker/gpu/spec_decode/eagle/eagle3_utils.py",
    "worker/model_runner.py",
)
GATE_FILES = ("config/speculative.py", "config.py")
PROPOSER_FILES = ("v1/spec_decode/llm_base_proposer.py", "v1/spec_decode/eagle.py")
_GETTER_CALL = re.compile(r"^[^#\n]*\.(get_eagle3_\w*aux_hidden_state_layers)\(", re.MULTILINE)
# typing's own bookkeeping names are not protocol members.
_NOT_MEMBERS = {"__init__", "__slots__", "__doc__", "__module__", "__annotations__"}


def read_contract(index: ProjectIndex, vllm_dir: Path, source: str) -> Contract:
    """The contract of the vLLM package at `vllm_dir` (a folder holding `model_executor/`)."""
    version_file = index.summary("vllm._version")
    contract = Contract(
        version=version_file.version if version_file else None,
        source=source,
        root=str(vllm_dir),
        interfaces_module=INTERFACES if index.summary(INTERFACES) else None,
        protocol=None,
    )
    contract = _read_protocol(index, contract)
    contract = _read_runner(vllm_dir, contract)
    facts = _config_facts(index, vllm_dir)
    return replace(contract, gate=facts.gate, image_tokens=facts.image_tokens)


@dataclass(slots=True)
class ConfigFacts:
    """The gate and the proposer's mapping: read with a full parse of two large files, so
    cached by their content like file summaries."""

    gate: Gate | None = None
    image_tokens: ImageTokenMap | None = None


def _config_facts(index: ProjectIndex, vllm_dir: Path) -> ConfigFacts:
    digest = hashlib.blake2b(digest_size=20)
    for rel in (*GATE_FILES, *PROPOSER_FILES):
        path = vllm_dir / rel
        digest.update(f"{path}\0".encode())
        with contextlib.suppress(UnreadableSource):
            digest.update(read_source_bytes(path))
    key = content_key(digest.digest(), "contract-facts")
    cached = index.cache.load(key, ConfigFacts) if index.cache else None
    if cached is not None:
        return cached
    facts = ConfigFacts(_read_gate(vllm_dir), _read_image_tokens(vllm_dir))
    if index.cache:
        index.cache.store(key, facts)
    return facts


def _find_class(index: ProjectIndex, name: str) -> ClassRef | None:
    summary = index.summary(INTERFACES)
    if summary is None or name not in summary.classes:
        return None
    return ClassRef(summary, summary.classes[name])


def _read_protocol(index: ProjectIndex, contract: Contract) -> Contract:
    protocol = _find_class(index, "SupportsEagle3")
    mixin = _find_class(index, "EagleModelMixin")
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
    getters = [name for name in protocol.cls.methods if name.startswith("get_eagle3_")]
    return replace(
        contract,
        protocol=protocol.qualname,
        protocol_members=tuple(sorted(members)),
        default_methods=defaults,
        getter=getters[0] if getters else contract.getter,
        getter_source=f"{index.display_path(protocol.file)}:{protocol.cls.line}",
        mixin=mixin.qualname if mixin else None,
        mixin_pp_relay=bool(mixin and "supports_aux_hidden_states_over_pp" in mixin.cls.attrs),
        multimodal_protocol=multimodal.qualname if multimodal else None,
    )


def _read_runner(vllm_dir: Path, contract: Contract) -> Contract:
    """The getter the runner really calls; in 0.10 it is the only trace of the contract."""
    for rel in RUNNER_FILES:
        path = vllm_dir / rel
        try:
            text = read_source(path)
        except UnreadableSource:
            continue
        calls = [m.group(1) for m in _GETTER_CALL.finditer(text)]
        if calls:
            line = text.count("\n", 0, text.index(calls[0])) + 1
            return replace(
                contract,
                getter=calls[0],
                getter_source=f"{path}:{line}",
                runtime_check=contract.runtime_check or "supports_eagle3(" in text,
            )
    if contract.protocol is None:
        return replace(contract, getter=KNOWN_GETTERS[0])
    return contract


def _parse(path: Path) -> cst.Module | None:
    try:
        return cst.parse_module(read_source(path))
    except (UnreadableSource, cst.ParserSyntaxError, RecursionError):
        return None


def _line_of(text: str, needle: str, start: int = 0) -> int:
    at = text.find(needle, start)
    return text.count("\n", 0, at) + 1 if at >= 0 else 1


class _GateFinder(cst.CSTVisitor):
    """Finds `any(x in <...>.model_type for x in LIST)` and the list it iterates."""

    def __init__(self) -> None:
        self.function_stack: list[cst.FunctionDef] = []
        self.lists: dict[tuple[int, str], cst.List] = {}
        self.hits: list[tuple[cst.FunctionDef | None, str | None, tuple[str, ...]]] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.function_stack.append(node)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.function_stack.pop()

    def visit_Assign(self, node: cst.Assign) -> None:
        if isinstance(node.value, cst.List) and len(node.targets) == 1:
            target = node.targets[0].target
            if isinstance(target, cst.Name):
                scope = id(self.function_stack[-1]) if self.function_stack else 0
                self.lists[(scope, target.value)] = node.value

    def visit_If(self, node: cst.If) -> None:
        test_text = code(node.test)
        if "model_type" not in test_text:
            return
        methods = tuple(re.findall(r"\"(\w+)\"", test_text.split("model_type")[0]))
        function = self.function_stack[-1] if self.function_stack else None
        for call in _calls_named(node.test, "any"):
            generator = call.args[0].value if call.args else None
            if not isinstance(generator, cst.GeneratorExp):
                continue
            element = generator.elt
            if (
                isinstance(element, cst.Comparison)
                and isinstance(element.comparisons[0].operator, cst.In)
                and code(element.comparisons[0].comparator).endswith("model_type")
                and isinstance(generator.for_in.iter, cst.Name)
            ):
                self.hits.append((function, generator.for_in.iter.value, methods))
                return
        for comparison in _comparisons(node.test):
            left = string_value(comparison.left)
            if (
                left is not None
                and isinstance(comparison.comparisons[0].operator, cst.NotIn)
                and code(comparison.comparisons[0].comparator).endswith("model_type")
            ):
                self.hits.append((function, None, (*methods, left)))
                return


def _calls_named(node: cst.CSTNode, name: str) -> list[cst.Call]:
    found: list[cst.Call] = []

    class _Calls(cst.CSTVisitor):
        def visit_Call(self, call: cst.Call) -> None:
            if dotted(call.func) == name:
                found.append(call)

    node.visit(_Calls())
    return found


def _comparisons(node: cst.CSTNode) -> list[cst.Comparison]:
    found: list[cst.Comparison] = []

    class _Comparisons(cst.CSTVisitor):
        def visit_Comparison(self, comparison: cst.Comparison) -> None:
            found.append(comparison)

    node.visit(_Comparisons())
    return found


def _read_gate(vllm_dir: Path) -> Gate | None:
    for rel in GATE_FILES:
        path = vllm_dir / rel
        if not path.is_file():
            continue
        text = read_source(path)
        if "model_type" not in text:
            return None
        module = _parse(path)
        if module is None:
            return None
        finder = _GateFinder()
        module.visit(finder)
        for function, variable, methods in finder.hits:
            if variable is None:
                # 0.10's `"llama" not in ...model_type`: the last string is the only entry.
                entry = methods[-1]
                line = _line_of(text, f'"{entry}" not in')
                return Gate(str(path), line, None, (entry,), methods[:-1])
            literal = finder.lists.get((id(function) if function else 0, variable))
            if literal is None:
                continue
            entries = tuple(s for e in literal.elements if (s := string_value(e.value)) is not None)
            start = text.find(f"def {function.name.value}") if function else 0
            line = _line_of(text, f"{variable} = [", max(start, 0))
            return Gate(str(path), line, variable, entries, methods)
        return None
    return None


def _read_image_tokens(vllm_dir: Path) -> ImageTokenMap | None:
    for rel in PROPOSER_FILES:
        path = vllm_dir / rel
        if not path.is_file():
            continue
        text = read_source(path)
        anchor = text.find("if supports_multimodal(target_model)")
        if anchor < 0:
            continue
        module = _parse(path)
        if module is None:
            return None
        block = _find_if(module, "supports_multimodal(target_model)")
        if block is None:
            return None
        return _image_token_map(block, text, str(path), anchor)
    return None


def _find_if(module: cst.Module, test_text: str) -> cst.If | None:
    found: list[cst.If] = []

    class _Ifs(cst.CSTVisitor):
        def visit_If(self, node: cst.If) -> None:
            if not found and code(node.test) == test_text:
                found.append(node)

    module.visit(_Ifs())
    return found[0] if found else None


_CONFIG_VALUE = re.compile(r"target_model\.config\.([\w.]+)")


def _image_token_map(block: cst.If, text: str, path: str, anchor: int) -> ImageTokenMap:
    block_line = _line_of(text, "if supports_multimodal(target_model)")
    branches: list[ImageTokenBranch] = []
    fallback: str | None = None
    chain = next(
        (
            stmt
            for stmt in block.body.body
            if isinstance(stmt, cst.If) and "get_model_name" in code(stmt.test)
        ),
        None,
    )
    if chain is None:
        match = _CONFIG_VALUE.search(code(block.body))
        return ImageTokenMap(path, block_line, (), match.group(1) if match else None)
    node: cst.If | cst.Else | None = chain
    cursor = anchor
    while node is not None:
        body_text = code(node.body)
        match = _CONFIG_VALUE.search(body_text)
        attribute = match.group(1) if match else None
        if isinstance(node, cst.Else):
            fallback = attribute
            break
        classes = tuple(_strings(node.test))
        first = classes[0] if classes else "get_model_name"
        line = _line_of(text, f'"{first}"', cursor)
        cursor = text.find(f'"{first}"', cursor) + 1
        if attribute is not None:
            branches.append(ImageTokenBranch(classes, attribute, line))
        node = node.orelse
    return ImageTokenMap(path, block_line, tuple(branches), fallback)


def _strings(node: cst.CSTNode) -> list[str]:
    found: list[str] = []

    class _Strings(cst.CSTVisitor):
        def visit_SimpleString(self, string: cst.SimpleString) -> None:
            value = string_value(string)
            if value is not None:
                found.append(value)

    node.visit(_Strings())
    return found
