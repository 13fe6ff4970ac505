"""Build a `FileSummary` from source text with libcst.

The walk is targeted rather than a generic visitor over every node: module-level statements,
class bodies, and in depth only `__init__`, `forward` and the small methods the contract is
about. That keeps a cold parse of a whole vLLM tree close to the cost of libcst's parser alone.
"""

from __future__ import annotations

import ast
import operator
import re
import sys
from collections.abc import Callable, Collection, Iterable, Sequence

import libcst as cst

from eagle3lint.engines.vllm.names import AUX_LAYERS_ATTR
from eagle3lint.index.locate import HeaderLocator, function_positions
from eagle3lint.index.model import (
    AttrSummary,
    BodySpan,
    ClassSummary,
    DictEntry,
    DictLiteral,
    FactorySummary,
    FileSummary,
    ForwardSummary,
    ImportRef,
    InitAssign,
    LoopSummary,
    MethodSummary,
    PlatformImport,
    TapSummary,
)
from eagle3lint.index.modules import module_name_for, resolve_relative
from eagle3lint.index.skim import bodies_of, skim
from eagle3lint.shapes.loop import INDEXED_LAYER_CALL, LayerLoop, layer_loops
from eagle3lint.shapes.residual import classify
from eagle3lint.shapes.submodel import built_model
from eagle3lint.shapes.syntax import (
    assigned_names,
    code,
    dotted,
    names_in,
    returns_name,
    self_assignments,
    self_calls,
    statements,
    string_value,
)
from eagle3lint.shapes.taps import Tap, dict_captures, taps_in
from eagle3lint.sources.files import source_lines

_MODULE_NAME = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
_CONFIG_READ = re.compile(r"\b(?:config|hf_config|text_config)\.([A-Za-z_]\w*)")
_HF_CONFIG_TYPE = re.compile(r"\bget_hf_config\(\s*\(?\s*([A-Za-z_]\w*)")
_NAME = re.compile(r"[A-Za-z_]\w*")
CONFIG = "config"
_DOTTED = re.compile(r"(?<![\w.])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)")
_LAYER_CALL = re.compile(r"\blayer\s*\(")


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
            builder._last_line = body.header
            builder.summary.classes[body.name] = builder._class(statement)
    return builder.summary


class _FileBuilder:
    def __init__(self, source: str, relpath: str, module: str, is_package: bool) -> None:
        self.source = source
        self.is_package = is_package
        self.locator = HeaderLocator(source)
        self.summary = FileSummary(path=relpath, module=module)
        self._last_line = 1
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
                summary = self._class(stmt)
                self.summary.classes[summary.name] = summary
            elif isinstance(stmt, cst.FunctionDef):
                self.has_module_getattr |= stmt.name.value == "__getattr__"
                self._factory(stmt)
            elif isinstance(stmt, cst.If):
                self._if(stmt)
            elif isinstance(stmt, cst.Try):
                self.walk(stmt.body.body, platform)
                for handler in stmt.handlers:
                    self.walk(handler.body.body, platform)
            elif isinstance(stmt, cst.With):
                self.walk(stmt.body.body, platform)

    def _if(self, stmt: cst.If) -> None:
        branches: list[tuple[cst.BaseExpression | None, Sequence[cst.CSTNode]]] = []
        node: cst.If | cst.Else | None = stmt
        while isinstance(node, cst.If):
            branches.append((node.test, node.body.body))
            node = node.orelse
        if isinstance(node, cst.Else):
            branches.append((None, node.body.body))
        if all(test is None or _platform_test(test) for test, _ in branches):
            self._platform_chain(branches)
            return
        taken = _branch_taken(branches, CUDA)
        if taken is _UNDECIDED:
            for _, body in branches:  # decided at run time by something else: keep all
                self.walk(body, None)
            return
        platforms = sorted({p for test, _ in branches if test for p in _platforms_in(test)})
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
            other = _branch_taken(branches, platform)
            if other not in (taken, None, _UNDECIDED):
                self.walk(branches[other][1], platform)
        if taken is not None:
            self.walk(branches[taken][1], CUDA)

    def _platform_chain(
        self, branches: list[tuple[cst.BaseExpression | None, Sequence[cst.CSTNode]]]
    ) -> None:
        """`if current_platform.is_x(): ... elif ...: ... else: ...`: every branch is a variant;
        the `else` is CUDA's unless CUDA has its own branch (then it is the default)."""
        platforms = [_platform_test(test) if test is not None else None for test, _ in branches]
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
        if isinstance(value, cst.Dict):
            self._lazy_exports(value)
            literal = _registry_dict(value)
            if literal is not None:
                literal.line = self.locator.find("", names[0], self._last_line)[0]
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

    # -- classes ------------------------------------------------------------------------
    def _class(self, node: cst.ClassDef) -> ClassSummary:
        name = node.name.value
        line, column = self.locator.find("class", name, self._last_line)
        self._last_line = line
        bases = [dotted(arg.value) or code(arg.value) for arg in node.bases if arg.keyword is None]
        summary = ClassSummary(
            name=name,
            line=line,
            column=column,
            bases=bases,
            is_protocol=any(b == "Protocol" or b.endswith(".Protocol") for b in bases)
            or any(code(arg.value).startswith("Protocol[") for arg in node.bases),
        )
        functions: dict[str, cst.FunctionDef] = {}
        body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
        for stmt in body:
            if isinstance(stmt, cst.FunctionDef):
                fname = stmt.name.value
                fline, fcol = self.locator.find("def", fname, self._last_line)
                self._last_line = fline
                functions[fname] = stmt
                summary.methods[fname] = _method(stmt, fline, fcol)
            elif isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    _class_attr(small, summary, line)
        self._init_assigns(summary, functions)
        if "__init__" in functions:
            summary.config_types = _config_types(functions["__init__"])
        forward = functions.get("forward")
        if forward is not None:
            method = summary.methods["forward"]
            summary.forward = _forward(forward, method.line, method.column, summary, functions)
            summary.layer_convention = classify(forward)
        return summary

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
                    cls = self._class(built)
                    self.summary.factories[node.name.value] = FactorySummary(params, cls)
                    return

    def _init_assigns(self, summary: ClassSummary, functions: dict[str, cst.FunctionDef]) -> None:
        init = functions.get("__init__")
        if init is None:
            return
        # Assignments are located at the `def __init__` line: exact positions would need
        # libcst's position pass over the whole method, which costs more than the parse itself.
        init_line = summary.methods["__init__"].line
        helpers: list[str] = []
        for stmt in statements(init.body):
            summary.super_init_classes.update(_super_init_classes(stmt))
            for target, value in self_assignments(stmt):
                if target == "layers" or target.endswith(".layers"):
                    summary.assigns_layers = True
                    if target == "layers":
                        _layer_candidates(init, value, summary)
                if "." in target or target in summary.init_assigns:
                    continue
                summary.init_assigns[target] = _init_assign(value, init_line)
            helpers.extend(self_calls(stmt))
        for helper in helpers:
            func = functions.get(helper)
            if func is None:
                continue
            for stmt in statements(func.body):
                for target, value in self_assignments(stmt):
                    if target == "layers":
                        summary.assigns_layers = True
                    if target not in summary.init_assigns and "." not in target:
                        assign = _init_assign(value, summary.methods[helper].line)
                        summary.init_assigns[target] = assign


# -- helpers on nodes ---------------------------------------------------------------------


CUDA = "cuda"
"""The platform whose code path a verdict is about."""

_UNDECIDED = -1
"""`_branch_taken` for a chain whose outcome depends on something only known at run time."""


def _evaluate(test: cst.BaseExpression, platform: str) -> bool | None:
    """The value of an import-time condition on `platform` at run time: `TYPE_CHECKING` is
    False, `current_platform.is_x()` is whether x is `platform`, `sys.version_info` compares
    as this interpreter's; None when not decidable."""
    if isinstance(test, cst.Name | cst.Attribute) and dotted(test) in _TYPE_CHECKING:
        return False
    version = _version_test(test)
    if version is not None:
        return version
    tested = _platform_test(test)
    if tested is not None:
        return tested == platform or (tested == "cuda_alike" and platform in (CUDA, "rocm"))
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = _evaluate(test.expression, platform)
        return None if inner is None else not inner
    if isinstance(test, cst.BooleanOperation):
        left = _evaluate(test.left, platform)
        right = _evaluate(test.right, platform)
        if isinstance(test.operator, cst.Or):
            if left is True or right is True:
                return True
            return None if left is None or right is None else False
        if left is False or right is False:
            return False
        return None if left is None or right is None else True
    return None


_TYPE_CHECKING = frozenset({"TYPE_CHECKING", "typing.TYPE_CHECKING"})


def _branch_taken(
    branches: list[tuple[cst.BaseExpression | None, Sequence[cst.CSTNode]]], platform: str
) -> int | None:
    """Index of the branch that runs on `platform`; None if none does, `_UNDECIDED` if unknown."""
    for i, (test, _) in enumerate(branches):
        if test is None:
            return i
        value = _evaluate(test, platform)
        if value is None:
            return _UNDECIDED
        if value:
            return i
    return None


def _platforms_in(test: cst.BaseExpression) -> set[str]:
    """Platforms a condition tests for (`is_rocm()` → rocm)."""
    found = _platform_test(test)
    if found is not None:
        return {found}
    if isinstance(test, cst.UnaryOperation):
        return _platforms_in(test.expression)
    if isinstance(test, cst.BooleanOperation):
        return _platforms_in(test.left) | _platforms_in(test.right)
    return set()


_VERSION_OPS: dict[type[cst.BaseCompOp], Callable[[tuple[int, ...], tuple[int, ...]], bool]] = {
    cst.GreaterThanEqual: operator.ge,
    cst.GreaterThan: operator.gt,
    cst.LessThan: operator.lt,
    cst.LessThanEqual: operator.le,
    cst.Equal: operator.eq,
    cst.NotEqual: operator.ne,
}


def _version_test(test: cst.BaseExpression) -> bool | None:
    """`sys.version_info >= (3, 11)` (or `[:2]`) for the interpreter eagle3lint runs on: vLLM
    runs on the user's Python, which is the one beside it in the usual install. The cache key
    carries the interpreter's version for this reason."""
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return None
    left = test.left
    if isinstance(left, cst.Subscript):
        left = left.value
    target = test.comparisons[0]
    compare = _VERSION_OPS.get(type(target.operator))
    right = target.comparator
    if compare is None or dotted(left) != "sys.version_info" or not isinstance(right, cst.Tuple):
        return None
    wanted = []
    for element in right.elements:
        if not isinstance(element.value, cst.Integer):
            return None
        wanted.append(int(element.value.value))
    return compare(tuple(sys.version_info[: len(wanted)]), tuple(wanted))


def _platform_test(test: cst.BaseExpression) -> str | None:
    """`current_platform.is_rocm()` → "rocm"; None for any other condition."""
    if isinstance(test, cst.Call) and not test.args and isinstance(test.func, cst.Attribute):
        attr = test.func.attr.value
        owner = dotted(test.func.value) or ""
        if attr.startswith("is_") and owner.split(".")[-1] == "current_platform":
            return attr.removeprefix("is_")
    return None


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


def _body_without_docstring(body: cst.BaseSuite) -> list[cst.BaseStatement]:
    statements = list(body.body) if isinstance(body, cst.IndentedBlock) else []
    if isinstance(body, cst.SimpleStatementSuite):
        return [cst.SimpleStatementLine(body=body.body)]
    if statements and isinstance(statements[0], cst.SimpleStatementLine):
        first = statements[0].body
        if len(first) == 1 and isinstance(first[0], cst.Expr) and string_value(first[0].value):
            statements = statements[1:]
    return statements


def is_stub_body(body: cst.BaseSuite) -> bool:
    """Whether a body does nothing: `...`, `pass`, `raise NotImplementedError`, a docstring."""
    for stmt in _body_without_docstring(body):
        if not isinstance(stmt, cst.SimpleStatementLine):
            return False
        for small in stmt.body:
            if isinstance(small, cst.Pass):
                continue
            if isinstance(small, cst.Expr) and isinstance(small.value, cst.Ellipsis):
                continue
            if isinstance(small, cst.Raise) and small.exc is not None:
                raised = small.exc.func if isinstance(small.exc, cst.Call) else small.exc
                if dotted(raised) == "NotImplementedError":
                    continue
            return False
    return True


def _method(node: cst.FunctionDef, line: int, column: int) -> MethodSummary:
    method = MethodSummary(
        name=node.name.value, line=line, column=column, is_stub=is_stub_body(node.body)
    )
    own = _body_without_docstring(node.body)
    if len(own) == 1 and isinstance(own[0], cst.SimpleStatementLine):
        small = own[0].body[0]
        call = small.value if isinstance(small, cst.Return | cst.Expr) else None
        if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute):
            owner = dotted(call.func.value) or ""
            if call.func.attr.value == method.name and owner.startswith("self."):
                method.delegates_to = owner.removeprefix("self.")
    for stmt in statements(node.body):
        for target, _ in self_assignments(stmt):
            method.self_attr_assigns.append(target)
        method.calls_self.extend(self_calls(stmt))
        if method.returns_call is None and isinstance(stmt, cst.SimpleStatementLine):
            small = stmt.body[0]
            if isinstance(small, cst.Return) and isinstance(small.value, cst.Call):
                method.returns_call = dotted(small.value.func)
    return method


def _class_attr(small: cst.BaseSmallStatement, summary: ClassSummary, class_line: int) -> None:
    if isinstance(small, cst.Assign):
        for target in small.targets:
            if isinstance(target.target, cst.Name):
                summary.attrs[target.target.value] = AttrSummary(
                    line=class_line, value=dotted(small.value), keys=_dict_keys(small.value)
                )
    elif isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name):
        summary.attrs[small.target.value] = AttrSummary(
            line=class_line,
            value=dotted(small.value) if small.value is not None else None,
            has_value=small.value is not None,
            keys=_dict_keys(small.value) if small.value is not None else None,
        )


def _config_types(init: cst.FunctionDef) -> list[str]:
    """What `ClassSummary.config_types` holds, read from `__init__`."""
    stored: list[str] = []
    stored_locals: list[str] = []
    annotated: dict[str, list[str]] = {}
    params = [*init.params.params, *init.params.kwonly_params]
    for param in params:
        if param.name.value == CONFIG and param.annotation is not None:
            annotated[CONFIG] = _names(param.annotation.annotation)
    for stmt in statements(init.body):
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.AnnAssign):
                target = dotted(small.target)
                if target == f"self.{CONFIG}":
                    stored += _names(small.annotation.annotation)
                elif target and "." not in target:
                    annotated.setdefault(target, _names(small.annotation.annotation))
            elif (
                isinstance(small, cst.Assign)
                and isinstance(small.value, cst.Name)
                and any(dotted(t.target) == f"self.{CONFIG}" for t in small.targets)
            ):
                stored_locals.append(small.value.value)
    stored += [n for local in stored_locals for n in annotated.get(local, [])]
    return list(dict.fromkeys(stored or annotated.get(CONFIG, [])))


def _names(annotation: cst.BaseExpression) -> list[str]:
    """The names an annotation mentions (`X | None` → X), string annotations included."""
    text = string_value(annotation) or code(annotation)
    return [n for n in _NAME.findall(text) if n != "None"]


def _dict_keys(value: cst.BaseExpression) -> list[str] | None:
    """The keys of a dict literal whose keys are all plain strings; None for anything else."""
    if not isinstance(value, cst.Dict):
        return None
    keys = []
    for element in value.elements:
        key = string_value(element.key) if isinstance(element, cst.DictElement) else None
        if key is None:
            return None
        keys.append(key)
    return keys


def _layer_candidates(init: cst.FunctionDef, value: cst.BaseExpression, cls: ClassSummary) -> None:
    """Record what may name the decoder layer class in the value assigned to `self.layers`:
    capitalised names in it (`lambda prefix: LlamaDecoderLayer(...)`, a module-level
    `{type: class}` map), also inside a local function it passes (`get_layer`), and the
    defaults of `__init__` parameters it calls (`layer_type: type = LlamaDecoderLayer`)."""
    texts = [code(value)]
    mentioned = names_in(value)
    for stmt in init.body.body if isinstance(init.body, cst.IndentedBlock) else ():
        if isinstance(stmt, cst.FunctionDef) and stmt.name.value in mentioned:
            texts.append(code(stmt.body))
            mentioned |= names_in(stmt.body)
    defaults = {
        p.name.value: dotted(p.default)
        for p in (*init.params.params, *init.params.kwonly_params)
        if p.default is not None and dotted(p.default)
    }
    cls.layer_params = {p: d for p, d in defaults.items() if p in mentioned and d}
    found = {n for text in texts for n in _DOTTED.findall(text)}
    cls.layer_classes = sorted(n for n in found if n.rpartition(".")[2][:1].isupper())


def _super_init_classes(stmt: cst.BaseStatement) -> dict[str, str]:
    """`super().__init__(..., layer_type=Glm4DecoderLayer)`: keyword → class as written."""
    if not isinstance(stmt, cst.SimpleStatementLine):
        return {}
    found = {}
    for small in stmt.body:
        call = small.value if isinstance(small, cst.Expr) else None
        if (
            isinstance(call, cst.Call)
            and isinstance(call.func, cst.Attribute)
            and call.func.attr.value == "__init__"
            and isinstance(call.func.value, cst.Call)
            and dotted(call.func.value.func) == "super"
        ):
            for arg in call.args:
                name = dotted(arg.value)
                if arg.keyword is not None and name and name.rpartition(".")[2][:1].isupper():
                    found[arg.keyword.value] = name
    return found


def _init_assign(value: cst.BaseExpression, line: int) -> InitAssign:
    built = built_model(value)
    return InitAssign(line=line, callee=built.callee, architectures=list(built.architectures))


# -- forward ------------------------------------------------------------------------------


HELPER_DEPTH = 2
"""How many `self.<method>(...)` calls deep a forward's layer loop is looked for."""


def _forward(
    func: cst.FunctionDef,
    line: int,
    column: int,
    summary: ClassSummary,
    functions: dict[str, cst.FunctionDef],
) -> ForwardSummary:
    forward = ForwardSummary(line=line, column=column)
    body = list(statements(func.body))
    calls = [c for s in body for c in self_calls(s)]
    forward.delegates_to = next((c for c in calls if c in summary.init_assigns), None)
    top = func.body.body if isinstance(func.body, cst.IndentedBlock) else ()
    forward.ends_with_return_name = bool(top) and returns_name(top[-1])
    loops = layer_loops(func.body, body)
    owner, owner_line, owner_column, owner_body = func, line, column, body
    running = [(node, shape) for node, shape in loops if shape.runs_layers]
    if not running:
        helper = _loop_helper(func, functions, HELPER_DEPTH, {"forward"})
        if helper is not None:
            owner = functions[helper]
            method = summary.methods[helper]
            owner_line, owner_column = method.line, method.column
            owner_body = list(statements(owner.body))
            running = [(n, s) for n, s in layer_loops(owner.body, owner_body) if s.runs_layers]
            forward.loop_helper = helper
    if not running:
        running = loops
    if not running and not any(t.style == "helper" for s in body for t in taps_in(s)):
        return forward
    position = function_positions(owner, owner_line, owner_column)
    bound = _surely_bound(owner)
    aux_names: set[str] = set()
    in_loops = {id(inner) for node, _ in running for inner in statements(node.body)}
    first = running[0][0] if running else None
    last = running[-1][0] if running else None
    shapes = {id(node): shape for node, shape in running}
    phase = "before"
    for stmt in owner_body:
        if id(stmt) in shapes:
            assert isinstance(stmt, cst.For)
            forward.loops.append(_loop(stmt, shapes[id(stmt)], position, bound(stmt)))
            shape = shapes[id(stmt)]
            aux_names.update(t.collects_into for t in _loop_taps(stmt, shape) if t.collects_into)
            phase = "after" if stmt is last else "between"
            continue
        if phase == "before" and stmt is not first:
            for tap in taps_in(stmt):
                if tap.style == "helper":
                    tap_line, tap_col = position(stmt)
                    forward.pre_loop_taps.append(
                        _tap_summary(tap, tap_line, tap_col, True, bound(stmt), guarded=True)
                    )
                    aux_names.add(tap.collects_into)
        elif phase == "after" and id(stmt) not in in_loops:
            for tap in taps_in(stmt):
                if tap.style == "explicit":
                    tap_line, tap_col = position(stmt)
                    # After the loop the layers have set residual: adding it cannot fail.
                    forward.post_loop_taps.append(
                        _tap_summary(tap, tap_line, tap_col, False, None, guarded=True)
                    )
                    aux_names.add(tap.collects_into)
    _aux_list_facts(owner_body if owner is func else [*body, *owner_body], aux_names, forward)
    return forward


def _loop_helper(
    func: cst.FunctionDef, functions: dict[str, cst.FunctionDef], depth: int, seen: set[str]
) -> str | None:
    """The method, called from `func` through at most `depth` `self.<m>(...)` calls, whose body
    runs the layer loop."""
    if depth == 0:
        return None
    calls = [c for s in statements(func.body) for c in self_calls(s)]
    for name in dict.fromkeys(calls):
        helper = functions.get(name)
        if helper is None or name in seen:
            continue
        if any(shape.runs_layers for _, shape in layer_loops(helper.body)):
            return name
        deeper = _loop_helper(helper, functions, depth - 1, seen | {name})
        if deeper is not None:
            return deeper
    return None


def _surely_bound(func: cst.FunctionDef) -> Callable[[cst.BaseStatement], set[str] | None]:
    """For a top-level statement of `func`, the names bound on every path reaching it: the
    parameters, and what earlier top-level statements bind (an `if` only when all its
    branches, `else` included, bind the name). None for a nested statement (not worked out)."""
    params = func.params
    names = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}
    for star in (params.star_arg, params.star_kwarg):
        if isinstance(star, cst.Param):
            names.add(star.name.value)
    before: dict[int, set[str]] = {}
    for stmt in func.body.body if isinstance(func.body, cst.IndentedBlock) else ():
        before[id(stmt)] = set(names)
        names |= _binds_on_every_path(stmt)
    return lambda stmt: before.get(id(stmt))


def _binds_on_every_path(stmt: cst.BaseStatement) -> set[str]:
    if isinstance(stmt, cst.SimpleStatementLine):
        return assigned_names(stmt)
    if isinstance(stmt, cst.If):
        branches: list[cst.BaseSuite] = [stmt.body]
        orelse: cst.If | cst.Else | None = stmt.orelse
        while isinstance(orelse, cst.If):
            branches.append(orelse.body)
            orelse = orelse.orelse
        if orelse is None:
            return set()
        branches.append(orelse.body)
        bound = [_block_binds(b) for b in branches]
        return set.intersection(*bound)
    if isinstance(stmt, cst.With):
        return _block_binds(stmt.body)
    return set()


def _block_binds(block: cst.BaseSuite) -> set[str]:
    names: set[str] = set()
    for stmt in block.body if isinstance(block, cst.IndentedBlock) else ():
        names |= _binds_on_every_path(stmt)
    return names


def _loop_taps(loop: cst.For, shape: LayerLoop) -> list[Tap]:
    found = [tap for stmt in statements(loop.body) for tap in taps_in(stmt)]
    for stmt in loop.body.body if _captures_by_id(loop, shape) else ():
        found += dict_captures(stmt, shape.index or "")
    return found


def _captures_by_id(loop: cst.For, shape: LayerLoop) -> bool:
    """A loop that hands the aux layer test on and may store results by layer id."""
    return shape.index is not None and AUX_LAYERS_ATTR in code(loop.body)


def _loop(
    loop: cst.For, shape: LayerLoop, position: Callable, bound: set[str] | None
) -> LoopSummary:
    line, column = position(loop)
    summary = LoopSummary(line=line, column=column, shape=shape)
    body = list(loop.body.body) if isinstance(loop.body, cst.IndentedBlock) else []
    call_at = shape.call.position if shape.call is not None else None
    if call_at is None:
        call_at = next((i for i, stmt in enumerate(body) if _calls_layer(stmt)), None)
    in_body = None if bound is None else bound | {n for n in (shape.index, shape.layer) if n}
    by_id = _captures_by_id(loop, shape)
    for i, stmt in enumerate(body):
        before = call_at is None or i < call_at
        found = taps_in(stmt) + (dict_captures(stmt, shape.index or "") if by_id else [])
        for tap in found:
            tap_line, tap_col = position(stmt)
            summary.taps.append(_tap_summary(tap, tap_line, tap_col, before, in_body))
        if in_body is not None:
            in_body |= _binds_on_every_path(stmt)
    return summary


def _tap_summary(
    tap: Tap, line: int, column: int, before: bool, bound: set[str] | None, *, guarded: bool = False
) -> TapSummary:
    """`bound`: the names bound on every path to the tap, None when not worked out."""
    return TapSummary(
        line,
        column,
        tap.style,
        tap.value if tap.style != "helper" else "",
        guarded or tap.residual_guarded,
        before,
        adds_residual=tap.adds_residual,
        unbound=[] if bound is None else [n for n in tap.reads if n not in bound],
    )


def _calls_layer(stmt: cst.BaseStatement) -> bool:
    text = code(stmt) if isinstance(stmt, cst.SimpleStatementLine) else ""
    return bool(_LAYER_CALL.search(text) or INDEXED_LAYER_CALL.search(text))


def _aux_list_facts(
    body: list[cst.BaseStatement], aux_names: set[str], forward: ForwardSummary
) -> None:
    """Whether the aux list is initialised and returned as `(hidden_states, aux)`."""
    aux_names = set(aux_names)
    for stmt in body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.Assign):
                derived = aux_names & names_in(small.value)
                for target in small.targets:
                    if isinstance(target.target, cst.Name) and target.target.value in aux_names:
                        forward.aux_list_initialised = True
                    elif isinstance(target.target, cst.Name) and derived:
                        # Built from what the taps collected (`aux = [by_id[i] for i in ...]`).
                        aux_names.add(target.target.value)
            elif isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name):
                if small.target.value in aux_names and small.value is not None:
                    forward.aux_list_initialised = True
            elif isinstance(small, cst.Return) and small.value is not None:
                value = small.value
                if isinstance(value, cst.Tuple) and any(
                    aux_names & names_in(e.value) for e in value.elements
                ):
                    forward.returns_aux_tuple = True
