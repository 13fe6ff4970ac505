"""git's ignore rules (gitignore(5)), matched without git, in time linear in the path.

A `.gitignore` line is parsed as git parses it: blank lines and lines starting with `#` are
skipped, one `\\r` before the newline and unescaped trailing spaces are dropped, a leading `!`
re-includes, a trailing `/` matches folders only, and a pattern holding a `/` anywhere but at
its end is matched against the path relative to the `.gitignore`'s folder (a leading `/` only
anchors); one without is matched against the name alone. Patterns are git's wildmatch: `*`
and `?` never match `/`, `[...]` classes (`!` or `^` negate, ranges, `[:alpha:]`-style names,
`\\` escapes; never `/`; an unclosed class matches nothing), `\\` escapes one byte, and `**`
between slashes (or at either end) matches any number of folders. Bytes are compared, as git
compares them; the last matching rule of a file decides.

git's own matcher backtracks, and pathspec's regex translation (used before) too: a line
`*a*a*a*a*a*b` took 297 s on one 200-byte file name. Here every pattern with a wildcard is
compiled to one state per element, the patterns of a file are joined into one automaton, and
the path is run through it once with every live state of every pattern at once (a bit set),
so a path costs O(len(path)) steps whatever the patterns, each an operation on a bit set of
the patterns' total size (which `Ignores` caps). Patterns without a wildcard are looked up.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

_SLASH = ord("/")
_SPECIAL = frozenset(b"*?[\\")
"""Bytes that make a pattern more than a literal (git's `is_glob_special`)."""
_ALL = frozenset(range(256))
_NOT_SLASH = _ALL - {_SLASH}
MAX_PATH_BYTES = 4096
"""Linux's PATH_MAX: no path is longer, so a pattern that needs more bytes matches nothing
(and is not compiled)."""

_CLASSES: dict[bytes, frozenset[int]] = {
    # git's locale-independent ASCII ctype (sane_ctype); wildmatch takes isblank and isgraph
    # from C's "C" locale.
    b"alnum": frozenset(b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"),
    b"alpha": frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"),
    b"blank": frozenset(b" \t"),
    b"cntrl": frozenset([*range(0x20), 0x7F]),
    b"digit": frozenset(b"0123456789"),
    b"graph": frozenset(range(0x21, 0x7F)),
    b"lower": frozenset(b"abcdefghijklmnopqrstuvwxyz"),
    b"print": frozenset(range(0x20, 0x7F)),
    b"punct": frozenset(
        c for c in range(0x21, 0x7F) if not (chr(c).isalnum() and chr(c).isascii())
    ),
    b"space": frozenset(b" \t\n\r"),
    b"upper": frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ"),
    b"xdigit": frozenset(b"0123456789ABCDEFabcdef"),
}


class _Malformed(Exception):
    """A pattern that matches nothing at all: a class never closed or naming no known class
    (git's wildmatch then gives up), or one needing more bytes than a path can hold."""


@dataclass
class _Pattern:
    """One wildmatch pattern (git's `WM_PATHNAME` mode) as states 0..size-1: state i is its
    i-th element. A star is a loop: it consumes bytes and stays, or is passed over. A `**/`
    is a split that consumes nothing and leads to its loop, or jumps over the loop and its
    `/` (git tries "no folder at all" too)."""

    elements: list[frozenset[int]]
    """The bytes each state consumes (none for a split)."""
    loops: int
    splits: int

    @classmethod
    def compile(cls, pattern: bytes) -> _Pattern:
        """The states of `pattern`; raises `_Malformed` for a pattern that matches nothing.

        git compares the literal bytes before the first wildcard itself and wildmatches the
        rest alone, so a `**` right after them counts as starting the pattern.
        """
        wild_from = next((i for i, byte in enumerate(pattern) if byte in _SPECIAL), 0)
        elements: list[frozenset[int]] = []
        loops = splits = consumed = 0
        i, after_split = 0, -1
        while i < len(pattern):
            if consumed > MAX_PATH_BYTES:
                raise _Malformed
            byte = pattern[i]
            if byte == ord("*"):
                end = i
                while end < len(pattern) and pattern[end] == ord("*"):
                    end += 1
                follows = pattern[end : end + 2]
                bounded = (
                    end - i > 1
                    and (i in (0, wild_from) or pattern[i - 1] == _SLASH)
                    and (follows[:1] in (b"", b"/") or follows == b"\\/")
                )
                if bounded and follows[:1] == b"/":
                    if i == after_split:
                        # `**/**/` matches what `**/` does: one split in a row keeps the
                        # closure of a state set to one pass (see `_Machine._closed`).
                        i = after_split = end + 1
                        continue
                    splits |= 1 << len(elements)
                    elements.append(frozenset())
                    after_split = end + 1
                loops |= 1 << len(elements)
                elements.append(_ALL if bounded else _NOT_SLASH)
                i = end
                continue
            if byte == ord("?"):
                elements.append(_NOT_SLASH)
                i += 1
            elif byte == ord("["):
                members, i = _bracket(pattern, i + 1)
                elements.append(members - {_SLASH})
            elif byte == ord("\\"):
                if i + 1 == len(pattern):
                    raise _Malformed  # a trailing backslash escapes nothing: no match
                elements.append(frozenset((pattern[i + 1],)))
                i += 2
            else:
                elements.append(frozenset((byte,)))
                i += 1
            consumed += 1
        return cls(elements, loops, splits)


class _Machine:
    """The wildcard patterns of one ignore file run as one automaton: each pattern's states,
    then a state of its own that it reaches on a match (consuming nothing), side by side in
    one bit set, in rule order, so the highest final state reached is the last rule that
    matched."""

    def __init__(self) -> None:
        self._elements: list[frozenset[int]] = []
        self.loops = self.splits = self.start = self._file_finals = self._dir_finals = 0
        self.size = 0
        """Its states: what a byte of a path costs, in bits of work."""
        self._rule_at: dict[int, int] = {}
        """Final state → index of its rule."""
        self.accept: list[int] = []
        """Per byte value: the states that consume it."""

    def add(self, index: int, pattern: _Pattern, folders_only: bool) -> None:
        """Rule `index` (rules are added in order) matching `pattern`."""
        offset = len(self._elements)
        self._elements += pattern.elements
        self.loops |= pattern.loops << offset
        self.splits |= pattern.splits << offset
        self.start |= 1 << offset
        final = len(self._elements)
        self._elements.append(frozenset())
        self._rule_at[final] = index
        self._dir_finals |= 1 << final
        if not folders_only:
            self._file_finals |= 1 << final

    def finish(self) -> None:
        """Build the byte table (once every rule is added)."""
        size = (len(self._elements) + 7) // 8
        # Bit maps per byte value: setting a bit of a big int costs its whole size.
        maps = [bytearray(size) for _ in range(256)]
        everything, not_slash = bytearray(size), bytearray(size)
        for state, members in enumerate(self._elements):
            where, bit = divmod(state, 8)
            if members is _ALL:
                everything[where] |= 1 << bit
            elif members is _NOT_SLASH:
                not_slash[where] |= 1 << bit
            else:
                for member in members:
                    maps[member][where] |= 1 << bit
        wide = int.from_bytes(everything, "little")
        narrow = wide | int.from_bytes(not_slash, "little")
        self.accept = [
            int.from_bytes(maps[byte], "little") | (wide if byte == _SLASH else narrow)
            for byte in range(256)
        ]
        self.start = self._closed(self.start)
        self.size = len(self._elements)
        self._elements = []

    def _closed(self, states: int) -> int:
        """`states` with every state reachable from them without consuming a byte: a split
        leads to its loop and past its `/`, then a loop may be passed over. One pass of each
        is enough: no loop follows a loop or a split (stars in a row are one loop, a split
        follows a byte or starts its pattern) and no split follows a split (`**/**/` is
        compiled as one), so a byte costs a few operations on the state set."""
        split = states & self.splits
        if split:
            states |= (split << 1) | (split << 3)
        return states | ((states & self.loops) << 1)

    def last(self, text: bytes, is_dir: bool) -> int:
        """The index of the last rule matching `text`, -1 when none does."""
        states = self.start
        accept, loops = self.accept, self.loops
        for byte in text:
            moved = states & accept[byte]
            if not moved:
                return -1
            states = self._closed(((moved & ~loops) << 1) | (moved & loops))
        matched = states & (self._dir_finals if is_dir else self._file_finals)
        return self._rule_at[matched.bit_length() - 1] if matched else -1


def _bracket(pattern: bytes, i: int) -> tuple[frozenset[int], int]:
    """The bytes a `[...]` starting at `pattern[i]` (after the `[`) matches, and the index
    after its `]`, as git's wildmatch reads a class."""
    negated = i < len(pattern) and pattern[i] in b"!^"
    if negated:
        i += 1
    members: set[int] = set()
    previous: int | None = None  # the last single byte, which a `-` may start a range from
    first = True
    while first or pattern[i] != ord("]"):
        first = False
        if i >= len(pattern):
            raise _Malformed
        byte = pattern[i]
        if byte == ord("\\"):
            i += 1
            if i >= len(pattern):
                raise _Malformed
            members.add(pattern[i])
            previous = pattern[i]
        elif (
            byte == ord("-")
            and previous is not None
            and i + 1 < len(pattern)
            and pattern[i + 1] != ord("]")
        ):
            i += 1
            high = pattern[i]
            if high == ord("\\"):
                i += 1
                if i >= len(pattern):
                    raise _Malformed
                high = pattern[i]
            members.update(range(previous, high + 1))
            previous = None
        elif byte == ord("[") and pattern[i + 1 : i + 2] == b":":
            close = pattern.find(b"]", i + 2)
            if close < 0:
                raise _Malformed
            if close - (i + 2) < 1 or pattern[close - 1] != ord(":"):
                members.add(byte)  # no `:]`: a plain `[` in the set
                previous = byte
            else:
                name = pattern[i + 2 : close - 1]
                if name not in _CLASSES:
                    raise _Malformed
                members |= _CLASSES[name]
                previous = None
                i = close
        else:
            members.add(byte)
            previous = byte
        i += 1
        if i >= len(pattern):
            raise _Malformed
    chosen = frozenset(range(256)) - members if negated else frozenset(members)
    return chosen, i + 1


@dataclass(frozen=True)
class Rule:
    """One line of an ignore file."""

    pattern: bytes
    """The wildmatch pattern, without the `!`, the trailing `/` and an anchoring `/`."""
    negated: bool
    """`!pattern`: a match re-includes the path."""
    folders_only: bool
    """`pattern/`: only folders match."""
    anchored: bool
    """The pattern holds a `/`: matched against the relative path, else against the name."""


def parse_rules(data: bytes) -> list[Rule]:
    """The rules of an ignore file's bytes, in file order (the last match decides)."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    rules = []
    for line in data.split(b"\n"):
        if not line or line.startswith(b"#"):
            continue
        rule = parse_rule(line.removesuffix(b"\r"))
        if rule is not None:
            rules.append(rule)
    return rules


def parse_rule(line: bytes) -> Rule | None:
    """One line as a rule; None when it can match nothing (it is empty once trimmed)."""
    pattern = _trim_trailing_spaces(line)
    negated = pattern.startswith(b"!")
    pattern = pattern.removeprefix(b"!")
    folders_only = pattern.endswith(b"/")
    pattern = pattern.removesuffix(b"/")
    anchored = b"/" in pattern
    if anchored:
        pattern = pattern.removeprefix(b"/")
    if not pattern:
        return None
    return Rule(pattern, negated, folders_only, anchored)


def _trim_trailing_spaces(line: bytes) -> bytes:
    """`line` without its trailing spaces, unless escaped by a backslash (git's
    `trim_trailing_spaces`, which also leaves a line ending in a lone backslash alone)."""
    if not line.endswith(b" "):
        return line
    last_space: int | None = None
    i = 0
    while i < len(line):
        byte = line[i]
        if byte == ord(" "):
            if last_space is None:
                last_space = i
        elif byte == ord("\\"):
            i += 1
            if i == len(line):
                return line
            last_space = None
        else:
            last_space = None
        i += 1
    return line if last_space is None else line[:last_space]


class IgnoreFile:
    """The rules of one ignore file and the folder their paths are relative to.

    Rules without a wildcard (most of them: `/build`, `.idea/`, `secrets.py`) are looked up by
    the name or path they name; the others run as two automata, one over the name and one
    over the relative path.
    """

    __slots__ = ("_literal", "_names", "_paths", "folder", "negated", "size")

    def __init__(self, folder: Path, rules: list[Rule]) -> None:
        self.folder = os.fsencode(os.path.abspath(folder)).rstrip(b"/")
        """The folder, absolute, as bytes, without a trailing slash (`/` is empty)."""
        self.negated = [rule.negated for rule in rules]
        # [is a folder][matched against the path] → pattern → index of its last rule
        self._literal: tuple[tuple[dict[bytes, int], dict[bytes, int]], ...] = (
            ({}, {}),
            ({}, {}),
        )
        self._names, self._paths = _Machine(), _Machine()
        for index, rule in enumerate(rules):
            if not _SPECIAL.intersection(rule.pattern):
                for is_dir in (True,) if rule.folders_only else (False, True):
                    self._literal[is_dir][rule.anchored][rule.pattern] = index
                continue
            try:
                compiled = _Pattern.compile(rule.pattern)
            except _Malformed:
                continue
            machine = self._paths if rule.anchored else self._names
            machine.add(index, compiled, rule.folders_only)
        self._names.finish()
        self._paths.finish()
        self.size = self._names.size + self._paths.size
        """States of its automata: what matching a path against it costs, per byte."""

    @classmethod
    def of(cls, folder: Path, data: bytes) -> IgnoreFile | None:
        """The rules of `data`, an ignore file's bytes, relative to `folder`; None if none."""
        rules = parse_rules(data)
        return cls(folder, rules) if rules else None

    def decide(self, path: bytes, name: bytes, is_dir: bool) -> bool | None:
        """True: ignored, False: re-included, None: no rule of this file matches `path`
        (absolute, below `folder`) whose last part is `name`."""
        relative = path[len(self.folder) + 1 :]
        by_name, by_path = self._literal[is_dir]
        last = max(
            by_name.get(name, -1),
            by_path.get(relative, -1),
            self._names.last(name, is_dir) if self._names.start else -1,
            self._paths.last(relative, is_dir) if self._paths.start else -1,
        )
        return None if last < 0 else not self.negated[last]


class UnusableIgnoreFile(Exception):
    """An ignore file that is there but cannot be applied: it cannot be read, or the ignore
    files that apply to a folder hold too many wildcard patterns to match every path against
    them in reasonable time. The message says which and why."""


MAX_STATES = 16_384
"""Most automaton states (about one per pattern byte) the ignore files that apply to one
folder may hold: a path costs up to its length times this many bits of work, 8 KiB per byte.
Real `.gitignore` files hold a few hundred (GitHub's largest template about 3,000)."""


@dataclass(frozen=True)
class Ignores:
    """The ignore files that apply in one folder, from the lowest precedence (a repository's
    `info/exclude`) to the highest (the folder's own `.gitignore`)."""

    files: tuple[IgnoreFile, ...] = ()

    def adding(self, file: IgnoreFile | None) -> Ignores:
        """These rules, and a deeper folder's `.gitignore` over them; raises
        `UnusableIgnoreFile` when they would hold more than `MAX_STATES`."""
        if file is None:
            return self
        if sum(f.size for f in self.files) + file.size > MAX_STATES:
            raise UnusableIgnoreFile(
                f"cannot apply {os.fsdecode(file.folder)}/.gitignore: with the ignore files "
                f"above it, over {MAX_STATES:,} states of wildcard patterns"
            )
        return Ignores((*self.files, file))

    def ignored(self, path: str, is_dir: bool) -> bool:
        """Whether `path` (below every file's folder) is ignored: the deepest file with a
        matching rule decides, and within a file its last matching rule."""
        if not self.files:
            return False
        encoded = os.fsencode(os.path.abspath(path))
        name = encoded.rsplit(b"/", 1)[-1]
        for file in reversed(self.files):
            verdict = file.decide(encoded, name, is_dir)
            if verdict is not None:
                return verdict
        return False
