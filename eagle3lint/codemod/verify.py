"""The last check before rewritten code is handed back for writing: what a reviewer would check.

The new code must compile, no class may lose a method or class attribute it had (a caller
elsewhere, such as a wrapper delegating to its language model, may use it: vLLM 0.18's
Kimi-K2.5 broke when its decoder's getter was renamed), and every function a codemod touched
must read no name that is
unbound on some path to the read (StableLM's generated tap read `residual`, which that forward
never binds) and no name defined nowhere. Only problems the rewrite introduced count: a
function that already read a name on a path that may not bind it is vLLM's, not ours.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Protocol

import libcst as cst
from libcst.metadata import (
    Access,
    ComprehensionScope,
    FunctionScope,
    MetadataWrapper,
    Scope,
    ScopeProvider,
)

from eagle3lint import __version__

from .errors import CodemodRefused

MODULE_NAMES = frozenset(
    {"__file__", "__name__", "__doc__", "__package__", "__spec__", "__loader__", "__path__"}
)
"""Names every module has, which libcst's builtin scope does not list."""


class VerdictStore(Protocol):
    """Where verdicts outlive the process: the summary cache (`index.cache.SummaryCache`)."""

    def load(self, key: str, kind: type[Verified]) -> Verified | None: ...

    def store(self, key: str, summary: object) -> None: ...


@dataclass
class Verified:
    """The scope analysis of one (original, rewritten) pair, as the cache keeps it: the
    problem it found (function, name, what), or an empty list."""

    problem: list[str]


def render_checked(
    original: str,
    new_module: cst.Module,
    path: str,
    parsed: cst.Module | None = None,
    store: VerdictStore | None = None,
) -> str:
    """The code of `new_module`, after checking it as a reviewer would.

    `original` is the text the module was parsed from: when the rewrite changed nothing it is
    returned as is, and when the rewrite does not compile the reason says whether the original
    compiled (a codemod bug) or did not either (the file was broken before). `parsed` is
    `original` parsed, when the caller holds it (a file is parsed once per `fix` run).
    `store` keeps the scope analysis, the costly part, across runs: keyed by both texts and this
    module's code, so `fix --diff` then `fix`, or a fix run again, analyse nothing twice.

    Refuses when the new code does not compile, when a class loses a method or class attribute
    it had (a caller may use it), or when a function it changed reads a name that is not bound
    on every path to the read, or that is defined nowhere, where the original did not.
    """
    code = new_module.code
    if code == original:
        return original
    try:
        compile(code, path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as error:
        try:
            compile(original, path, "exec", dont_inherit=True)
        except (SyntaxError, ValueError):
            before = "the original does not compile either"
        else:
            before = "the original does; this is a codemod bug"
        where = f" (line {error.lineno})" if isinstance(error, SyntaxError) else ""
        raise CodemodRefused(
            f"{path}: the rewritten code does not compile: {error}{where}; {before}"
        ) from error
    before = parsed or cst.parse_module(original)
    removed = _removed_members(before, new_module)
    if removed:
        raise CodemodRefused(
            f"{path}: the rewrite would remove {', '.join(removed)}, which callers may use; "
            "this is a codemod bug"
        )
    problem = _introduced_cached(original, code, before, new_module, store)
    if problem is not None:
        function, name, what = problem
        raise CodemodRefused(
            f"{path}: the rewritten {function} reads {name!r}, which {what}; this is a codemod bug"
        )
    return code


def _members(module: cst.Module) -> set[str]:
    """`Class.name` for every method and class-level assignment of the module's classes."""
    found = set()
    for statement in module.body:
        if not isinstance(statement, cst.ClassDef):
            continue
        for item in statement.body.body:
            if isinstance(item, cst.FunctionDef):
                found.add(f"{statement.name.value}.{item.name.value}")
            elif isinstance(item, cst.SimpleStatementLine):
                for small in item.body:
                    targets = (
                        [t.target for t in small.targets]
                        if isinstance(small, cst.Assign)
                        else [small.target]
                        if isinstance(small, cst.AnnAssign)
                        else []
                    )
                    found.update(
                        f"{statement.name.value}.{t.value}"
                        for t in targets
                        if isinstance(t, cst.Name)
                    )
    return found


def _removed_members(before: cst.Module, after: cst.Module) -> list[str]:
    """What a class had before the rewrite and no longer has: a caller of it would fail (a
    rename keeps the old name as an alias for that reason)."""
    return sorted(_members(before) - _members(after))


Problem = tuple[str, str, str]
"""(function's qualified name, name read, what is wrong with it)."""

_INTRODUCED: dict[tuple[str, str], Problem | None] = {}
"""(original, rewritten code) → `_introduced`: `fix` rewrites each file again whenever a
refusal elsewhere changes the plan, mostly to the same code."""


def _introduced_cached(
    original: str,
    code: str,
    before: cst.Module,
    after: cst.Module,
    store: VerdictStore | None,
) -> Problem | None:
    """`_introduced`, from memory, else from `store`, else computed (and kept in both)."""
    key = (original, code)
    if key in _INTRODUCED:
        return _INTRODUCED[key]
    if len(_INTRODUCED) >= 256:
        _INTRODUCED.clear()
    stored_key = _store_key(original, code) if store is not None else ""
    found = store.load(stored_key, Verified) if store is not None else None
    if found is not None and len(found.problem) in (0, 3):
        problem = (found.problem[0], found.problem[1], found.problem[2]) if found.problem else None
    else:
        problem = _introduced(before, after, key)
        if store is not None:
            store.store(stored_key, Verified(list(problem or ())))
    _INTRODUCED[key] = problem
    return problem


def _store_key(original: str, code: str) -> str:
    digest = hashlib.blake2b(digest_size=20)
    digest.update(_code_version())
    for text in (original, code):
        digest.update(b"\0" + text.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


@cache
def _code_version() -> bytes:
    """What a verdict depends on besides the two texts: this module and libcst."""
    from importlib.metadata import version

    return f"verify\0{__version__}\0{version('libcst')}\0".encode() + Path(__file__).read_bytes()


def _introduced(before: cst.Module, after: cst.Module, texts: Sequence[str]) -> Problem | None:
    """A problem of a function the rewrite changed that the original did not have. `texts`
    are both modules' code: whether the untouched definitions' headers may bind a global."""
    was = {name: before.code_for_node(f) for name, f in _functions(before.body, "")}
    touched = {
        name
        for name, function in _functions(after.body, "")
        if was.get(name) != after.code_for_node(function)
    }
    if not touched:
        return None
    headers = not any(_may_bind_globals(text) for text in texts)
    old = _problems(_reduced(before, touched, headers))
    new = sorted(_problems(_reduced(after, touched, headers)) - old)
    return new[0] if new else None


def _problems(module: cst.Module) -> set[Problem]:
    """Every name read before it is bound on some path, or defined nowhere, in every function
    of `module`."""
    wrapper = MetadataWrapper(module)
    scopes = wrapper.resolve(ScopeProvider)
    star_import = any(
        isinstance(s, cst.SimpleStatementLine)
        and any(
            isinstance(i, cst.ImportFrom) and isinstance(i.names, cst.ImportStar) for i in s.body
        )
        for s in wrapper.module.body
    )
    inside = _comprehensions(scopes)
    found: set[Problem] = set()
    for qualname, function in _functions(wrapper.module.body, ""):
        scope = scopes.get(function.body)
        if not isinstance(scope, FunctionScope):
            continue
        reads = _local_reads(scope, inside)
        flow = _Flow(scope, reads)
        flow.block(function.body.body, _parameters(function))
        found.update((qualname, name, "may be unbound on some path") for name in flow.unbound)
        if star_import:
            continue  # any name may come from the star
        for access in _accesses_within(scope, inside):
            name = access.node.value if isinstance(access.node, cst.Name) else None
            if name and not access.referents and name not in MODULE_NAMES:
                found.add((qualname, name, "is defined nowhere"))
    return found


def _reduced(module: cst.Module, keep: set[str], headers: bool) -> cst.Module:
    """`module` with the body of every function not in `keep` emptied: scope analysis of a
    whole vLLM file takes seconds, and only the touched functions are checked. With `headers`,
    the definitions outside any function that hold nothing in `keep` are reduced to their
    names too (`def f(): ...`, `class A: ...`): what their decorators, parameters, bases and
    class bodies read or bind is no touched function's (`_may_bind_globals` says when it
    could be)."""
    parts = [name.split(".") for name in keep]
    holding = {".".join(names[:end]) for names in parts for end in range(1, len(names))}
    return module.visit(_Emptier(keep, holding if headers else None))


def _may_bind_globals(text: str) -> bool:
    """Whether a definition's header or class body in `text` may bind a module-level name: an
    assignment expression (`def f(x=(y := 1))`) or a `global` statement, or those characters
    anywhere (in a string, a comment), which only costs the smaller reduction."""
    return ":=" in text or _GLOBAL.search(text) is not None


_GLOBAL = re.compile(r"\bglobal\b")


def _stub() -> cst.IndentedBlock:
    """A body of `...`, a new one for each definition: metadata is kept by node."""
    return cst.IndentedBlock([cst.SimpleStatementLine([cst.Expr(cst.Ellipsis())])])


class _Emptier(cst.CSTTransformer):
    def __init__(self, keep: set[str], holding: set[str] | None) -> None:
        self.keep = keep
        self.holding = holding
        """The qualified names of the classes and functions that hold a kept function; None:
        definitions keep their headers."""
        self.names: list[str] = []
        self.functions = 0
        """How many functions (kept ones: the others are not entered) the walk is in."""

    def _header_free(self) -> bool:
        """Whether the definition being left may lose its header: it is in no function (where
        its header's reads would be that function's), and holds no kept function."""
        return (
            self.holding is not None
            and self.functions == 0
            and ".".join(self.names) not in self.holding
        )

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self.names.append(node.name.value)
        return not self._header_free()

    def leave_ClassDef(self, original: cst.ClassDef, updated: cst.ClassDef) -> cst.ClassDef:
        reduced = self._header_free()
        self.names.pop()
        return cst.ClassDef(name=updated.name, body=_stub()) if reduced else updated

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.names.append(node.name.value)
        kept = ".".join(self.names) in self.keep
        self.functions += kept
        return kept

    def leave_FunctionDef(
        self, original: cst.FunctionDef, updated: cst.FunctionDef
    ) -> cst.FunctionDef:
        kept = ".".join(self.names) in self.keep
        self.functions -= kept
        reduced = not kept and self._header_free()
        self.names.pop()
        if kept:
            return updated
        if reduced:
            return cst.FunctionDef(name=updated.name, params=cst.Parameters(), body=_stub())
        return updated.with_changes(body=_stub())


def _functions(body: Sequence[cst.CSTNode], prefix: str) -> Iterator[tuple[str, cst.FunctionDef]]:
    """Every function and method, nested ones too, with its qualified name."""
    for statement in body:
        if isinstance(statement, cst.FunctionDef):
            name = f"{prefix}{statement.name.value}"
            yield name, statement
            yield from _functions(statement.body.body, f"{name}.")
        elif isinstance(statement, cst.ClassDef):
            yield from _functions(statement.body.body, f"{prefix}{statement.name.value}.")
        elif isinstance(statement, (cst.If, cst.Try)):
            yield from _functions(statement.body.body, prefix)


def _comprehensions(scopes: Mapping[cst.CSTNode, Scope | None]) -> dict[Scope, list[Scope]]:
    """Each scope → the comprehension scopes directly inside it."""
    inside: dict[Scope, list[Scope]] = {}
    for scope in {id(s): s for s in scopes.values() if s is not None}.values():
        if isinstance(scope, ComprehensionScope):
            inside.setdefault(scope.parent, []).append(scope)
    return inside


def _accesses_within(scope: Scope, inside: dict[Scope, list[Scope]]) -> Iterator[Access]:
    """The reads of `scope` and of the comprehensions inside it."""
    yield from scope.accesses
    for child in inside.get(scope, ()):
        yield from _accesses_within(child, inside)


def _local_reads(scope: Scope, inside: dict[Scope, list[Scope]]) -> dict[int, str]:
    """`id()` of every Name node that reads a local of `scope` (its comprehensions included;
    nested functions and lambdas run later, so their reads are not on this flow)."""
    reads: dict[int, str] = {}
    for access in _accesses_within(scope, inside):
        if any(getattr(a, "scope", None) is scope for a in access.referents):
            node = access.node
            if isinstance(node, cst.Name):
                reads[id(node)] = node.value
    return reads


def _parameters(function: cst.FunctionDef) -> set[str]:
    params = function.params
    every = [*params.posonly_params, *params.params, *params.kwonly_params]
    for star in (params.star_arg, params.star_kwarg):
        if isinstance(star, cst.Param):
            every.append(star)
    return {p.name.value for p in every}


class _Flow:
    """Which locals are bound on every path, statement by statement.

    A block returns the names bound on every path through it, or None when no path leaves it
    normally (it returns, raises, breaks or continues). Loops may run zero times, so what
    their bodies bind does not count after them.
    """

    def __init__(self, scope: Scope, reads: dict[int, str]) -> None:
        self.reads = reads
        self.binds: dict[int, set[str]] = {}
        """`id()` of each node that binds locals (a target name, an import, a def) → them."""
        for assignment in scope.assignments:
            node = getattr(assignment, "node", None)
            if node is not None:
                self.binds.setdefault(id(node), set()).add(assignment.name.split(".")[0])
        self.unbound: set[str] = set()

    def block(self, statements: Sequence[cst.BaseStatement], bound: set[str]) -> set[str] | None:
        current: set[str] | None = set(bound)
        for statement in statements:
            if current is None:
                return None  # unreachable: never read
            current = self.statement(statement, current)
        return current

    def statement(self, node: cst.BaseStatement, bound: set[str]) -> set[str] | None:
        if isinstance(node, cst.SimpleStatementLine):
            for small in node.body:
                bound = self.expression(small, bound)
                if isinstance(small, (cst.Return, cst.Raise, cst.Continue, cst.Break)):
                    return None
            return bound
        if isinstance(node, cst.If):
            inside = self.expression(node.test, bound)
            taken = self.block(node.body.body, inside)
            if isinstance(node.orelse, cst.If):
                other = self.statement(node.orelse, inside)
            elif isinstance(node.orelse, cst.Else):
                other = self.block(node.orelse.body.body, inside)
            else:
                other = inside
            return _meet(taken, other)
        if isinstance(node, cst.For):
            before = self.expression(node.iter, bound)
            self.block(node.body.body, self.expression(node.target, before))
            return self._else(node.orelse, before)
        if isinstance(node, cst.While):
            before = self.expression(node.test, bound)
            self.block(node.body.body, before)
            return self._else(node.orelse, before)
        if isinstance(node, cst.With):
            for item in node.items:
                bound = self.expression(item, bound)
            return self.block(node.body.body, bound)
        if isinstance(node, cst.Try):
            return self._try(node, bound)
        if isinstance(node, cst.Match):
            subject = self.expression(node.subject, bound)
            ends = [
                self.block(case.body.body, self.expression(case.pattern, subject))
                for case in node.cases
            ]
            return _meet(subject, *ends)
        # def, class and anything newer: what they bind, after what they evaluate.
        return self.expression(node, bound)

    def _else(self, orelse: cst.Else | None, bound: set[str]) -> set[str] | None:
        return self.block(orelse.body.body, bound) if orelse is not None else bound

    def _try(self, node: cst.Try, bound: set[str]) -> set[str] | None:
        body = self.block(node.body.body, bound)
        ends = [self._else(node.orelse, body) if body is not None else None]
        for handler in node.handlers:
            caught = self.expression(handler.type, bound) if handler.type else bound
            caught = self.expression(handler.name, caught) if handler.name else caught
            ends.append(self.block(handler.body.body, caught))
        after = _meet(*ends)
        if node.finalbody is None:
            return after
        final = self.block(node.finalbody.body.body, bound)
        return None if after is None or final is None else after | final

    def expression(self, node: cst.CSTNode, bound: set[str]) -> set[str]:
        """Check the reads in `node` against `bound`; the names bound after it."""
        nodes = list(_nodes(node))
        binds = {name for n in nodes for name in self.binds.get(id(n), ())}
        # `(n := ...)` binds for the rest of the expression.
        walrus = {
            n.target.value
            for n in nodes
            if isinstance(n, cst.NamedExpr) and isinstance(n.target, cst.Name)
        }
        for n in nodes:
            local = self.reads.get(id(n))
            if local is not None and local not in bound and local not in walrus:
                self.unbound.add(local)
        return bound | binds


def _meet(*ends: set[str] | None) -> set[str] | None:
    """Names bound on every path that continues (None: none continues)."""
    live = [end for end in ends if end is not None]
    if not live:
        return None
    return set.intersection(*live)


def _nodes(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    yield node
    for child in node.children:
        yield from _nodes(child)
