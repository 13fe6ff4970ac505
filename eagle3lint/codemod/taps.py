"""Tapping a decoder's layer loop for EAGLE-3's auxiliary hidden states.

Both styles record the residual stream entering the selected layers (`hidden_states + residual`
for layers that leave the sum to the next layer's norm, `hidden_states` for layers that return
the whole stream), and make the last pipeline rank return `(hidden_states, aux_hidden_states)`
when anything was recorded:

* stub style (vLLM up to 0.17, and models 0.18+ did not move to the mixin): the model sets
  `self.aux_hidden_state_layers` in `__init__` and appends inside the loop, before the layer;
* mixin style (vLLM 0.18+): the model inherits `EagleModelMixin`, records the loop's input before
  the loop and every layer's output after the layer call with `self._maybe_add_hidden_state`.

The loop, the hidden-state and residual names come from the source rather than being assumed,
read by `eagle3lint.shapes.loop` (the reading `check` uses too): the loop is the one loop of
`forward` over `self.layers`, the names are the targets of its `hidden_states, residual =
layer(...)` statement. Which residual convention the layers follow is the caller's (`stream`),
from `eagle3lint.shapes.residual` over the layer classes.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst
import libcst.matchers as m

from eagle3lint.engines.vllm.names import AUX_LAYERS_ATTR, AUX_LIST, MIXIN, TAP_HELPER
from eagle3lint.shapes.locate import block_indent, locate
from eagle3lint.shapes.loop import running_loops
from eagle3lint.shapes.model import INDEX_NAMES, LayerCall, LayerLoop
from eagle3lint.shapes.plan import loop_refusal
from eagle3lint.shapes.syntax import returns_name

from ._layout import BLANK_LINE, bracketed, indented, parse_statement
from ._nodes import find_class, find_method, replace, with_body
from .errors import CodemodRefused
from .imports import ensure_interface_import
from .protocol import add_class_base


@dataclass(frozen=True)
class _LayerLoop:
    """The loop over `self.layers` and what the taps need to know about it."""

    loop: cst.For
    shape: LayerLoop
    call: LayerCall
    # The loop with its header rewritten to enumerate global layer ids, when it did not.
    enumerated: cst.For
    column: int
    index: str
    # Code for the index of the first layer the loop visits.
    first_index: str
    # Column of the loop body, where the layer call is.
    inner_column: int
    # What the residual stream entering a layer is made of: `hidden_states` alone when the
    # layers return the whole stream, else with the residual the next layer would add.
    residual: str


def add_forward_taps(
    module: cst.Module, model_class: str, *, stream: bool = False, inherited_init: bool = False
) -> cst.Module:
    """Add stub-style EAGLE-3 taps to the decoder model `model_class` (e.g. `DeepseekV2Model`).

    `__init__` gains `self.aux_hidden_state_layers = tuple[int, ...]()` at its end; a class
    without one of its own is tapped only when `inherited_init` says a base's sets it. In `forward`,
    `aux_hidden_states = []` goes before the layer loop, and right before the layer call (after
    any statement of the loop body that prepares its input) `if idx in
    self.aux_hidden_state_layers: aux_hidden_states.append(...)` records the stream entering
    the layer: `hidden_states` when `stream` (the layers return the whole stream, or receive
    no residual), else `hidden_states + residual if residual is not None else hidden_states`
    (the first layer of the first rank has no residual yet). The final `return hidden_states`
    is preceded by `if len(aux_hidden_states) > 0: return hidden_states, aux_hidden_states`;
    early returns of non-last pipeline ranks are untouched.

    The loop header enumerates global layer ids: `for idx, layer in enumerate(islice(
    self.layers, a, b), start=a)` for any loop over `self.layers`, a slice or `islice` of it,
    including one that already enumerates (without `start`, or with `_` as its index); a
    `range` loop, or a slice of `enumerate(self.layers)`, keeps its header and its index.
    A forward that already taps is left unchanged.

    Refuses when the class, its `__init__` or `forward` is missing, and for the loops
    `eagle3lint.shapes.plan.loop_refusal` refuses.
    """
    cls, forward = _model_parts(module, model_class)
    if _already_taps(forward):
        return module
    init = find_method(cls, "__init__")
    has_init = init is not None or inherited_init
    loop = _layer_loop(module, cls, forward, mixin=False, has_init=has_init, stream=stream)
    hidden, residual = loop.call.hidden, loop.residual
    layer_input = (
        hidden
        if residual == "None"
        else f"{hidden} + {residual} if {residual} is not None else {hidden}"
    )
    tap = parse_statement(
        module,
        f"if {loop.index} in self.{AUX_LAYERS_ATTR}:\n"
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
    statements = list(body.body)
    statements.insert(loop.call.position, tap)
    tapped_loop = loop.enumerated.with_changes(body=body.with_changes(body=statements))
    new_forward = _tapped_forward(
        module, forward, loop, tapped_loop, parse_statement(module, f"{AUX_LIST} = []")
    )
    new_init = init and _with_aux_layers_attribute(module, init)
    new_cls = with_body(
        cls,
        [new_forward if s is forward else new_init if s is init else s for s in cls.body.body],
    )
    return replace(module, cls, new_cls)


def add_mixin_taps(
    module: cst.Module,
    model_class: str,
    *,
    stream: bool = False,
    mixin_import: bool = True,
    relative: bool = True,
) -> cst.Module:
    """Add mixin-style EAGLE-3 taps (vLLM 0.18+) to the decoder model `model_class`.

    The class gains the `EagleModelMixin` base (imported from the interfaces module when
    `mixin_import`; `relative` picks the import form, see `ensure_interface_import`), `forward`
    gets `aux_hidden_states = self._maybe_add_hidden_state([], start, hidden_states, residual)`
    before the layer loop and `self._maybe_add_hidden_state(aux_hidden_states, idx + 1,
    hidden_states, residual)` right after the layer call (with `None` for the residual when
    `stream`: the helper would add it a second time), and the same final return as
    `add_forward_taps`, whose loop headers it writes too. A forward that already taps is left
    unchanged.

    Refuses as `add_forward_taps` does (without needing `__init__`), and when the loop body
    rebinds the hidden state before the layer call (the after-call tap would miss that).
    """
    cls, forward = _model_parts(module, model_class)
    if _already_taps(forward):
        return module
    loop = _layer_loop(module, cls, forward, mixin=True, has_init=True, stream=stream)
    hidden = loop.call.hidden
    record = parse_statement(
        module,
        bracketed(
            f"self.{TAP_HELPER}(",
            [AUX_LIST, f"{loop.index} + 1", hidden, loop.residual],
            ")",
            column=loop.inner_column,
            hug=True,
            magic_comma=False,
        ),
    )
    body = loop.enumerated.body
    statements = list(body.body)
    statements.insert(loop.call.position + 1, record)
    tapped_loop = loop.enumerated.with_changes(body=body.with_changes(body=statements))
    first = parse_statement(
        module,
        bracketed(
            f"{AUX_LIST} = self.{TAP_HELPER}(",
            ["[]", loop.first_index, hidden, loop.residual],
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
        MIXIN,
    )
    module = replace(module, cls, new_cls)
    if mixin_import:
        module = ensure_interface_import(module, MIXIN, relative=relative)
    return module


def _model_parts(module: cst.Module, model_class: str) -> tuple[cst.ClassDef, cst.FunctionDef]:
    cls = find_class(module, model_class)
    forward = find_method(cls, "forward")
    if forward is None:
        raise CodemodRefused(f"{model_class} defines no forward method")
    return cls, forward


def _already_taps(forward: cst.FunctionDef) -> bool:
    """Whether a loop of `forward` taps already (the codemods are idempotent). A forward that
    uses a name the tap adds only outside its loops (an `aux_hidden_states = []` of its own,
    an assert on the aux layers) does something with it the codemod cannot see: refused."""
    names = (AUX_LIST, TAP_HELPER, AUX_LAYERS_ATTR)
    tap = m.Name(AUX_LIST) | m.Name(TAP_HELPER)
    if any(m.findall(loop.body, tap) for loop in m.findall(forward, m.For())):
        return True
    used = [n for n in names if m.findall(forward, m.Name(n))]
    if used:
        raise CodemodRefused(
            f"forward already uses {', '.join(f'`{n}`' for n in used)} without tapping its "
            "layer loop; a tap would clash with that code"
        )
    return False


def _layer_loop(
    module: cst.Module,
    cls: cst.ClassDef,
    forward: cst.FunctionDef,
    *,
    mixin: bool,
    has_init: bool,
    stream: bool,
) -> _LayerLoop:
    """The one layer loop of `forward`, as `eagle3lint.shapes.loop` reads it, with its header
    enumerating global layer ids; refused as `loop_refusal` says."""
    name = cls.name.value
    found = running_loops(forward.body)
    top = forward.body.body
    refusal = loop_refusal(
        [shape for _, shape in found],
        loop_helper=None,
        ends_with_return_name=bool(top) and returns_name(top[-1]),
        mixin=mixin,
        has_init=has_init,
    )
    if refusal is not None:
        raise CodemodRefused(f"{name}.forward: {refusal}")
    loop, shape = found[0]
    call = shape.call
    assert call is not None  # loop_refusal refuses a loop without one
    column = next(
        found.column
        for found in locate(module, m.For(), within=forward, column=block_indent(module, cls.body))
        if found.node is loop
    )
    index, first_index, enumerated = _enumerating_header(module, forward, loop, shape, column)
    return _LayerLoop(
        loop=loop,
        shape=shape,
        call=call,
        enumerated=enumerated,
        column=column,
        index=index,
        first_index=first_index,
        inner_column=column + block_indent(module, loop.body),
        residual="None" if stream or call.residual is None else call.residual,
    )


def _enumerating_header(
    module: cst.Module, forward: cst.FunctionDef, loop: cst.For, shape: LayerLoop, column: int
) -> tuple[str, str, cst.For]:
    """Index variable, first index, and the loop with a header enumerating global layer ids."""
    first = shape.start or "0"
    if shape.spelling in ("range", "islice-enumerate"):
        assert shape.index is not None
        return shape.index, first, loop
    assert shape.layer is not None
    layers = loop.iter
    if shape.spelling == "enumerate":
        assert isinstance(layers, cst.Call)
        layers = layers.args[0].value
    index = shape.index if shape.index not in (None, "_") else None
    if index is None:
        index = next((n for n in INDEX_NAMES if not m.findall(forward, m.Name(n))), None)
    if index is None:
        raise CodemodRefused(
            f"cannot name the layer index: {', '.join(INDEX_NAMES)} are all taken in forward"
        )
    start = shape.start if shape.enumerate_start is None else shape.enumerate_start
    items = [module.code_for_node(layers)]
    if start is not None:
        items.append(f"start={start}")
    header = bracketed(
        f"for {index}, {shape.layer} in enumerate(",
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
    return index, start or "0", enumerated


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
    assigned = m.Attribute(value=m.Name("self"), attr=m.Name(AUX_LAYERS_ATTR))
    if m.findall(init, m.AssignTarget(target=assigned)):
        return init
    attribute = parse_statement(module, f"self.{AUX_LAYERS_ATTR} = tuple[int, ...]()").with_changes(
        leading_lines=[BLANK_LINE]
    )
    return init.with_changes(body=init.body.with_changes(body=[*init.body.body, attribute]))
