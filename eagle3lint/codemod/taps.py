"""Tapping a decoder's layer loop for EAGLE-3's auxiliary hidden states.

Both styles record the input of the selected layers (hidden states plus residual), and make the
last pipeline rank return `(hidden_states, aux_hidden_states)` when anything was recorded:

* stub style (vLLM up to 0.17, and models 0.18+ did not move to the mixin): the model sets
  `self.aux_hidden_state_layers` in `__init__` and appends inside the loop, before the layer;
* mixin style (vLLM 0.18+): the model inherits `EagleModelMixin`, records the loop's input before
  the loop and every layer's output after the layer call with `self._maybe_add_hidden_state`.

The loop, the hidden-state and residual names come from the source rather than being assumed:
the loop is the one loop of `forward` over `self.layers`, the names are the targets of its
`hidden_states, residual = layer(...)` statement.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst
import libcst.matchers as m

from ._layout import BLANK_LINE, bracketed, indented, parse_statement
from ._nodes import block_indent, find_class, find_method, locate, replace, with_body
from .errors import CodemodRefused
from .imports import ensure_interface_import
from .protocol import add_class_base

AUX_LIST = "aux_hidden_states"
_SELF_LAYERS = m.Attribute(value=m.Name("self"), attr=m.Name("layers"))
_NAME_PAIR = m.Tuple(elements=[m.Element(m.Name()), m.Element(m.Name())])
_INDEX_NAMES = ("idx", "layer_idx")


@dataclass(frozen=True)
class _LayerLoop:
    """The loop over `self.layers` and what the taps need to know about it."""

    loop: cst.For
    # The loop with its header rewritten to enumerate the layers, when it did not already.
    enumerated: cst.For
    column: int
    index: str
    # Code for the index of the first layer the loop visits.
    first_index: str
    call: cst.SimpleStatementLine
    # Column of the loop body, where the layer call is.
    inner_column: int
    hidden: str
    residual: str


def add_forward_taps(module: cst.Module, model_class: str, *, enumerate_start: bool) -> cst.Module:
    """Add stub-style EAGLE-3 taps to the decoder model `model_class` (e.g. `DeepseekV2Model`).

    `__init__` gains `self.aux_hidden_state_layers = tuple[int, ...]()` at its end. In `forward`,
    `aux_hidden_states = []` goes before the layer loop, whose first statement becomes
    `if idx in self.aux_hidden_state_layers: aux_hidden_states.append(...)` with the input of
    the layer, `hidden_states + residual if residual is not None else hidden_states` (the first
    layer of the first rank has no residual yet, where upstream's `hidden_states + residual`
    raises). The final `return hidden_states` is preceded by
    `if len(aux_hidden_states) > 0: return hidden_states, aux_hidden_states`; early returns of
    non-last pipeline ranks are untouched.

    The loop may be `for layer in islice(self.layers, a, b)`, over `self.layers[a:b]` or
    `self.layers`, which becomes `for idx, layer in enumerate(..., start=a)` (without `start`
    unless `enumerate_start`); a loop that already enumerates, or
    `for i in range(a, b): layer = self.layers[i]`, keeps its header and its index.
    A forward that already taps is left unchanged.

    Refuses when the class, its `__init__` or `forward` is missing; when `forward` has no loop
    over `self.layers` or more than one, or one nested in another block or of another shape;
    when the loop body has no single `hidden, residual = layer(...)` statement; when `forward`
    does not end with `return <name>`.
    """
    cls, forward = _model_parts(module, model_class)
    if _already_taps(forward):
        return module
    init = find_method(cls, "__init__")
    if init is None:
        raise CodemodRefused(
            f"{model_class} has no __init__ to initialise self.aux_hidden_state_layers in"
        )
    loop = _layer_loop(module, cls, forward, enumerate_start=enumerate_start)
    hidden, residual = loop.hidden, loop.residual
    layer_input = f"{hidden} + {residual} if {residual} is not None else {hidden}"
    tap = parse_statement(
        module,
        f"if {loop.index} in self.aux_hidden_state_layers:\n"
        + indented(
            module,
            bracketed(
                f"{AUX_LIST}.append(",
                [layer_input],
                ")",
                column=loop.inner_column + len(module.default_indent),
                hug=True,
                magic_comma=False,
            ),
        ),
    )
    body = loop.enumerated.body
    tapped_loop = loop.enumerated.with_changes(body=body.with_changes(body=[tap, *body.body]))
    new_forward = _tapped_forward(
        module, forward, loop, tapped_loop, parse_statement(module, f"{AUX_LIST} = []")
    )
    new_init = _with_aux_layers_attribute(module, init)
    new_cls = with_body(
        cls,
        [new_forward if s is forward else new_init if s is init else s for s in cls.body.body],
    )
    return replace(module, cls, new_cls)


def add_mixin_taps(
    module: cst.Module,
    model_class: str,
    *,
    enumerate_start: bool = False,
    mixin_import: bool = True,
    relative: bool = True,
) -> cst.Module:
    """Add mixin-style EAGLE-3 taps (vLLM 0.18+) to the decoder model `model_class`.

    The class gains the `EagleModelMixin` base (imported from the interfaces module when
    `mixin_import`; `relative` picks the import form, see `ensure_interface_import`), `forward`
    gets `aux_hidden_states = self._maybe_add_hidden_state([], 0, hidden_states, residual)`
    before the layer loop and `self._maybe_add_hidden_state(aux_hidden_states, idx + 1,
    hidden_states, residual)` right after the layer call, and the same final return as
    `add_forward_taps`. Layer loops are handled as there; when the index counts from the loop's
    first layer (`enumerate_start`, or a `range` loop), the call before the loop passes that
    layer's index instead of 0. A forward that already taps is left unchanged.

    Refuses as `add_forward_taps` does (without needing `__init__`).
    """
    cls, forward = _model_parts(module, model_class)
    if _already_taps(forward):
        return module
    loop = _layer_loop(module, cls, forward, enumerate_start=enumerate_start)
    record = parse_statement(
        module,
        bracketed(
            "self._maybe_add_hidden_state(",
            [AUX_LIST, f"{loop.index} + 1", loop.hidden, loop.residual],
            ")",
            column=loop.inner_column,
            hug=True,
            magic_comma=False,
        ),
    )
    body = loop.enumerated.body
    tapped_loop = loop.enumerated.with_changes(
        body=body.with_changes(
            body=[
                new
                for statement in body.body
                for new in ((statement, record) if statement is loop.call else (statement,))
            ]
        )
    )
    first = parse_statement(
        module,
        bracketed(
            f"{AUX_LIST} = self._maybe_add_hidden_state(",
            ["[]", loop.first_index, loop.hidden, loop.residual],
            ")",
            column=loop.column,
            hug=True,
            magic_comma=False,
        ),
    )
    new_forward = _tapped_forward(module, forward, loop, tapped_loop, first)
    new_cls = add_class_base(
        module,
        with_body(cls, [new_forward if s is forward else s for s in cls.body.body]),
        "EagleModelMixin",
    )
    module = replace(module, cls, new_cls)
    if mixin_import:
        module = ensure_interface_import(module, "EagleModelMixin", relative=relative)
    return module


def _model_parts(module: cst.Module, model_class: str) -> tuple[cst.ClassDef, cst.FunctionDef]:
    cls = find_class(module, model_class)
    forward = find_method(cls, "forward")
    if forward is None:
        raise CodemodRefused(f"{model_class} defines no forward method")
    return cls, forward


def _already_taps(forward: cst.FunctionDef) -> bool:
    return bool(
        m.findall(
            forward,
            m.Name(AUX_LIST)
            | m.Name("_maybe_add_hidden_state")
            | m.Name("aux_hidden_state_layers"),
        )
    )


def _layer_loop(
    module: cst.Module, cls: cst.ClassDef, forward: cst.FunctionDef, *, enumerate_start: bool
) -> _LayerLoop:
    name = cls.name.value
    loops = [
        found
        for found in locate(module, m.For(), within=forward, column=block_indent(module, cls.body))
        if isinstance(found.node, cst.For) and _is_layer_loop(found.node)
    ]
    if not loops:
        raise CodemodRefused(f"{name}.forward has no loop over self.layers")
    if len(loops) > 1:
        raise CodemodRefused(
            f"{name}.forward has {len(loops)} loops over self.layers; expected exactly one"
        )
    loop, column = loops[0].node, loops[0].column
    assert isinstance(loop, cst.For)
    if loop not in forward.body.body:
        raise CodemodRefused(
            f"the loop over self.layers in {name}.forward is nested in another block; "
            "its aux_hidden_states list would not reach the final return"
        )
    layer, index, first_index, enumerated = _loop_header(
        module, forward, loop, column, enumerate_start=enumerate_start
    )
    call, hidden, residual = _layer_call(name, loop, layer)
    return _LayerLoop(
        loop=loop,
        enumerated=enumerated,
        column=column,
        index=index,
        first_index=first_index,
        call=call,
        inner_column=column + block_indent(module, loop.body),
        hidden=hidden,
        residual=residual,
    )


def _is_layer_loop(loop: cst.For) -> bool:
    return bool(m.findall(loop.iter, _SELF_LAYERS)) or _range_layer(loop) is not None


def _range_layer(loop: cst.For) -> str | None:
    """`layer` for `for i in range(...): layer = self.layers[i]`."""
    if not (
        m.matches(loop.iter, m.Call(func=m.Name("range")))
        and isinstance(loop.target, cst.Name)
        and isinstance(loop.body, cst.IndentedBlock)
    ):
        return None
    lookup = m.Assign(
        targets=[m.AssignTarget(target=m.Name())],
        value=m.Subscript(
            value=_SELF_LAYERS,
            slice=[m.SubscriptElement(slice=m.Index(value=m.Name(loop.target.value)))],
        ),
    )
    for statement in loop.body.body:
        if m.matches(statement, m.SimpleStatementLine(body=[lookup])):
            assert isinstance(statement, cst.SimpleStatementLine)
            assign = statement.body[0]
            assert isinstance(assign, cst.Assign) and isinstance(assign.targets[0].target, cst.Name)
            return assign.targets[0].target.value
    return None


def _loop_header(
    module: cst.Module,
    forward: cst.FunctionDef,
    loop: cst.For,
    column: int,
    *,
    enumerate_start: bool,
) -> tuple[str, str, str, cst.For]:
    """Layer variable, index variable, first index, and the loop with an enumerating header."""
    unsupported = CodemodRefused(
        f"unsupported loop over self.layers: `for {module.code_for_node(loop.target)} in "
        f"{module.code_for_node(loop.iter)}`"
    )
    range_layer = _range_layer(loop)
    if range_layer is not None:
        assert isinstance(loop.iter, cst.Call) and isinstance(loop.target, cst.Name)
        bounds = loop.iter.args
        if len(bounds) == 3:
            raise unsupported
        first = module.code_for_node(bounds[0].value) if len(bounds) == 2 else "0"
        return range_layer, loop.target.value, first, loop

    if m.matches(loop.iter, m.Call(func=m.Name("enumerate"))):
        assert isinstance(loop.iter, cst.Call)
        if not m.matches(loop.target, _NAME_PAIR):
            raise unsupported
        layers, *start = loop.iter.args
        _layers_start(module, layers.value, unsupported)
        index, layer = _pair_names(loop.target)
        first = module.code_for_node(start[0].value) if start else "0"
        return layer, index, first, loop

    if not isinstance(loop.target, cst.Name):
        raise unsupported
    layer = loop.target.value
    start = _layers_start(module, loop.iter, unsupported)
    index = next((n for n in _INDEX_NAMES if not m.findall(forward, m.Name(n))), None)
    if index is None:
        raise CodemodRefused(
            f"cannot name the layer index: {', '.join(_INDEX_NAMES)} are all taken in forward"
        )
    items = [module.code_for_node(loop.iter)]
    if enumerate_start and start is not None:
        items.append(f"start={start}")
    header = bracketed(
        f"for {index}, {layer} in enumerate(",
        items,
        "):",
        column=column,
        hug=True,
        magic_comma=False,
    )
    parsed = parse_statement(module, f"{header}\n{module.default_indent}pass\n")
    assert isinstance(parsed, cst.For)
    enumerated = loop.with_changes(
        target=parsed.target,
        iter=parsed.iter,
        whitespace_after_for=parsed.whitespace_after_for,
        whitespace_before_in=parsed.whitespace_before_in,
        whitespace_after_in=parsed.whitespace_after_in,
        whitespace_before_colon=parsed.whitespace_before_colon,
    )
    first = start if enumerate_start and start is not None else "0"
    return layer, index, first, enumerated


def _layers_start(
    module: cst.Module, layers: cst.BaseExpression, unsupported: CodemodRefused
) -> str | None:
    """Code for the first layer index of `self.layers`, `self.layers[a:b]` or `islice(...)`."""
    if m.matches(layers, _SELF_LAYERS):
        return None
    if m.matches(layers, m.Subscript(value=_SELF_LAYERS, slice=[m.SubscriptElement(m.Slice())])):
        assert isinstance(layers, cst.Subscript)
        bounds = layers.slice[0].slice
        assert isinstance(bounds, cst.Slice)
        if bounds.step is not None:
            raise unsupported
        return None if bounds.lower is None else module.code_for_node(bounds.lower)
    if m.matches(
        layers,
        m.Call(
            func=m.Name("islice") | m.Attribute(attr=m.Name("islice")),
            args=[m.Arg(_SELF_LAYERS), m.ZeroOrMore(m.Arg(keyword=None))],
        ),
    ):
        assert isinstance(layers, cst.Call)
        if len(layers.args) == 2:
            return None
        if len(layers.args) == 3:
            return module.code_for_node(layers.args[1].value)
    raise unsupported


def _pair_names(node: cst.BaseExpression) -> tuple[str, str]:
    """`("a", "b")` for the target `a, b`."""
    assert isinstance(node, cst.Tuple)
    first, second = (element.value for element in node.elements)
    assert isinstance(first, cst.Name) and isinstance(second, cst.Name)
    return first.value, second.value


def _layer_call(name: str, loop: cst.For, layer: str) -> tuple[cst.SimpleStatementLine, str, str]:
    """The `hidden, residual = layer(...)` statement of the loop body and its two names."""
    pattern = m.SimpleStatementLine(
        body=[
            m.Assign(
                targets=[m.AssignTarget(target=_NAME_PAIR)],
                value=m.Call(func=m.Name(layer)),
            )
        ]
    )
    assert isinstance(loop.body, cst.IndentedBlock)
    calls = [s for s in loop.body.body if m.matches(s, pattern)]
    if len(calls) != 1:
        raise CodemodRefused(
            f"the loop over self.layers in {name}.forward has {len(calls)} statements of the form "
            f"`hidden_states, residual = {layer}(...)`; expected exactly one to take the "
            "hidden-state and residual names from"
        )
    call = calls[0]
    assert isinstance(call, cst.SimpleStatementLine)
    assign = call.body[0]
    assert isinstance(assign, cst.Assign) and isinstance(assign.targets[0].target, cst.Tuple)
    hidden, residual = _pair_names(assign.targets[0].target)
    return call, hidden, residual


def _tapped_forward(
    module: cst.Module,
    forward: cst.FunctionDef,
    loop: _LayerLoop,
    tapped_loop: cst.For,
    before_loop: cst.BaseStatement,
) -> cst.FunctionDef:
    """`forward` with the tapped loop, `before_loop` ahead of it, and the final aux return."""
    name = forward.name.value
    final = forward.body.body[-1]
    returned = m.SimpleStatementLine(body=[m.Return(value=m.Name())])
    if not m.matches(final, returned):
        raise CodemodRefused(f"{name} does not end with `return <name>`; no final return to extend")
    assert isinstance(final, cst.SimpleStatementLine) and isinstance(final.body[0], cst.Return)
    assert final.body[0].value is not None
    result = module.code_for_node(final.body[0].value)
    early = parse_statement(
        module,
        f"if len({AUX_LIST}) > 0:\n{module.default_indent}return {result}, {AUX_LIST}\n",
    )
    body: list[cst.BaseStatement] = []
    for statement in forward.body.body:
        if statement is loop.loop:
            body += [
                before_loop.with_changes(leading_lines=loop.loop.leading_lines),
                tapped_loop.with_changes(leading_lines=()),
            ]
        elif statement is final:
            body += [
                early.with_changes(leading_lines=final.leading_lines),
                final.with_changes(leading_lines=()),
            ]
        else:
            body.append(statement)
    return forward.with_changes(body=forward.body.with_changes(body=body))


def _with_aux_layers_attribute(module: cst.Module, init: cst.FunctionDef) -> cst.FunctionDef:
    """`__init__` ending with `self.aux_hidden_state_layers = tuple[int, ...]()`."""
    assigned = m.Attribute(value=m.Name("self"), attr=m.Name("aux_hidden_state_layers"))
    if m.findall(init, m.AssignTarget(target=assigned)):
        return init
    attribute = parse_statement(
        module, "self.aux_hidden_state_layers = tuple[int, ...]()"
    ).with_changes(leading_lines=[BLANK_LINE])
    return init.with_changes(body=init.body.with_changes(body=[*init.body.body, attribute]))
