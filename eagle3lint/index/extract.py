"""Build a `FileSummary` from source text with libcst.

The walk is targeted rather than a generic visitor over every node: module-level statements
(here, with `extract_conditions` deciding which branches of an `if` run), class bodies
(`extract_classes`), and in depth only `__init__`, `forward` (`extract_forward`) and the small
methods the contract is about. That keeps a cold parse of a whole vLLM tree close to the cost of
libcst's parser alone.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Collection, Iterable, Sequence

import libcst as cst

from eagle3lint.index.extract_classes import ClassReader
from eagle3lint.index.extract_conditions import (
    CUDA,
    UNDECIDED,
    branch_taken,
    platform_test,
    platforms_in,
)
from eagle3lint.index.model import (
    BodySpan,
    DictEntry,
    DictLiteral,
    FactorySummary,
    FileSummary,
    ImportRef,
    PlatformImport,
)
from eagle3lint.index.modules import module_name_for, resolve_relative
from eagle3lint.index.skim import bodies_of, skim
from eagle3lint.shapes.syntax import dotted, names_in, statements, string_value
from eagle3lint.sources.files import source_lines

_MODULE_NAME = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
_CONFIG_READ = re.compile(r"\b(?:config|hf_config|text_config)\.([A-Za-z_]\w*)")
_HF_CONFIG_TYPE = re.compile(r"\bget_hf_config\(\s*\(?\s*([A-Za-z_]\w*)")


def summarize(
    source: str,
    relpath: str,
    wanted: Collection[str] | None = None,
    syntax: ast.Module | None = None,
) -> FileSummary:
    """Parse `source` (the file at `relpath` under its import root) into a summary: of every
    class, or with `wanted` of those classes only, the other top-level classes' bodies left
    unread (`FileSummary.unread`; `syntax` is CPython's tree of `source`, parsed when not
    given, which says where they are).

    Raises `libcst.ParserSyntaxError` for code that does not parse.
    """
    parsed, unread, bodies = source, [], []
    if wanted is not None:
        lines = source_lines(source)
        bodies, functions = bodies_of(lines, syntax or ast.parse(source))
        parsed, unread = skim(lines, bodies, wanted, functions)
    tree = cst.parse_module(parsed)
    module, is_package = module_name_for(relpath)
    builder = _FileBuilder(parsed, relpath, module, is_package)
    # Config reads are the whole file's, unread classes too.
    builder.summary.config_reads = sorted(set(_CONFIG_READ.findall(source)))
    builder.summary.hf_config_types = list(dict.fromkeys(_HF_CONFIG_TYPE.findall(source)))
    builder.summary.bodies = bodies if unread else []
    builder.summary.unread = unread
    builder.walk(tree.body, platform=None)
    if not builder.has_module_getattr:
        builder.summary.lazy_exports.clear()
    return builder.summary


def summarize_bodies(source: str, relpath: str, bodies: Iterable[BodySpan]) -> FileSummary:
    """A summary holding only the classes at `bodies` of `source`, each parsed on its own:
    the bodies a summary of `source` left unread (its module-level facts are not repeated)."""
    module, is_package = module_name_for(relpath)
    builder = _FileBuilder(source, relpath, module, is_package)
    lines = source_lines(source)
    for body in bodies:
        tree = cst.parse_module("".join(lines[body.header - 1 : body.end]))
        statement = tree.body[0]
        if isinstance(statement, cst.ClassDef):
            # Headers are searched for from here, as in a walk of the whole file.
            builder.classes.last_line = body.header
            builder.summary.classes[body.name] = builder.classes.read(statement)
    return builder.summary


class _FileBuilder:
    def __init__(self, source: str, relpath: str, module: str, is_package: bool) -> None:
        self.source = source
        self.is_package = is_package
        self.classes = ClassReader(source)
        self.summary = FileSummary(path=relpath, module=module)
        self.has_module_getattr = False
        self._imports_only = False
        """Walking a branch that never runs but tells what a lazy `__getattr__` returns."""

    # -- module level -------------------------------------------------------------------
    def walk(self, body: Sequence[cst.CSTNode], platform: str | None) -> None:
        for stmt in body:
            if self._imports_only and not isinstance(stmt, cst.SimpleStatementLine | cst.If):
                continue
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if isinstance(small, cst.Import | cst.ImportFrom):
                        self._import(small, platform)
                    elif self._imports_only:
                        continue
                    elif isinstance(small, cst.Assign):
                        self._assign([t.target for t in small.targets], small.value)
                    elif isinstance(small, cst.AnnAssign) and small.value is not None:
                        self._assign([small.target], small.value)
            elif isinstance(stmt, cst.ClassDef):
                summary = self.classes.read(stmt)
                self.summary.classes[summary.name] = summary
            elif isinstance(stmt, cst.FunctionDef):
                self.has_module_getattr |= stmt.name.value == "__getattr__"
                self._factory(stmt)
                if stmt.name.value == "__getattr__" and platform is None:
                    self._lazy_platform_imports(stmt)
            elif isinstance(stmt, cst.If):
                self._if(stmt)
            elif isinstance(stmt, cst.Try):
                self.walk(stmt.body.body, platform)
                for handler in stmt.handlers:
                    self.walk(handler.body.body, platform)
            elif isinstance(stmt, cst.With):
                self.walk(stmt.body.body, platform)

    def _lazy_platform_imports(self, getattr_def: cst.FunctionDef) -> None:
        """A module `__getattr__` that imports each platform's classes when asked for them
        (0.33's `qwen4_exp`): its platform `if` chains are read as the module's own, so the
        other platforms' classes are variants of the names the module hands out."""
        for stmt in statements(getattr_def.body):
            if isinstance(stmt, cst.If) and platforms_in(stmt.test):
                imports_only, self._imports_only = self._imports_only, True
                self._if(stmt)
                self._imports_only = imports_only

    def _if(self, stmt: cst.If) -> None:
        branches: list[tuple[cst.BaseExpression | None, Sequence[cst.CSTNode]]] = []
        node: cst.If | cst.Else | None = stmt
        while isinstance(node, cst.If):
            branches.append((node.test, node.body.body))
            node = node.orelse
        if isinstance(node, cst.Else):
            branches.append((None, node.body.body))
        if all(test is None or platform_test(test) for test, _ in branches):
            self._platform_chain(branches)
            return
        taken = branch_taken(branches, CUDA)
        if taken is UNDECIDED:
            for _, body in branches:  # decided at run time by something else: keep all
                self.walk(body, None)
            return
        platforms = sorted({p for test, _ in branches if test for p in platforms_in(test)})
        if not platforms:
            # Decided statically (`TYPE_CHECKING`): only the branch that runs defines names.
            if taken is not None:
                self.walk(branches[taken][1], None)
            # The imports of the others still say what a module `__getattr__` hands out lazily
            # (`if TYPE_CHECKING: from .model import X`); they bind only names left unbound.
            imports_only, self._imports_only = self._imports_only, True
            for i, (_, body) in enumerate(branches):
                if i != taken:
                    self.walk(body, None)
            self._imports_only = imports_only
            return
        # Other platforms' branches stay visible as variants; walked first so that the
        # branch CUDA runs defines the names the verdict is about.
        for platform in platforms:
            other = branch_taken(branches, platform)
            if other not in (taken, None, UNDECIDED):
                self.walk(branches[other][1], platform)
        if taken is not None:
            self.walk(branches[taken][1], CUDA)

    def _platform_chain(
        self, branches: list[tuple[cst.BaseExpression | None, Sequence[cst.CSTNode]]]
    ) -> None:
        """`if current_platform.is_x(): ... elif ...: ... else: ...`: every branch is a variant;
        the `else` is CUDA's unless CUDA has its own branch (then it is the default)."""
        platforms = [platform_test(test) if test is not None else None for test, _ in branches]
        fallback = "default" if CUDA in platforms else CUDA
        for platform, (_, body) in zip(platforms, branches, strict=True):
            self.walk(body, platform or fallback)

    def _import(self, node: cst.Import | cst.ImportFrom, platform: str | None) -> None:
        refs: list[tuple[str, ImportRef]] = []
        if isinstance(node, cst.Import):
            for alias in node.names:
                full = dotted(alias.name) or ""
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    refs.append((alias.asname.name.value, ImportRef(full)))
                else:
                    refs.append((full.split(".")[0], ImportRef(full.split(".")[0])))
        else:
            target = dotted(node.module) if node.module is not None else None
            level = len(node.relative)
            base = (
                resolve_relative(self.summary.module, self.is_package, level, target)
                if level
                else (target or "")
            )
            if isinstance(node.names, cst.ImportStar):
                return
            for alias in node.names:
                name = dotted(alias.name) or ""
                local = name
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    local = alias.asname.name.value
                written = "." * level + (target or "") if level else ""
                refs.append((local, ImportRef(base, name, written)))
        for local, ref in refs:
            if platform is None:
                if not self._imports_only or local not in self.summary.imports:
                    self.summary.imports[local] = ref
                continue
            self.summary.platform_imports.append(PlatformImport(platform, local, ref))
            if platform in ("cuda", "default") or local not in self.summary.imports:
                self.summary.imports[local] = ref

    def _assign(self, targets: list[cst.BaseExpression], value: cst.BaseExpression) -> None:
        names = [t.value for t in targets if isinstance(t, cst.Name)]
        if not names:
            return
        text = string_value(value)
        if text is not None and "__version__" in names:
            self.summary.version = text
        target = dotted(value) or _factory_call(value)
        if target is not None:
            for name in names:
                self.summary.aliases[name] = target
        if isinstance(value, cst.List | cst.Tuple) and value.elements:
            items = [dotted(e.value) for e in value.elements if isinstance(e, cst.Element)]
            if len(items) == len(value.elements) and all(items):
                line = self.classes.locator.find("", names[0], self.classes.last_line)[0]
                for name in names:
                    self.summary.name_lists[name] = [i for i in items if i]
                    self.summary.name_lines[name] = line
        elif target is not None:
            line = self.classes.locator.find("", names[0], self.classes.last_line)[0]
            for name in names:
                self.summary.name_lines[name] = line
        if isinstance(value, cst.Dict):
            self._lazy_exports(value)
            literal = _registry_dict(value)
            if literal is not None:
                literal.line = self.classes.locator.find("", names[0], self.classes.last_line)[0]
                for name in names:
                    self.summary.registry_dicts[name] = literal
            classes = [dotted(e.value) for e in value.elements if isinstance(e, cst.DictElement)]
            if classes and all(classes):
                for name in names:
                    self.summary.class_maps[name] = [c for c in classes if c]

    def _lazy_exports(self, node: cst.Dict) -> None:
        """`{"Name": "pkg.module"}` maps, which a module `__getattr__` uses to import lazily."""
        pairs = {}
        for element in node.elements:
            if isinstance(element, cst.DictElement):
                key, value = string_value(element.key), string_value(element.value)
                if key is None or value is None or not _MODULE_NAME.match(value):
                    return
                pairs[key] = value
        self.summary.lazy_exports.update(pairs)

    def _factory(self, node: cst.FunctionDef) -> None:
        """Record `node` when it builds and returns a class deriving from one of its parameters
        (found by that shape, whatever the function is called)."""
        params = [p.name.value for p in node.params.params]
        if not params:
            return
        classes = {s.name.value: s for s in statements(node.body) if isinstance(s, cst.ClassDef)}
        if not classes:
            return
        for stmt in statements(node.body):
            if not isinstance(stmt, cst.SimpleStatementLine):
                continue
            for small in stmt.body:
                returned = small.value if isinstance(small, cst.Return) else None
                if not isinstance(returned, cst.Name) or returned.value not in classes:
                    continue
                built = classes[returned.value]
                mentioned = {n for arg in built.bases for n in names_in(arg.value)}
                if mentioned & set(params):
                    cls = self.classes.read(built)
                    self.summary.factories[node.name.value] = FactorySummary(params, cls)
                    return


def _factory_call(value: cst.BaseExpression) -> str | None:
    """`f(Name)` as text: maybe a class factory's product (the index decides when resolving)."""
    if not isinstance(value, cst.Call) or len(value.args) != 1 or value.args[0].keyword:
        return None
    func, arg = dotted(value.func), dotted(value.args[0].value)
    return f"{func}({arg})" if func and arg else None


def _registry_dict(node: cst.Dict) -> DictLiteral | None:
    literal = DictLiteral(line=0)
    for element in node.elements:
        if isinstance(element, cst.StarredDictElement):
            name = dotted(element.value)
            if name:
                literal.splats.append(name)
            continue
        key = string_value(element.key)
        value = element.value
        if key is None or not isinstance(value, cst.Tuple) or len(value.elements) != 2:
            continue
        module = string_value(value.elements[0].value)
        cls = string_value(value.elements[1].value)
        if module is not None and cls is not None:
            literal.entries.append(DictEntry(key, module, cls))
    return literal if literal.entries or literal.splats else None
