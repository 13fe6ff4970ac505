"""SGLang's EAGLE-3 target contract, read from the tree's own sources as text.

SGLang has no protocol class: the contract is duck-typed, spread over the model runner (which
calls the target's capture method once the weights are loaded, behind a `hasattr` gate since
0.5.23, unguarded up to 0.5.20) and the draft workers (which bind the target's embedding and head
through `get_embed_and_head()`). The reader finds those calls by name in the runner and
speculative folders, so a release that moves them to another file is still read; what it
finds (or does not) is the contract the rules judge against.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from eagle3lint.engines.sglang.layout import (
    CAPTURE_METHOD,
    EMBED_HEAD_PREFIX,
    MODEL_CONFIG,
    MODEL_LOADER,
    RUNNER_FOLDER,
    SPECULATIVE_FOLDER,
    VERSION_MODULES,
)
from eagle3lint.sources.files import UnreadableSource
from eagle3lint.sources.source_text import function_named, line_at, strip_comments
from eagle3lint.sources.walk import files_under

if TYPE_CHECKING:
    from eagle3lint.index.project import ProjectIndex


@dataclass(frozen=True)
class CallSite:
    """Where the engine calls a method of the target (`path` as reports show paths)."""

    path: str
    """Relative to the folder holding the tree (`sglang/srt/...`)."""
    line: int
    method: str
    bare: bool = False
    """Called with no arguments (0.5.8's CUDA-graph runner calls the capture method so)."""

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass(frozen=True)
class SglangContract:
    """What an SGLang tree asks of an EAGLE-3 target."""

    version: str | None
    source: str
    root: str
    capture_method: str | None = None
    """The method the model runner calls on the target to choose the layers to capture; None
    when the tree calls none (EAGLE-3 is then not served by the target's code)."""
    capture_calls: tuple[CallSite, ...] = ()
    capture_error: str | None = None
    """The message the runner's gate raises for a target without the method (`{}` where the
    class name goes); None when the call is unguarded (an AttributeError)."""
    capture_error_type: str = "AttributeError"
    embed_head: tuple[str, ...] = ()
    """The accessors the draft workers call on the target for its embedding and head; one of
    them is enough (the others are called behind `hasattr`)."""
    embed_head_calls: tuple[CallSite, ...] = ()
    pooling: frozenset[str] = frozenset()
    """Architectures SGLang serves as pooling models (`is_generation_model`)."""
    drafts: frozenset[str] = frozenset()
    """Architectures a draft checkpoint is run as (the draft overrides of `ModelConfig`)."""
    readable: bool = True
    unread: tuple[str, ...] = field(default=())
    """Files the reader needed and could not read."""

    def describe(self) -> str:
        if not self.readable:
            return "SGLang contract not read"
        capture = self.capture_method or "no capture call found"
        gate = "gated" if self.capture_error else "unguarded"
        heads = " or ".join(f"{name}()" for name in self.embed_head) or "none"
        return f"capture {capture}() ({gate}), embed/head {heads}"

    def capture_message(self, cls: str) -> str:
        """What SGLang raises for class `cls` without the capture method, after the load."""
        if self.capture_error is not None:
            return f"{self.capture_error_type}: {self.capture_error.replace('{}', cls, 1)}"
        return f"AttributeError: '{cls}' object has no attribute '{self.capture_method}'"

    def to_json(self) -> dict[str, object]:
        return {
            "capture_method": self.capture_method,
            "capture_calls": [str(c) for c in self.capture_calls],
            "capture_gated": self.capture_error is not None,
            "embed_head": list(self.embed_head),
            "embed_head_calls": [str(c) for c in self.embed_head_calls],
        }


_CALL = re.compile(r"\.(\w+)\(\s*(\))?")
_GATE = re.compile(r"hasattr\(\s*[\w.]+\s*,\s*[\"'](\w+)[\"']\s*\)")
_RAISE = re.compile(r"raise\s+(\w+)\(")
_STRING = re.compile(r"[rRbBuU]?[fF]?[rR]?(\"[^\"\n]*\"|'[^'\n]*')")
_PLACEHOLDER = re.compile(r"\{[^{}]*\}")
_POOLING = re.compile(r"[\"'](\w+)[\"']\s+in\s+\w+")
_DRAFT_OVERRIDE = re.compile(r"\.architectures(?:\[0\])?\s*=\s*\[?\s*[\"'](\w+)[\"']")
_ROUTE = re.compile(
    r"if\s+getattr\(\s*\w+\s*,\s*[\"'](\w+)[\"'][^)]*\)\s*:\s*\n\s*architectures\s*=\s*\[\s*[\"'](\w+)[\"']\s*\]"
)
_NOT_GENERATION = re.compile(r"self\.is_generation\s*=\s*\(?\s*not\s+self\.(\w+)\s+and\b")


def read_contract(index: ProjectIndex, tree: Path, source: str) -> SglangContract:
    """The contract of the SGLang package folder `tree`."""
    version = next(
        (s.version for m in VERSION_MODULES if (s := index.summary(m)) and s.version), None
    )
    runner = _texts(index, tree, RUNNER_FOLDER, CAPTURE_METHOD)
    capture_calls = tuple(_calls(tree, runner, lambda name: name == CAPTURE_METHOD))
    gate = next((g for _, text in runner if (g := _gate(text))), None)
    speculative = _texts(index, tree, SPECULATIVE_FOLDER, EMBED_HEAD_PREFIX)
    embed_calls = tuple(_calls(tree, speculative, lambda n: n.startswith(EMBED_HEAD_PREFIX)))
    names = tuple(dict.fromkeys(c.method for c in embed_calls))
    config = _stripped_source(index, tree / MODEL_CONFIG)
    pooling, drafts = _model_config(config)
    pooling |= _routed_pooling(_stripped_source(index, tree / MODEL_LOADER), config)
    return SglangContract(
        version,
        source,
        str(tree),
        capture_method=CAPTURE_METHOD if capture_calls else None,
        capture_calls=capture_calls,
        capture_error=gate[1] if gate else None,
        capture_error_type=gate[0] if gate else "AttributeError",
        embed_head=names,
        embed_head_calls=embed_calls,
        pooling=pooling,
        drafts=drafts,
    )


def _texts(index: ProjectIndex, tree: Path, folder: str, needle: str) -> list[tuple[Path, str]]:
    """The files below `tree/folder` that mention `needle`, comments removed, in path order.
    Every file is noted among the index's inputs: one that starts calling the method changes
    the contract."""
    found = []
    for path in files_under(tree / folder, "*.py"):
        try:
            data = index.read_outside(path)
        except UnreadableSource:
            continue
        if needle.encode() in data:
            found.append((path, strip_comments(data.decode("utf-8", "replace"))))
    return found


def _calls(
    tree: Path, texts: list[tuple[Path, str]], wanted: Callable[[str], bool]
) -> list[CallSite]:
    """The calls `.name(` of the texts whose name is `wanted` (not its `def`, nor a mention
    in a docstring)."""
    sites = []
    for path, source in texts:
        shown = path.relative_to(tree.parent).as_posix()
        text = _without_strings(source)
        for match in _CALL.finditer(text):
            name = match.group(1)
            if wanted(name) and not _is_definition(text, match.start()):
                line = line_at(text, match.start())
                sites.append(CallSite(shown, line, name, bool(match.group(2))))
    return sites


_STRING_TOKENS = {
    getattr(tokenize, name)
    for name in ("STRING", "FSTRING_MIDDLE", "TSTRING_MIDDLE")  # 3.12's f-strings are split
    if hasattr(tokenize, name)
}


def _without_strings(text: str) -> str:
    """`text` with every string literal blanked (its line breaks kept, so lines still count)."""
    chars = list(text)
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type in _STRING_TOKENS:
                begin = starts[token.start[0] - 1] + token.start[1]
                end = starts[token.end[0] - 1] + token.end[1]
                for at in range(begin, end):
                    if chars[at] != "\n":
                        chars[at] = " "
    except (tokenize.TokenError, SyntaxError, IndexError):
        return text  # not Python after all: its calls are read as written
    return "".join(chars)


def _is_definition(text: str, at: int) -> bool:
    line_start = text.rfind("\n", 0, at) + 1
    return text[line_start:at].lstrip().startswith("def ")


def _gate(text: str) -> tuple[str, str] | None:
    """The exception type and message of the `if not hasattr(model, CAPTURE): raise ...`
    gate, the message's interpolations as `{}`."""
    for match in _GATE.finditer(text):
        if match.group(1) != CAPTURE_METHOD:
            continue
        raised = _RAISE.search(text, match.end(), match.end() + 400)
        if raised is None:
            continue
        close = text.find("\n)", raised.end())
        body = text[raised.end() : close if close >= 0 else raised.end() + 600]
        body = body[: body.find(")\n") + 1 or None]
        pieces = [s[1:-1] for s in _STRING.findall(body)]
        message = _PLACEHOLDER.sub("{}", "".join(pieces)).strip()
        if message:
            return raised.group(1), message
    return None


def _stripped_source(index: ProjectIndex, path: Path) -> str | None:
    """The file at `path` without comments, or None when it cannot be read."""
    try:
        return strip_comments(index.read_outside(path).decode("utf-8", "replace"))
    except UnreadableSource:
        return None


def _model_config(text: str | None) -> tuple[frozenset[str], frozenset[str]]:
    """The pooling architectures (`is_generation_model`'s list) and the architectures a draft
    checkpoint is switched to (`hf_config.architectures[0] = "...NextN"` for a draft), read
    from `model_config.py`'s text."""
    if text is None:
        return frozenset(), frozenset()
    function = function_named(text, "is_generation_model")
    pooling = frozenset(_POOLING.findall(function[0])) if function else frozenset()
    drafts = (m.group(1) for m in _DRAFT_OVERRIDE.finditer(text) if _for_drafts(text, m.start()))
    return pooling, frozenset(drafts)


def _routed_pooling(loader: str | None, config: str | None) -> frozenset[str]:
    """The architectures the loader swaps a checkpoint's for under a model-config flag whose
    truth makes the model non-generative: `get_model_architecture` sets `architectures =
    ["EmbeddingGemmaModel"]` when `model_config.is_embedding_gemma`, and `ModelConfig` sets
    `self.is_generation = not self.is_embedding_gemma and ...` (0.5.23). Such a class runs only
    as a pooling model, whatever `is_generation_model`'s list says."""
    function = function_named(loader, "get_model_architecture") if loader else None
    if function is None or config is None:
        return frozenset()
    negated = set(_NOT_GENERATION.findall(config))
    return frozenset(arch for flag, arch in _ROUTE.findall(function[0]) if flag in negated)


def _for_drafts(text: str, at: int) -> bool:
    """The assignment at `at` renames a draft checkpoint's architecture: it is in a function
    for drafts (`_config_draft_model`) or under an `if` that asks `is_draft_model`. 0.5.23 also
    renames target backbones in `ModelConfig.__init__` (`Qwen3_5TextModel` with a pointer head
    becomes `Qwen3_5ForCausalLM`), which are no drafts."""
    lines = text[:at].splitlines()
    current = lines[-1] if lines else ""
    indent = len(current) - len(current.lstrip())
    for number in range(len(lines) - 2, -1, -1):
        line = lines[number]
        stripped = line.lstrip()
        if not stripped or len(line) - len(stripped) >= indent:
            continue
        indent = len(line) - len(stripped)
        if stripped.startswith(("def ", "async def ")):
            return "draft" in stripped.split("(")[0]
        if stripped.startswith(("if ", "if(", "elif ")) and "is_draft_model" in _header(
            lines, number
        ):
            return True
    return False


def _header(lines: list[str], start: int) -> str:
    """The statement header opened at line `start`, to its closing colon (a condition may span
    lines)."""
    for end in range(start, len(lines)):
        if lines[end].rstrip().endswith(":"):
            return "\n".join(lines[start : end + 1])
    return "\n".join(lines[start:])
