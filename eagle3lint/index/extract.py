"""Build a `FileSummary` from source text with libcst.

The walk is targeted rather than a generic visitor over every node: module-level statements,
class bodies, and in depth only `__init__`, `forward` and the small methods the contract is
about. That keeps a cold parse of a whole vLLM tree close to the cost of libcst's parser alone.
"""

from __future__ import annotations

import operator
import re
import sys
from collections.abc import Callable, Iterator, Sequence

import libcst as cst

from eagle3lint.index.locate import HeaderLocator, function_positions
from eagle3lint.index.model import (
    AttrSummary,
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

AUX_LAYERS_ATTR = "aux_hidden_state_layers"
TAP_HELPER = "_maybe_add_hidden_state"
_CODE = cst.Module(body=[])
_MODULE_NAME = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
_CONFIG_READ = re.compile(r"\b(?:config|hf_config|text_config)\.([A-Za-z_]\w*)")


def code(node: cst.CSTNode) -> str:
    """Source text of a node, whitespace-normalised for comparisons."""
    return " ".join(_CODE.code_for_node(node).split())


def dotted(node: cst.BaseExpression) -> str | None:
    """`a.b.c` for Name/Attribute chains, else None."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        head = dotted(node.value)
        return f"{head}.{node.attr.value}" if head else None
    return None


def string_value(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    if isinstance(node, cst.ConcatenatedString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def module_name_for(relpath: str) -> tuple[str, bool]:
    """Dotted module name of a path relative to the import root, and whether it is a package."""
    parts = relpath.removesuffix(".py").split("/")
    is_package = parts[-1] == "__init__"
    if is_package:
        parts = parts[:-1]
    return ".".join(parts), is_package


def resolve_relative(module: str, is_package: bool, level: int, target: str | None) -> str:
    parts = module.split(".") if module else []
    if not is_package:
        parts = parts[:-1]
    if level > 1:
        parts = parts[: len(parts) - (level - 1)] if level - 1 <= len(parts) else []
    if target:
        parts.append(target)
    return ".".join(parts)


def summarize(source: str, relpath: str) -> FileSummary:
    """Parse `source` (the file at `relpath` under its import root) into a summary.

    Raises `libcst.ParserSyntaxError` for code that does not parse.
    """
    tree = cst.parse_module(source)
    module, is_package = module_name_for(relpath)
    builder = _FileBuilder(source, relpath, module, is_package)
    builder.walk(tree.body, platform=None)
    if not builder.has_module_getattr:
        builder.summary.lazy_exports.clear()
    return builder.summary


class _FileBuilder:
    def __init__(self, source: str, relpath: str, module: str, is_package: bool) -> None:
        self.source = source
        self.is_package = is_package
        self.locator = HeaderLocator(source)
        self.summary = FileSummary(
            path=relpath, module=module, config_reads=sorted(set(_CONFIG_READ.findall(source)))
        )
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
                refs.append((local, ImportRef(base, name)))
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
        forward = functions.get("forward")
        if forward is not None:
            method = summary.methods["forward"]
            summary.forward = _forward(forward, method.line, method.column, summary, functions)
        return summary

    def _factory(self, node: cst.FunctionDef) -> None:
        """Record `node` when it builds and returns a class deriving from one of its parameters
        (found by that shape, whatever the function is called)."""
        params = [p.name.value for p in node.params.params]
        if not params:
            return
        classes = {s.name.value: s for s in _statements(node.body) if isinstance(s, cst.ClassDef)}
        if not classes:
            return
        for stmt in _statements(node.body):
            if not isinstance(stmt, cst.SimpleStatementLine):
                continue
            for small in stmt.body:
                returned = small.value if isinstance(small, cst.Return) else None
                if not isinstance(returned, cst.Name) or returned.value not in classes:
                    continue
                built = classes[returned.value]
                mentioned = {n for arg in built.bases for n in _names_in(arg.value)}
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
        for stmt in _statements(init.body):
            for target, value in _self_assignments(stmt):
                if target == "layers" or target.endswith(".layers"):
                    summary.assigns_layers = True
                if "." in target or target in summary.init_assigns:
                    continue
                summary.init_assigns[target] = _init_assign(value, init_line)
            helpers.extend(_self_calls(stmt))
        for helper in helpers:
            func = functions.get(helper)
            if func is None:
                continue
            for stmt in _statements(func.body):
                for target, value in _self_assignments(stmt):
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


def _is_stub(body: cst.BaseSuite) -> bool:
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
        name=node.name.value, line=line, column=column, is_stub=_is_stub(node.body)
    )
    statements = _body_without_docstring(node.body)
    if len(statements) == 1 and isinstance(statements[0], cst.SimpleStatementLine):
        small = statements[0].body[0]
        call = small.value if isinstance(small, cst.Return | cst.Expr) else None
        if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute):
            owner = dotted(call.func.value) or ""
            if call.func.attr.value == method.name and owner.startswith("self."):
                method.delegates_to = owner.removeprefix("self.")
    for stmt in _statements(node.body):
        for target, _ in _self_assignments(stmt):
            method.self_attr_assigns.append(target)
        method.calls_self.extend(_self_calls(stmt))
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
                    line=class_line, value=dotted(small.value)
                )
    elif isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name):
        summary.attrs[small.target.value] = AttrSummary(
            line=class_line,
            value=dotted(small.value) if small.value is not None else None,
            has_value=small.value is not None,
        )


def _statements(body: cst.BaseSuite) -> Iterator[cst.BaseStatement]:
    """Statements of a function body, descending into if/with/try/for blocks, not into defs."""
    for stmt in body.body if isinstance(body, cst.IndentedBlock) else ():
        yield stmt
        if isinstance(stmt, cst.If):
            yield from _statements(stmt.body)
            orelse = stmt.orelse
            while orelse is not None:
                yield from _statements(orelse.body)
                orelse = orelse.orelse if isinstance(orelse, cst.If) else None
        elif isinstance(stmt, cst.With | cst.For | cst.While):
            yield from _statements(stmt.body)
        elif isinstance(stmt, cst.Try):
            yield from _statements(stmt.body)
            for handler in stmt.handlers:
                yield from _statements(handler.body)


def _self_assignments(stmt: cst.BaseStatement) -> Iterator[tuple[str, cst.BaseExpression]]:
    if not isinstance(stmt, cst.SimpleStatementLine):
        return
    for small in stmt.body:
        targets: list[cst.BaseExpression] = []
        value: cst.BaseExpression | None = None
        if isinstance(small, cst.Assign):
            value = small.value
            for target in small.targets:
                if isinstance(target.target, cst.Tuple):
                    targets.extend(e.value for e in target.target.elements)
                else:
                    targets.append(target.target)
        elif isinstance(small, cst.AnnAssign) and small.value is not None:
            value = small.value
            targets.append(small.target)
        if value is None:
            continue
        for target in targets:
            text = dotted(target)
            if text and text.startswith("self."):
                yield text.removeprefix("self."), value


def _self_calls(stmt: cst.BaseStatement) -> list[str]:
    """`self.name(...)` calls made at statement level (expression or assigned value)."""
    if not isinstance(stmt, cst.SimpleStatementLine):
        return []
    calls = []
    for small in stmt.body:
        value = small.value if isinstance(small, cst.Expr | cst.Assign | cst.Return) else None
        if isinstance(value, cst.Call):
            name = dotted(value.func) or ""
            if name.startswith("self.") and name.count(".") == 1:
                calls.append(name.removeprefix("self."))
    return calls


def _init_assign(value: cst.BaseExpression, line: int) -> InitAssign:
    assign = InitAssign(line=line)
    if isinstance(value, cst.Call):
        assign.callee = dotted(value.func)
        for arg in value.args:
            keyword = arg.keyword.value if arg.keyword is not None else None
            if keyword == "architectures" and isinstance(arg.value, cst.List | cst.Tuple):
                assign.architectures = [
                    s for e in arg.value.elements if (s := string_value(e.value)) is not None
                ]
    return assign


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
    calls = [c for s in _statements(func.body) for c in _self_calls(s)]
    forward.delegates_to = next((c for c in calls if c in summary.init_assigns), None)
    # The functions whose statements make up the forward: itself, and the helper running the
    # layer loop when forward delegates it (`self._run_layers(...)`).
    bodies = [(func, line, column)]
    layer_loops = _layer_loops(func)
    if not layer_loops:
        helper = _loop_helper(func, functions, HELPER_DEPTH, {"forward"})
        if helper is not None:
            method = summary.methods[helper]
            bodies.append((functions[helper], method.line, method.column))
            layer_loops = _layer_loops(functions[helper])
            forward.loop_helper = helper
    if not layer_loops:
        layer_loops = [
            s for s in _statements(func.body) if isinstance(s, cst.For) and _is_layer_loop(s)
        ]
    pre_loop = [s for s in _statements(func.body) if _helper_taps(s)]
    if not layer_loops and not pre_loop:
        return forward
    positions = {id(f): function_positions(f, fline, fcol) for f, fline, fcol in bodies}
    loop_owner = bodies[-1][0] if forward.loop_helper else func
    position = positions[id(loop_owner)]
    aux_names: set[str] = set()
    for loop in layer_loops:
        summary_loop = _loop(loop, position)
        forward.loops.append(summary_loop)
        aux_names.update(_aux_targets(loop))
    first_loop = layer_loops[0] if layer_loops else None
    last_loop = layer_loops[-1] if layer_loops else None
    for stmt in _statements(loop_owner.body):
        if stmt is first_loop:
            break
        for aux_name in _helper_taps(stmt):
            tap_line, tap_col = position(stmt)
            forward.pre_loop_taps.append(TapSummary(tap_line, tap_col, "helper", "", True, True))
            aux_names.add(aux_name)
    after = False
    in_loops = {id(inner) for loop in layer_loops for inner in _statements(loop.body)}
    for stmt in _statements(loop_owner.body):
        if after and id(stmt) not in in_loops:
            for value, owner in _explicit_taps(stmt):
                tap_line, tap_col = position(stmt)
                # After the loop the layers have set residual: adding it cannot fail.
                tap = TapSummary(tap_line, tap_col, "explicit", code(value), True, False)
                forward.post_loop_taps.append(tap)
                aux_names.add(owner)
        after = after or stmt is last_loop
    for body, _, _ in bodies:
        _aux_list_facts(body, aux_names, forward)
    return forward


def _layer_loops(func: cst.FunctionDef) -> list[cst.For]:
    """Loops that call a decoder layer: `for layer in self.layers[...]: layer(...)` or
    `for i in ids: self.layers[i](...)` (not a loop that only walks the layers' attributes)."""
    return [s for s in _statements(func.body) if isinstance(s, cst.For) and _runs_layers(s)]


def _runs_layers(loop: cst.For) -> bool:
    body = " ".join(code(s) for s in _statements(loop.body) if not isinstance(s, cst.If | cst.For))
    if re.search(r"self\.layers\[[^\]]*\]\s*\(", body):
        return True
    if "self.layers" not in code(loop.iter):
        return False
    names = {n for n in re.findall(r"[A-Za-z_]\w*", code(loop.target))}
    return any(re.search(rf"(?<![\w.]){re.escape(n)}\s*\(", body) for n in names)


def _loop_helper(
    func: cst.FunctionDef, functions: dict[str, cst.FunctionDef], depth: int, seen: set[str]
) -> str | None:
    """The method, called from `func` through at most `depth` `self.<m>(...)` calls, whose body
    runs the layer loop."""
    if depth == 0:
        return None
    calls = [c for s in _statements(func.body) for c in _self_calls(s)]
    for name in dict.fromkeys(calls):
        helper = functions.get(name)
        if helper is None or name in seen:
            continue
        if _layer_loops(helper):
            return name
        deeper = _loop_helper(helper, functions, depth - 1, seen | {name})
        if deeper is not None:
            return deeper
    return None


def _aux_list_facts(func: cst.FunctionDef, aux_names: set[str], forward: ForwardSummary) -> None:
    """Whether the aux list is initialised and returned as `(hidden_states, aux)`."""
    for stmt in _statements(func.body):
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.Assign):
                for target in small.targets:
                    if isinstance(target.target, cst.Name) and target.target.value in aux_names:
                        forward.aux_list_initialised = True
            elif isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name):
                if small.target.value in aux_names and small.value is not None:
                    forward.aux_list_initialised = True
            elif isinstance(small, cst.Return) and small.value is not None:
                value = small.value
                if isinstance(value, cst.Tuple) and any(
                    aux_names & _names_in(e.value) for e in value.elements
                ):
                    forward.returns_aux_tuple = True


def _names_in(node: cst.BaseExpression) -> set[str]:
    return set(re.findall(r"[A-Za-z_]\w*", code(node)))


def _is_layer_loop(loop: cst.For) -> bool:
    iter_text = code(loop.iter)
    if "self.layers" in iter_text:
        return True
    return iter_text.startswith("range(") and "self.layers[" in code(loop.body)


def _loop(loop: cst.For, position) -> LoopSummary:
    iter_node = loop.iter
    index_var: str | None = None
    start: str | None = None
    inner = iter_node
    if isinstance(iter_node, cst.Call) and dotted(iter_node.func) == "enumerate":
        positional = [a for a in iter_node.args if a.keyword is None]
        inner = positional[0].value if positional else iter_node
        for i, arg in enumerate(iter_node.args):
            if (arg.keyword is not None and arg.keyword.value == "start") or (
                arg.keyword is None and i == 1
            ):
                start = code(arg.value)
        if isinstance(loop.target, cst.Tuple) and loop.target.elements:
            first = loop.target.elements[0].value
            index_var = first.value if isinstance(first, cst.Name) else None
    elif isinstance(iter_node, cst.Call) and dotted(iter_node.func) == "range":
        index_var = loop.target.value if isinstance(loop.target, cst.Name) else None
        args = [a for a in iter_node.args if a.keyword is None]
        start = code(args[0].value) if len(args) >= 2 else None
    inner_text = code(inner)
    slices = inner_text.startswith("islice(") or (
        "self.layers[" in inner_text and ":" in inner_text
    )
    line, column = position(loop)
    summary = LoopSummary(
        line=line,
        column=column,
        index_var=index_var,
        enumerate_start=start,
        slices_layers=slices,
    )
    layer_call_index = None
    body = list(loop.body.body) if isinstance(loop.body, cst.IndentedBlock) else []
    for i, stmt in enumerate(body):
        if layer_call_index is None and _calls_layer(stmt):
            layer_call_index = i
    for i, stmt in enumerate(body):
        before = layer_call_index is None or i < layer_call_index
        for value, _ in _explicit_taps(stmt):
            tap_line, tap_col = position(stmt)
            summary.taps.append(
                TapSummary(
                    tap_line, tap_col, "explicit", code(value), _guards_residual(value), before
                )
            )
        for _ in _helper_taps(stmt):
            tap_line, tap_col = position(stmt)
            summary.taps.append(TapSummary(tap_line, tap_col, "helper", "", True, before))
    return summary


def _calls_layer(stmt: cst.BaseStatement) -> bool:
    text = code(stmt) if isinstance(stmt, cst.SimpleStatementLine) else ""
    return bool(re.search(r"\blayer\s*\(|self\.layers\[[^\]]*\]\s*\(", text))


def _explicit_taps(stmt: cst.BaseStatement) -> list[tuple[cst.BaseExpression, str]]:
    """`if i in self.aux_hidden_state_layers [and ...]: x.append(value)` → [(value, "x")].

    A value appended through a local temporary (`t = hidden_states + residual` earlier in the
    same block, then `x.append(t)`) is the expression the temporary was first bound to."""
    if not isinstance(stmt, cst.If) or not _tests_aux_membership(stmt.test):
        return []
    taps = []
    bound: dict[str, cst.BaseExpression] = {}
    for inner in _statements(stmt.body):
        if not isinstance(inner, cst.SimpleStatementLine):
            continue
        for small in inner.body:
            if isinstance(small, cst.Assign) and len(small.targets) == 1:
                target = small.targets[0].target
                if isinstance(target, cst.Name):
                    bound.setdefault(target.value, small.value)
            if (
                isinstance(small, cst.Expr)
                and isinstance(small.value, cst.Call)
                and isinstance(small.value.func, cst.Attribute)
                and small.value.func.attr.value == "append"
                and small.value.args
            ):
                owner = dotted(small.value.func.value) or ""
                value = small.value.args[0].value
                if isinstance(value, cst.Name) and value.value in bound:
                    value = bound[value.value]
                taps.append((value, owner))
    return taps


def _tests_aux_membership(test: cst.BaseExpression) -> bool:
    """`x in self.aux_hidden_state_layers`, alone or as the first operand of an `and`."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _tests_aux_membership(test.left)
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    comparison = test.comparisons[0]
    return isinstance(comparison.operator, cst.In) and AUX_LAYERS_ATTR in code(
        comparison.comparator
    )


def _helper_taps(stmt: cst.BaseStatement) -> list[str]:
    """`self._maybe_add_hidden_state(aux, idx, h, r)` calls (bare or assigned): for each, the
    name of the list it collects into ("" when that is not a plain name)."""
    if not isinstance(stmt, cst.SimpleStatementLine):
        return []
    taps = []
    for small in stmt.body:
        value = small.value if isinstance(small, cst.Expr | cst.Assign) else None
        if (
            isinstance(value, cst.Call)
            and dotted(value.func) == f"self.{TAP_HELPER}"
            and len(value.args) >= 2
        ):
            first = value.args[0].value
            name = first.value if isinstance(first, cst.Name) else None
            if name is None and isinstance(small, cst.Assign):
                target = small.targets[0].target
                name = target.value if isinstance(target, cst.Name) else None
            taps.append(name or "")
    return taps


def _aux_targets(loop: cst.For) -> set[str]:
    """Names of the lists a loop's taps append to."""
    names = set()
    for stmt in _statements(loop.body):
        names.update(owner for _, owner in _explicit_taps(stmt) if owner)
        names.update(name for name in _helper_taps(stmt) if name)
    return names


def _guards_residual(value: cst.BaseExpression) -> bool:
    """True unless the value adds a residual that is None on the first rank's first layer."""
    text = code(value)
    if "residual" not in text:
        return True
    return isinstance(value, cst.IfExp) or "is not None" in text or "is None" in text
