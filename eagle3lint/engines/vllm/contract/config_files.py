"""The config-time parts of the contract, found by their shape in two large files.

The model_type allow-list of `config/speculative.py` (renamed in 0.17, gone in 0.22) and the
EAGLE proposer's image-token mapping (`v1/spec_decode/eagle.py`, `llm_base_proposer.py` from
0.20). Parsing those files is the slow part of reading a contract, so the reader imports this
module only when its cached facts are missing.
"""

from __future__ import annotations

import ast
import bisect
import contextlib
import itertools
import re
import textwrap
from pathlib import Path

import libcst as cst

from eagle3lint.engines.vllm.contract.model import (
    GATE_FILES,
    PROPOSER_FILES,
    V1,
    V2,
    V2_EAGLE_LOADER,
    Gate,
    ImageTokenBranch,
    ImageTokenMap,
    TargetEmbedding,
)
from eagle3lint.shapes.gate import find_gate
from eagle3lint.shapes.image_tokens import MODEL_NAME, MULTIMODAL_CHECK, find_image_token_map
from eagle3lint.sources.files import (
    SourceNotFound,
    SourceSyntaxError,
    check_syntax,
    read_source,
    source_lines,
)


def _functions_around(text: str, tree: ast.Module, needle: str) -> str:
    """The innermost functions containing `needle`, each dedented, as one module's source.

    These files run to thousands of lines while the gate and the proposer's mapping each sit
    in one method; parsing only those methods is several times cheaper. Where functions are
    comes from CPython's tree (`tree`, of `text`), so a signature over several lines is never
    cut. The caller falls back to the whole file when the cut does not parse.
    """
    lines = source_lines(text)
    functions = sorted(
        (
            (node.lineno, node.end_lineno or node.lineno)
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        ),
        key=lambda span: span[0],
    )
    line_offsets = list(itertools.accumulate((len(line) for line in lines), initial=0))
    spans: dict[int, int] = {}
    # One sweep down the file: `open_` holds the functions around the current line, innermost
    # last (functions nest), so each needle costs no more than the functions it leaves behind.
    open_: list[tuple[int, int]] = []
    following = iter(functions)
    upcoming = next(following, None)
    for match in re.finditer(re.escape(needle), text):
        line = bisect.bisect_right(line_offsets, match.start())
        while upcoming is not None and upcoming[0] <= line:
            while open_ and open_[-1][1] < upcoming[0]:
                open_.pop()
            open_.append(upcoming)
            upcoming = next(following, None)
        while open_ and open_[-1][1] < line:
            open_.pop()
        if open_:
            start, end = open_[-1]
            spans[start] = end
    return "\n".join(
        textwrap.dedent("".join(lines[start - 1 : end])) for start, end in sorted(spans.items())
    )


def _parse(text: str, path: Path, needle: str) -> cst.Module:
    """The functions around `needle` (or, failing that, the whole file) as a tree; a contract
    file that does not parse is reported, never skipped."""
    try:
        tree = check_syntax(text, str(path))
    except SourceSyntaxError as exc:
        exc.path = path
        raise
    with contextlib.suppress(cst.ParserSyntaxError):
        return cst.parse_module(_functions_around(text, tree, needle))
    try:
        return cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        raise SourceSyntaxError(f"syntax error: {exc.message}", path) from exc


def _line_of(text: str, needle: str, start: int = 0) -> int:
    at = text.find(needle, start)
    return text.count("\n", 0, at) + 1 if at >= 0 else 1


def _read_if_there(path: Path) -> str | None:
    """The text of a contract file; None when the release has no such file. A file that is
    there but cannot be read raises: the contract would silently be another release's."""
    try:
        return read_source(path)
    except SourceNotFound:
        return None


def read_gate(vllm_dir: Path) -> Gate | None:
    """The EAGLE-3 model_type allow-list of the release's speculative config, if it has one."""
    for rel in GATE_FILES:
        path = vllm_dir / rel
        text = _read_if_there(path)
        if text is None:
            continue
        if "model_type" not in text:
            return None
        shape = find_gate(_parse(text, path, "model_type"))
        if shape is None or shape.entries is None:
            return None
        if shape.variable is None:
            line = _line_of(text, f'"{shape.entries[0]}" not in')
        else:
            start = text.find(f"def {shape.function}") if shape.function else 0
            line = _line_of(text, f"{shape.variable} = [", max(start, 0))
        error = _gate_error(text, sum(map(len, source_lines(text)[: line - 1])))
        return Gate(
            str(path), line, shape.variable, shape.entries, shape.methods, shape.refusal, error
        )
    return None


_ONLY_SUPPORTED = re.compile(
    r"""raise\s+ValueError\(\s*((?:f?(?:"[^"\n]*"|'[^'\n]*')[^\S\n]*(?:\#[^\n]*)?\s*)+)\)"""
)


_GATE_RAISE_WITHIN = 2000
"""How far after the allow-list's line (characters) its `raise` may start."""


def _gate_error(text: str, start: int) -> str | None:
    """The message of the first `raise ValueError(...)` after the gate that says what is only
    supported: literal pieces joined, `{self.method}` kept for the caller, other fields elided."""
    # The raise follows the test within a few lines (0.10's single config.py holds others).
    for found in _ONLY_SUPPORTED.finditer(text, start, start + _GATE_RAISE_WITHIN):
        pieces = re.findall(r"""f?(?:"([^"\n]*)"|'([^'\n]*)')""", found.group(1))
        message = "".join(a or b for a, b in pieces)
        if "only supported" in message:
            message = message.split(" Got ")[0].rstrip(". ")
            return re.sub(r"\{(?!self\.method\})[^}]*\}", "[...]", message)
    return None


def read_image_tokens(vllm_dir: Path) -> ImageTokenMap | None:
    """Which config attribute the EAGLE proposer reads as each target class's image token."""
    for rel in PROPOSER_FILES:
        path = vllm_dir / rel
        text = _read_if_there(path)
        needle = f"if {MULTIMODAL_CHECK}(target_model)"
        if text is None or needle not in text:
            continue
        shape = find_image_token_map(_parse(text, path, needle.removeprefix("if ")))
        if shape is None:
            return None
        branches: list[ImageTokenBranch] = []
        cursor = text.find(needle)
        for branch in shape.branches:
            first = branch.classes[0] if branch.classes else MODEL_NAME
            line = _line_of(text, f'"{first}"', cursor)
            cursor = text.find(f'"{first}"', cursor) + 1
            if branch.attribute is not None:
                branches.append(ImageTokenBranch(branch.classes, branch.attribute, line))
        return ImageTokenMap(
            str(path), _line_of(text, needle), tuple(branches), shape.fallback, shape.refusal
        )
    return None


_LANGUAGE_MODEL = "target_language_model"
"""The proposer's name for the target (or its `get_language_model()`) in `load_model`."""
_GUARDED_HOLDER = re.compile(
    rf"""(\w+)\s*=\s*getattr\(\s*{_LANGUAGE_MODEL}\s*,\s*["'](\w+)["']\s*,\s*None\s*\)"""
)
_PROBED_HOLDER = re.compile(rf"""hasattr\(\s*{_LANGUAGE_MODEL}\.(\w+)\s*,\s*["'](\w+)["']\s*\)""")
_DIRECT_EMBEDDING = re.compile(rf"\b{_LANGUAGE_MODEL}\.(\w+)\.(embed_tokens|embedding)\b")
_ATTRIBUTE_ERROR = re.compile(r"""raise\s+AttributeError\(\s*((?:(?:"[^"\n]*"|'[^'\n]*')\s*)+)\)""")
_NEAR = 400
"""How far after a test its `raise` may be (characters) to count as that test's error."""


def _raised_after(text: str, start: int) -> tuple[str | None, int]:
    """The message of the `raise AttributeError(...)` right after `start`, and where it ends."""
    found = _ATTRIBUTE_ERROR.search(text, start, start + _NEAR)
    if found is None:
        return None, start
    with contextlib.suppress(ValueError, SyntaxError):
        message = ast.literal_eval(f"({found.group(1)})")
        if isinstance(message, str):
            return message, found.end()
    return None, found.end()


def read_target_embeddings(vllm_dir: Path) -> tuple[TargetEmbedding, ...]:
    """What each model runner's EAGLE proposer reads from the target to share its embedding,
    V1's first."""
    found = (_v1_target_embedding(vllm_dir), _v2_target_embedding(vllm_dir))
    return tuple(each for each in found if each is not None)


_V2_HOLDER = re.compile(rf"""^\s*(\w+)\s*=\s*{_LANGUAGE_MODEL}\.(\w+)\s*$""", re.MULTILINE)
_V2_RAISE = re.compile(r"""raise\s+(\w+Error)\(\s*((?:f?(?:"[^"\n]*"|'[^'\n]*')\s*)+)\)""")


def _v2_target_embedding(vllm_dir: Path) -> TargetEmbedding | None:
    """Model runner V2's `load_eagle_model`: `target_language_model.model` unguarded, then
    `getattr(inner, "embed_tokens", None) or getattr(inner, "embedding", None)`; a missing
    embedding raises (0.30 on: "... unavailable on this PP stage") or is silently not shared."""
    path = vllm_dir / V2_EAGLE_LOADER
    text = _read_if_there(path)
    holder = _V2_HOLDER.search(text) if text else None
    if text is None or holder is None:
        return None
    probe = re.compile(r"""getattr\(\s*\w+\s*,\s*["'](embed_tokens|embedding)["']\s*,\s*None""")
    embeddings = tuple(dict.fromkeys(m.group(1) for m in probe.finditer(text)))
    if not embeddings:
        return None
    missing = re.search(r"if\s+target_embed\s+is\s+None\s*:", text)
    raised = _V2_RAISE.search(text, missing.end(), missing.end() + _NEAR) if missing else None
    message, unless = None, None
    if raised is not None:
        # `and not getattr(draft_model, "has_own_embed_tokens", False)`: a head with its own
        # embedding keeps it, and nothing is raised.
        test = text[missing.end() : raised.start()] if missing else ""
        flag = re.search(r"""not\s+getattr\(\s*\w+\s*,\s*["'](\w+)["']""", test)
        unless = flag.group(1) if flag else None
        pieces = re.findall(r"""f?(?:"([^"\n]*)"|'([^'\n]*)')""", raised.group(2))
        message = re.sub(
            r"\{type\((\w+)\)\.__name__\}", "<drafter>", "".join(a or b for a, b in pieces)
        )
    return TargetEmbedding(
        V2,
        str(path),
        text.count("\n", 0, holder.start()) + 1,
        holder.group(2),
        embeddings,
        None,
        message,
        raised.group(1) if raised else "",
        unless,
    )


def _v1_target_embedding(vllm_dir: Path) -> TargetEmbedding | None:
    """What the EAGLE proposer reads from the target's language model to share its embedding:
    `getattr(target_language_model, "model", None)` and then `hasattr(inner, "embed_tokens")`
    or `"embedding"` (0.16 on, each with its own `AttributeError`), the same probes on an
    unguarded `target_language_model.model` (0.11-0.15), or a plain `.model.embed_tokens`
    (0.10)."""
    for rel in PROPOSER_FILES:
        path = vllm_dir / rel
        text = _read_if_there(path)
        if text is None or _LANGUAGE_MODEL not in text:
            continue
        guarded = _GUARDED_HOLDER.search(text)
        if guarded is not None:
            holder, start = guarded.group(2), guarded.start()
            holder_error, after = _raised_after(text, guarded.end())
            probe = re.compile(rf"""hasattr\(\s*{guarded.group(1)}\s*,\s*["'](\w+)["']\s*\)""")
        else:
            probed = _PROBED_HOLDER.search(text) or _DIRECT_EMBEDDING.search(text)
            if probed is None:
                continue
            holder, start, holder_error = probed.group(1), probed.start(), None
            after = start
            probe = re.compile(rf"""hasattr\(\s*{_LANGUAGE_MODEL}\.{holder}\s*,\s*["'](\w+)["']""")
        probes = _chained(probe, text, after)
        if probes:
            embeddings = tuple(dict.fromkeys(m.group(1) for m in probes))
            embedding_error = _raised_after(text, probes[-1].end())[0]
        else:
            direct = _DIRECT_EMBEDDING.search(text, after)
            if direct is None:
                continue
            embeddings, embedding_error = (direct.group(2),), None
        return TargetEmbedding(
            V1,
            str(path),
            text.count("\n", 0, start) + 1,
            holder,
            embeddings,
            holder_error,
            embedding_error,
        )
    return None


def _chained(pattern: re.Pattern[str], text: str, start: int) -> list[re.Match[str]]:
    """The matches of `pattern` after `start` that follow each other closely: an if/elif chain
    of probes."""
    found: list[re.Match[str]] = []
    cursor = start
    while (match := pattern.search(text, cursor, cursor + _NEAR)) is not None:
        found.append(match)
        cursor = match.end()
    return found
