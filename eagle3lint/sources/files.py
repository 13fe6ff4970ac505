"""Reading analysed source files safely: encodings, binary files, unreadable paths, and
sources too large or too deeply nested for libcst's parser to take without harm.
"""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

MAX_FILE_BYTES = 2 * 1024 * 1024
"""Larger files are reported rather than parsed. libcst needs about a second and a few hundred
MB of memory per MB of source, so a 10 MB generated file would take minutes and gigabytes;
vLLM's largest source file (v1/worker/gpu_model_runner.py, 0.3 MB in 0.33) is far below."""

MAX_NESTING = 400
"""Deepest expression (see `nesting_depth`) that is parsed: twice CPython's own limit of 200
nested brackets, five times the deepest line in vLLM 0.33 (77). libcst's native parser
overflows the C stack, killing the process, from about 1,200 nested brackets, and slows down
quadratically on long operator chains."""

MAX_ELIF = 1000
"""Most `elif` branches a file may hold: libcst nests each in the previous `if`, and a chain
of about 8,000 overflows the C stack. vLLM's files have at most 50."""

# Strings and comments are matched first so that brackets and words inside them are skipped.
_TOKEN = re.compile(
    r"""(?:[rRbBuUfFtT]{1,2})?(?:'''[\s\S]*?'''|\"\"\"[\s\S]*?\"\"\"|'(?:\\.|[^'\\\n])*'"""
    r"""|"(?:\\.|[^"\\\n])*")"""
    r"""|\#[^\n]*|\\\r?\n|:=|\*\*|//|<<|>>|->|[-+*/%@&|^~<>.()\[\]{},;:\n]"""
    r"""|\b(?:lambda|not|and|or|if|else|await|in|is)\b"""
)
_ELIF = re.compile(r"^[ \t]*elif\b", re.MULTILINE)


class UnreadableSource(Exception):
    """A file that cannot be analysed; the message says why, in words for the user."""

    code = "EAG902"
    """The input-error code it is reported under."""

    def __init__(self, message: str, path: Path | None = None) -> None:
        super().__init__(message)
        self.path = path
        """The file, when the reader knows it."""

    def __reduce__(self) -> tuple[type[UnreadableSource], tuple[str, Path | None]]:
        # Raised in worker processes too: the path must survive pickling.
        return type(self), (str(self), self.path)


class TooDeeplyNested(UnreadableSource):
    """A file the parser cannot take safely: reported like a syntax error."""

    code = "EAG901"


class SourceSyntaxError(UnreadableSource):
    """A file that does not parse."""

    code = "EAG901"


def read_source_bytes(path: Path) -> bytes:
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise UnreadableSource(
                f"file is {size / 1e6:.1f} MB, over the {MAX_FILE_BYTES // 2**20} MiB limit", path
            )
        return path.read_bytes()
    except UnreadableSource:
        raise
    except IsADirectoryError as exc:
        raise UnreadableSource("is a directory", path) from exc
    except PermissionError as exc:
        raise UnreadableSource("permission denied", path) from exc
    except OSError as exc:
        raise UnreadableSource(exc.strerror or str(exc), path) from exc


def decode_source(data: bytes) -> str:
    """Text of a Python file, honouring a PEP 263 cookie and a UTF-8 BOM; refuses binary files
    and source nested too deeply to parse safely."""
    if b"\0" in data:
        raise UnreadableSource("binary file (contains NUL bytes)")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError) as exc:
        raise UnreadableSource(f"cannot decode: {exc}") from exc
    check_nesting(text)
    return text.removeprefix("\ufeff")


def nesting_depth(text: str) -> int:
    """How deep the syntax tree of `text` nests, estimated high from a scan of its tokens.

    Every bracket, operator and string on the way from a statement to a token counts one level:
    `f(a.b + c)` reaches 3 at `c`. A comma, semicolon or new logical line goes back to the depth
    of the enclosing bracket, except between `lambda` and its colon, where commas separate
    parameters of a lambda that nests in the ones before it.
    """
    bases = [0]
    lambdas = [0]
    depth = deepest = 0
    for token in _TOKEN.findall(text):
        first = token[0]
        if first in "([{":
            depth += 1
            bases.append(depth)
            lambdas.append(0)
        elif first in ")]}":
            if len(bases) > 1:
                depth = bases.pop()
                lambdas.pop()
            continue
        elif first in ",;\n":
            # A newline inside brackets continues the logical line.
            if (first != "\n" or len(bases) == 1) and not lambdas[-1]:
                depth = bases[-1]
            continue
        elif token == ":":
            if lambdas[-1]:
                lambdas[-1] -= 1
            continue
        elif first in "#\\":
            continue
        else:
            if token == "lambda":
                lambdas[-1] += 1
            depth += 1
        if depth > deepest:
            deepest = depth
    return deepest


def check_nesting(text: str) -> None:
    """Refuse source that would crash or stall the parser (see `MAX_NESTING`)."""
    elifs = len(_ELIF.findall(text))
    if elifs > MAX_ELIF:
        raise TooDeeplyNested(
            f"too deeply nested to analyse: {elifs} elif branches (the limit is {MAX_ELIF})"
        )
    depth = nesting_depth(text)
    if depth > MAX_NESTING:
        raise TooDeeplyNested(
            f"too deeply nested to analyse: expressions nest {depth} levels deep "
            f"(the limit is {MAX_NESTING})"
        )


def read_source(path: Path) -> str:
    data = read_source_bytes(path)
    try:
        return decode_source(data)
    except UnreadableSource as exc:
        exc.path = path
        raise
