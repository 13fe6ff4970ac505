"""Reading analysed source files safely: encodings, binary files, unreadable paths, and
sources too large or too deeply nested for libcst's parser to take without harm.
"""

from __future__ import annotations

import ast
import contextlib
import errno
import io
import os
import re
import stat
import time
import tokenize
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

from eagle3lint import trust
from eagle3lint.errors import (
    SourceNotFound,
    SourceSyntaxError,
    TooDeeplyNested,
    UnreadableSource,
)

MAX_FILE_BYTES = 2 * 1024 * 1024
"""Larger files are reported rather than parsed. libcst needs about a second and a few hundred
MB of memory per MB of source, so a 10 MB generated file would take minutes and gigabytes;
vLLM's largest source file (v1/worker/gpu_model_runner.py, 0.3 MB in 0.33) is far below."""

MAX_CONFIG_BYTES = 16 * 1024 * 1024
"""Largest JSON or TOML document read (pyproject.toml, eagle3lint.toml, --hf-config, a draft
config, a baseline, a checkpoint index): real ones are a few KB (a baseline of a whole release,
a few hundred); the limit only stops a device or a runaway file from filling memory."""

MAX_CACHE_ENTRY_BYTES = 64 * 1024 * 1024
"""Largest cache entry read back (a summary of a file at `MAX_FILE_BYTES` is far smaller)."""

MAX_NESTING = 400
"""Deepest expression (see `nesting_depth`) that is parsed: twice CPython's own limit of 200
nested brackets, five times the deepest line in vLLM 0.33 (77). libcst's native parser
overflows the C stack, killing the process, from about 1,200 nested brackets, and slows down
quadratically on long operator chains."""

MAX_TOKENS = 120_000
"""Most tokens a file may hold (counted high: names in comments and strings count too). The
parse costs about 2.5 KB of memory and 0.5 ms per token, whatever the bytes: 1.96 MB of
`f(a,b)` lines took 121 s and 5.1 GB. This bounds one parse to about 350 MB and 10 s on this
project's machine, 2.5 times vLLM 0.33's largest file (gpu_model_runner.py, 47,000)."""

MAX_ELIF = 1000
"""Most `elif` branches a file may hold: libcst nests each in the previous `if`, and a chain
of about 8,000 overflows the C stack. vLLM's files have at most 50."""

# Strings and comments are matched first so that brackets and words inside them are skipped. A
# string left open runs to the end of its line (a triple-quoted one, to the end of the file):
# when a string had to be closed to match, every quote of a line of `"\` started a scan of the
# rest of the line (a 96 KB line took 130 s).
_TOKEN = re.compile(
    r"""(?:[rRbBuUfFtT]{1,2})?(?:'''[\s\S]*?(?:'''|\Z)|\"\"\"[\s\S]*?(?:\"\"\"|\Z)"""
    r"""|'(?:\\[\s\S]|[^'\\\n])*'?|"(?:\\[\s\S]|[^"\\\n])*"?)"""
    r"""|\#[^\n]*|\\\r?\n|:=|\*\*|//|<<|>>|->|[-+*/%@&|^~<>.()\[\]{},;:\n]"""
    r"""|\b(?:lambda|not|and|or|if|else|await|in|is)\b"""
)
_INDENT_FORM_FEED = re.compile(r"^[ \t\f]*\f", re.MULTILINE)
_WORD = re.compile(r"\w+")
_ELIF = re.compile(r"^[ \t]*elif\b", re.MULTILINE)


_KINDS = (
    (stat.S_ISDIR, "is a directory"),
    (stat.S_ISFIFO, "is a FIFO (named pipe), not a regular file"),
    (stat.S_ISCHR, "is a character device, not a regular file"),
    (stat.S_ISBLK, "is a block device, not a regular file"),
    (stat.S_ISSOCK, "is a socket, not a regular file"),
)


def open_regular(path: Path, private: bool = False) -> tuple[int, os.stat_result]:
    """A descriptor of the regular file at `path` (symlinks followed) and its `fstat`.

    A FIFO would block `open` and `read` forever and a device (`/dev/zero`) never ends, so the
    file is opened without blocking and refused unless `fstat` of that same descriptor says it
    is a regular file. `private`: it must also be the user's alone (a cache entry, see
    `eagle3lint.trust`). The caller closes the descriptor.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError as exc:
        raise SourceNotFound("no such file or directory", path) from exc
    except PermissionError as exc:
        raise UnreadableSource("permission denied", path) from exc
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnreadableSource("symbolic link loop", path) from exc
        with contextlib.suppress(OSError):  # a socket cannot be opened at all: say what it is
            _refuse_special(os.stat(path).st_mode, path)
        raise UnreadableSource(exc.strerror or str(exc), path) from exc
    try:
        info = os.fstat(fd)
        _refuse_special(info.st_mode, path)
        if private and not trust.private(info):
            raise UnreadableSource("not owned by you, or writable by others", path)
    except BaseException:
        os.close(fd)
        raise
    return fd, info


def read_regular(path: Path, limit: int, what: str = "file", private: bool = False) -> bytes:
    """The bytes of the regular file at `path` (see `open_regular`), at most `limit` of them.

    Every file eagle3lint reads goes through here: the read stops at `limit` even if the file
    grows meanwhile.
    """
    return read_regular_stamped(path, limit, what, private)[0]


def read_regular_stamped(
    path: Path, limit: int, what: str = "file", private: bool = False
) -> tuple[bytes, Stamp | None]:
    """`read_regular`, with the file's `Stamp` as it was read (None: too recently changed to
    tell a later change by it)."""
    fd, info = open_regular(path, private)
    read_at = time.time_ns()
    try:
        if info.st_size > limit:
            raise UnreadableSource(
                f"{what} is {info.st_size / 1e6:.1f} MB, over the {_size(limit)} limit", path
            )
        chunks: list[bytes] = []
        size = 0
        while size <= limit and (chunk := os.read(fd, min(1 << 20, limit + 1 - size))):
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise UnreadableSource(f"{what} is over the {_size(limit)} limit", path)
        return b"".join(chunks), stamp_of(info, read_at)
    except OSError as exc:
        if exc.errno == errno.EISDIR:
            raise UnreadableSource("is a directory", path) from exc
        raise UnreadableSource(exc.strerror or str(exc), path) from exc
    finally:
        os.close(fd)


def _refuse_special(mode: int, path: Path) -> None:
    for test, why in _KINDS:
        if test(mode):
            raise UnreadableSource(why, path)
    if not stat.S_ISREG(mode):
        raise UnreadableSource("is not a regular file", path)


def _size(limit: int) -> str:
    return f"{limit // 2**20} MiB" if limit >= 2**20 else f"{limit // 1024} KiB"


_OVERLAY: ContextVar[Mapping[str, bytes] | None] = ContextVar("eagle3lint_overlay", default=None)
"""Source files read from memory instead of the disk, by real path (see `overlaid`)."""


@contextmanager
def overlaid(texts: Mapping[Path, bytes]) -> Iterator[None]:
    """Within the block, the source files in `texts` hold those bytes rather than what is on
    disk: an editor's unsaved buffers (`eagle3lint server`), or `fix`'s next pass computed in
    memory. Every source read goes through `read_source_bytes`/`read_source_stamped`, so
    this is the one place that decides what a file holds; each file must still exist."""
    token = _OVERLAY.set({os.path.realpath(path): data for path, data in texts.items()})
    try:
        yield
    finally:
        _OVERLAY.reset(token)


def _overlay(path: Path) -> bytes | None:
    """The bytes `overlaid` gives the file at `path`, or None: read it from disk."""
    texts = _OVERLAY.get()
    if not texts:
        return None  # no realpath call on a plain run: it stats every folder on the way
    data = texts.get(os.path.realpath(path))
    if data is not None and len(data) > MAX_FILE_BYTES:
        raise UnreadableSource(f"file is over the {_size(MAX_FILE_BYTES)} limit", path)
    return data


def read_source_bytes(path: Path) -> bytes:
    """A source file's bytes (see `read_regular`), refusing files over `MAX_FILE_BYTES`."""
    data = _overlay(path)
    return read_regular(path, MAX_FILE_BYTES) if data is None else data


def read_source_stamped(path: Path) -> tuple[bytes, Stamp | None]:
    """`read_source_bytes`, with the file's `Stamp` (see `read_regular_stamped`); none for a
    file held in memory (`overlaid`), which no later `stat` can vouch for."""
    data = _overlay(path)
    return read_regular_stamped(path, MAX_FILE_BYTES) if data is None else (data, None)


Stamp = tuple[int, int, int, int, int]
"""What `stat` says of a file: size, modification and change times (ns), inode, device."""

SETTLED_NS = 2_000_000_000
"""How long before it is read a file must have last changed for its `Stamp` to tell a later
change (as git's index does against "racy" files): the kernel sets the change time (which no
program can set back) from a clock that ticks every few milliseconds, so a file written again
within one tick of its read could otherwise keep the stamp it had."""


def stamp_of(info: os.stat_result, read_at: int) -> Stamp | None:
    """The stamp of a file read at `read_at` (ns, `time.time_ns`); None if it changed within
    `SETTLED_NS` before (or after, by a clock set back) that."""
    if read_at - info.st_ctime_ns < SETTLED_NS:
        return None
    return (info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino, info.st_dev)


def stamp_now(path: Path) -> Stamp | None:
    """The stamp of the file at `path` now, whatever its age (None: nothing there)."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino, info.st_dev)


def decode_source(data: bytes) -> str:
    """Text of a Python file for the parser: `decode_text`, refusing source nested too deeply
    to parse safely."""
    text = decode_text(data)
    check_nesting(text)
    return text


def decode_text(data: bytes) -> str:
    """Text of a Python file, honouring a PEP 263 cookie and a UTF-8 BOM; refuses binary files.
    For text that is only searched (the runner, the config registry): the nesting guard is the
    parser's, and costs 0.1 s on the 0.33.0 runner at every run."""
    if b"\0" in data:
        raise UnreadableSource("binary file (contains NUL bytes)")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError) as exc:
        raise UnreadableSource(f"cannot decode: {exc}") from exc
    # Lines end as CPython and editors end them: a lone CR is a line break too. A form feed in
    # the indentation restarts CPython's column count; libcst's tokenizer trips on it.
    text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    return _INDENT_FORM_FEED.sub("", text) if "\f" in text else text


_LINE = re.compile(r".*?(?:\r\n|\r|\n)|.+\Z", re.DOTALL)
"""A line with its ending, split where CPython's tokenizer splits (not `str.splitlines`,
which also splits at form feeds and other separators the tokenizer keeps inside a line)."""


def source_lines(source: str) -> list[str]:
    """The lines of `source`, each with its ending, numbered as CPython numbers them."""
    return _LINE.findall(source)


def check_syntax(text: str, name: str) -> ast.Module:
    """Refuse what CPython would not compile (libcst accepts some Python 2, such as
    `except E, e:`), and return CPython's syntax tree. Only the parser runs: nothing is
    compiled to code or executed; it costs about a tenth of the libcst parse."""
    try:
        return compile(text, name, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as exc:
        raise SourceSyntaxError(f"syntax error: {exc.msg}", line=exc.lineno) from exc
    except (ValueError, RecursionError, MemoryError) as exc:
        raise TooDeeplyNested(f"cannot be parsed: {type(exc).__name__}") from exc


def nesting_depth(text: str, tokens: list[str] | None = None) -> int:
    """How deep the syntax tree of `text` nests, estimated high from a scan of its tokens.

    Every bracket, operator and string on the way from a statement to a token counts one level:
    `f(a.b + c)` reaches 3 at `c`. A comma, semicolon or new logical line goes back to the depth
    of the enclosing bracket, except between `lambda` and its colon, where commas separate
    parameters of a lambda that nests in the ones before it.
    """
    bases = [0]
    lambdas = [0]
    depth = deepest = 0
    for token in _TOKEN.findall(text) if tokens is None else tokens:
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
    """Refuse source that would crash, stall or exhaust the parser (see `MAX_NESTING`,
    `MAX_ELIF` and `MAX_TOKENS`)."""
    elifs = len(_ELIF.findall(text))
    if elifs > MAX_ELIF:
        raise TooDeeplyNested(
            f"too deeply nested to analyse: {elifs} elif branches (the limit is {MAX_ELIF})"
        )
    tokens = _TOKEN.findall(text)
    depth = nesting_depth(text, tokens)
    if depth > MAX_NESTING:
        raise TooDeeplyNested(
            f"too deeply nested to analyse: expressions nest {depth} levels deep "
            f"(the limit is {MAX_NESTING})"
        )
    count = len(tokens) + len(_WORD.findall(text))
    if count > MAX_TOKENS:
        raise UnreadableSource(
            f"too large to analyse: about {count:,} tokens (the limit is {MAX_TOKENS:,})"
        )


def read_source(path: Path) -> str:
    data = read_source_bytes(path)
    try:
        return decode_source(data)
    except UnreadableSource as exc:
        exc.path = path
        raise
