"""What `ClassSummary` holds, read from a class definition: its bases, methods (with what each
does to `self`), class attributes, what `__init__` assigns and builds, and its forward
(`extract_forward`)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import libcst as cst

from eagle3lint.index.extract_forward import forward_summary
from eagle3lint.index.locate import HeaderLocator
from eagle3lint.index.model import (
    UNKNOWN_BUILDER,
    AttrSummary,
    ClassSummary,
    InitAssign,
    MethodSummary,
    ModuleListSummary,
)
from eagle3lint.shapes.layer_names import may_name_layers_past_count, renamed_layer_indices
from eagle3lint.shapes.residual import classify
from eagle3lint.shapes.submodel import built_model
from eagle3lint.shapes.syntax import (
    code,
    dotted,
    names_in,
    self_assignments,
    self_calls,
    statements,
    string_value,
    super_call,
)

_NAME = re.compile(r"[A-Za-z_]\w*")
CONFIG = "config"
LANGUAGE_MODEL_MARK = "_mark_language_model"
"""The context manager under which a multimodal model builds its language model (0.17 on)."""
_DOTTED = re.compile(r"(?<![\w.])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)")


class ClassReader:
    """Summaries of the class definitions of one file, their headers located in document order
    (`index.locate`)."""

    def __init__(self, source: str) -> None:
        self.locator = HeaderLocator(source)
        self.last_line = 1
        """The line of the last header located: the next is searched for from there."""
        self.may_rename_layers = may_name_layers_past_count(source)

    def read(self, node: cst.ClassDef) -> ClassSummary:
        """The summary of the class `node` defines."""
        name = node.name.value
        line, column = self.locator.find("class", name, self.last_line)
        self.last_line = line
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
                fline, fcol = self.locator.find("def", fname, self.last_line)
                self.last_line = fline
                functions[fname] = stmt
                summary.methods[fname] = _method(stmt, fline, fcol)
            elif isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    _class_attr(small, summary, line)
        self._init_assigns(summary, functions)
        if "__init__" in functions:
            summary.init_consumes = _consumed_params(functions["__init__"], summary)
        summary.assigned_attrs = sorted(
            {
                target
                for function in functions.values()
                for stmt in statements(function.body)
                for target, _ in self_assignments(stmt)
                if "." not in target
            }
        )
        if "__init__" in functions:
            summary.config_types = _config_types(functions["__init__"])
            if self.may_rename_layers:
                summary.renamed_layers = renamed_layer_indices(functions["__init__"])
        forward = functions.get("forward")
        if forward is not None:
            method = summary.methods["forward"]
            summary.forward = forward_summary(
                forward, method.line, method.column, summary, functions
            )
            summary.layer_convention = classify(forward)
        return summary

    def _init_assigns(self, summary: ClassSummary, functions: dict[str, cst.FunctionDef]) -> None:
        init = functions.get("__init__")
        if init is None:
            return
        # Assignments are located at the `def __init__` line: exact positions would need
        # libcst's position pass over the whole method, which costs more than the parse itself.
        init_line = summary.methods["__init__"].line
        classes = _class_defaults(init)
        helpers: list[str] = []
        for stmt in statements(init.body):
            if isinstance(stmt, cst.With) and any(
                isinstance(item.item, cst.Call)
                and dotted(item.item.func) == f"self.{LANGUAGE_MODEL_MARK}"
                for item in stmt.items
            ):
                summary.language_model_marks += [
                    target
                    for inner in statements(stmt.body)
                    for target, _ in self_assignments(inner)
                    if "." not in target and target not in summary.language_model_marks
                ]
            summary.super_init_classes.update(_super_init_classes(stmt))
            for target, value in self_assignments(stmt):
                listed = _module_list(init, value)
                if listed is not None and "." not in target:
                    summary.module_lists[target] = listed
                if target == "layers" or target.endswith(".layers"):
                    summary.assigns_layers = True
                    if target == "layers":
                        _layer_candidates(init, value, summary)
                if "." in target:
                    continue
                assign = _init_assign(value, init_line)
                if assign.callee in classes:
                    assign.param, assign.callee = assign.callee, classes[assign.callee]
                earlier = summary.init_assigns.get(target)
                # `self.language_model = None` then, under a condition, the model built: the
                # attribute holds what is built (SGLang's Kimi-K2.5 wrapper).
                if earlier is None or (earlier.callee is None and assign.callee is not None):
                    summary.init_assigns[target] = assign
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
    params = node.params
    positional = [*params.posonly_params, *params.params][1:]  # after `self`
    method.required_args = sum(p.default is None for p in [*positional, *params.kwonly_params])
    for decorator in node.decorators:
        applied = decorator.decorator
        name = dotted(applied.func if isinstance(applied, cst.Call) else applied)
        if name:
            method.decorators.append(name)
    # Asserts before the call (Llama 4's `assert hasattr(self.language_model, ...)`) do not
    # change what the method does when it runs.
    own = [
        stmt
        for stmt in _body_without_docstring(node.body)
        if not (
            isinstance(stmt, cst.SimpleStatementLine)
            and all(isinstance(small, cst.Assert) for small in stmt.body)
        )
    ]
    if len(own) == 1 and isinstance(own[0], cst.SimpleStatementLine):
        small = own[0].body[0]
        call = small.value if isinstance(small, cst.Return | cst.Expr) else None
        if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute):
            owner = dotted(call.func.value) or ""
            if call.func.attr.value == method.name and owner.startswith("self."):
                method.delegates_to = owner.removeprefix("self.")
    for stmt in own:
        small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) else None
        if isinstance(small, cst.Raise) and small.exc is not None and method.raises is None:
            raised = small.exc.func if isinstance(small.exc, cst.Call) else small.exc
            method.raises = dotted(raised)
    last = own[-1].body[0] if own and isinstance(own[-1], cst.SimpleStatementLine) else None
    if isinstance(last, cst.Return) and isinstance(last.value, cst.Tuple):
        method.returns_tuple = code(last.value)
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
    cls.layer_params = {p: d for p, d in _param_defaults(init).items() if p in mentioned}
    found = {n for text in texts for n in _DOTTED.findall(text)}
    cls.layer_classes = sorted(n for n in found if n.rpartition(".")[2][:1].isupper())


def _module_list(init: cst.FunctionDef, value: cst.BaseExpression) -> ModuleListSummary | None:
    """What builds the elements of `nn.ModuleList(...)`: a comprehension or a list literal of
    calls, or a local list a `for` loop of `__init__` appends them to (Bamba's
    `decoder_layers`); None when `value` is no such call."""
    if not (isinstance(value, cst.Call) and (dotted(value.func) or "").endswith("ModuleList")):
        return None
    found = ModuleListSummary()
    built = value.args[0].value if value.args else None
    if isinstance(built, cst.ListComp):
        found.count = _range_end(built.for_in.iter)
        found.classes = sorted(set(_builders(built.elt, {})))
    elif isinstance(built, cst.List):
        found.classes = sorted({c for e in built.elements for c in _builders(e.value, {})})
    elif isinstance(built, cst.Name):
        for loop in _loops(init.body):
            appended = _appended(loop.body, built.value)
            if appended:
                local = _local_values(loop.body)
                found.count = _range_end(loop.iter)
                found.classes = sorted({c for e in appended for c in _builders(e, dict(local))})
                break
    else:
        found.classes = [UNKNOWN_BUILDER]
    return found


def _builders(node: cst.BaseExpression, local: dict[str, cst.BaseExpression]) -> Iterator[str]:
    """The classes that may build one element: `A(...)`, either branch of `A(...) if c else
    B(...)`, `MAP[]` for `MAP[key](...)`, through a name the loop body assigns (`layer_class =
    MAP[key]`)."""
    if isinstance(node, cst.IfExp):
        yield from _builders(node.body, local)
        yield from _builders(node.orelse, local)
        return
    func = node.func if isinstance(node, cst.Call) else node
    name = dotted(func)
    if isinstance(func, cst.Subscript) and (owner := dotted(func.value)):
        yield f"{owner}[]"
    elif name and name.rpartition(".")[2][:1].isupper():
        yield name
    elif name in local:
        yield from _builders(local.pop(name), local)
    else:
        yield UNKNOWN_BUILDER


def _range_end(node: cst.BaseExpression) -> str | None:
    """`N` of `range(N)`, as written."""
    if isinstance(node, cst.Call) and dotted(node.func) == "range" and len(node.args) == 1:
        return code(node.args[0].value)
    return None


def _loops(body: cst.BaseSuite) -> Iterator[cst.For]:
    for stmt in body.body if isinstance(body, cst.IndentedBlock) else ():
        if isinstance(stmt, cst.For):
            yield stmt


def _local_values(body: cst.BaseSuite) -> dict[str, cst.BaseExpression]:
    """The values a loop body assigns to plain names."""
    found: dict[str, cst.BaseExpression] = {}
    for stmt in statements(body):
        for small in stmt.body if isinstance(stmt, cst.SimpleStatementLine) else ():
            if isinstance(small, cst.Assign) and len(small.targets) == 1:
                target = small.targets[0].target
                if isinstance(target, cst.Name):
                    found[target.value] = small.value
    return found


def _appended(body: cst.BaseSuite, name: str) -> list[cst.BaseExpression]:
    """What the statements of `body` (and of the blocks under it) append to list `name`."""
    found: list[cst.BaseExpression] = []

    class Appends(cst.CSTVisitor):
        def visit_Call(self, call: cst.Call) -> None:
            func = call.func
            if (
                isinstance(func, cst.Attribute)
                and func.attr.value == "append"
                and dotted(func.value) == name
                and call.args
            ):
                found.append(call.args[0].value)

    body.visit(Appends())
    return found


def _super_init_classes(stmt: cst.BaseStatement) -> dict[str, str]:
    """`super().__init__(..., layer_type=Glm4DecoderLayer)`: keyword → class as written."""
    call = super_call(stmt, "__init__", returned=False)
    found = {}
    for arg in call.args if call is not None else ():
        name = dotted(arg.value)
        if arg.keyword is not None and name and name.rpartition(".")[2][:1].isupper():
            found[arg.keyword.value] = name
    return found


def _consumed_params(init: cst.FunctionDef, summary: ClassSummary) -> list[str]:
    """The named parameters of `__init__` that leave no attribute of their own name."""
    params = init.params
    named = [p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)]
    kept = set(summary.init_assigns)
    for stmt in statements(init.body):
        call = super_call(stmt, "__init__", returned=False)
        if call is not None:
            kept.update(arg.keyword.value for arg in call.args if arg.keyword is not None)
        kept.update(_setattr_names(stmt))
    return [name for name in named[1:] if name not in kept]


def _setattr_names(stmt: cst.BaseStatement) -> Iterator[str]:
    """`setattr(self, "name", value)` calls made at statement level: the literal names."""
    if not isinstance(stmt, cst.SimpleStatementLine):
        return
    for small in stmt.body:
        call = small.value if isinstance(small, cst.Expr) else None
        if isinstance(call, cst.Call) and dotted(call.func) == "setattr" and len(call.args) == 3:
            name = string_value(call.args[1].value)
            if dotted(call.args[0].value) == "self" and name:
                yield name


def _param_defaults(init: cst.FunctionDef) -> dict[str, str]:
    """`__init__` parameters whose default is a dotted name, with that name as written."""
    defaults = {
        p.name.value: dotted(p.default)
        for p in (*init.params.params, *init.params.kwonly_params)
        if p.default is not None
    }
    return {p: d for p, d in defaults.items() if d}


def _class_defaults(init: cst.FunctionDef) -> dict[str, str]:
    """`__init__` parameters whose default is a class as written (`model_type: type[M] = M`)."""
    return {p: d for p, d in _param_defaults(init).items() if d.rpartition(".")[2][:1].isupper()}


def _init_assign(value: cst.BaseExpression, line: int) -> InitAssign:
    built = built_model(value)
    return InitAssign(
        line=line,
        callee=built.callee,
        architectures=list(built.architectures),
        config_part=built.config_part,
    )
