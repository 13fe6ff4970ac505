"""The config-time parts of the contract, found by their shape in two large files.

The model_type allow-list of `config/speculative.py` (renamed in 0.17, gone in 0.22) and the
EAGLE proposer's image-token mapping (`v1/spec_decode/eagle.py`, `llm_base_proposer.py` from
0.20). Parsing those files is the slow part of reading a contract, so the reader imports this
module only when its cached facts are missing.
"""

from __future__ import annotations

import bisect
import contextlib
import itertools
import re
import textwrap
from pathlib import Path

import libcst as cst

from eagle3lint.contract.model import (
    GATE_FILES,
    PROPOSER_FILES,
    Gate,
    ImageTokenBranch,
    ImageTokenMap,
)
from eagle3lint.shapes.syntax import code, dotted, string_value
from eagle3lint.sources.files import (
    SourceNotFound,
    SourceSyntaxError,
    check_syntax,
    read_source,
)

_DEF = re.compile(r"^([ \t]*)(?:async[ \t]+)?def[ \t]")


def _functions_around(text: str, needle: str) -> str:
    """The functions containing `needle`, each dedented, as one module's source.

    These files run to thousands of lines while the gate and the proposer's mapping each sit
    in one method; parsing only those methods is several times cheaper. The caller falls
    back to the whole file when the cut does not parse.
    """
    lines = text.splitlines(keepends=True)
    starts: dict[int, int] = {}
    line_offsets = list(itertools.accumulate((len(line) for line in lines), initial=0))
    for match in re.finditer(re.escape(needle), text):
        at = bisect.bisect_right(line_offsets, match.start()) - 1
        indent = len(lines[at]) - len(lines[at].lstrip())
        for number in range(at, -1, -1):
            found = _DEF.match(lines[number])
            if found and len(found.group(1)) < indent:
                starts.setdefault(number, len(found.group(1)))
                break
    blocks = []
    for start, indent in sorted(starts.items()):
        end = start + 1
        while end < len(lines):
            stripped = lines[end].strip()
            dedented = len(lines[end]) - len(lines[end].lstrip()) <= indent
            if stripped and not stripped.startswith("#") and dedented:
                break
            end += 1
        blocks.append(textwrap.dedent("".join(lines[start:end])))
    return "\n".join(blocks)


def _parse(text: str, path: Path, needle: str) -> cst.Module:
    """The functions around `needle` (or, failing that, the whole file) as a tree; a contract
    file that does not parse is reported, never skipped."""
    try:
        check_syntax(text, str(path))
    except SourceSyntaxError as exc:
        exc.path = path
        raise
    with contextlib.suppress(cst.ParserSyntaxError):
        return cst.parse_module(_functions_around(text, needle))
    try:
        return cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        raise SourceSyntaxError(f"syntax error: {exc.message}", path) from exc


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
                methods = tuple(m for m in methods if m != left)
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


def _read_if_there(path: Path) -> str | None:
    """The text of a contract file; None when the release has no such file. A file that is
    there but cannot be read raises: the contract would silently be another release's."""
    try:
        return read_source(path)
    except SourceNotFound:
        return None


def read_gate(vllm_dir: Path) -> Gate | None:
    for rel in GATE_FILES:
        path = vllm_dir / rel
        text = _read_if_there(path)
        if text is None:
            continue
        if "model_type" not in text:
            return None
        module = _parse(text, path, "model_type")
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


def read_image_tokens(vllm_dir: Path) -> ImageTokenMap | None:
    for rel in PROPOSER_FILES:
        path = vllm_dir / rel
        text = _read_if_there(path)
        if text is None:
            continue
        anchor = text.find("if supports_multimodal(target_model)")
        if anchor < 0:
            continue
        module = _parse(text, path, "supports_multimodal(target_model)")
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
