"""The decoder's layer loop, in every spelling vLLM models use.

* `for layer in self.layers`, `self.layers[a:b]` or `islice(self.layers, a, b)`;
* the same under `enumerate(..., start=...)`, with an index;
* `for i in range(a, b):` calling `self.layers[i](...)` or binding `layer = self.layers[i]`.

A loop that only walks the layers' attributes (`for layer in self.layers: layer.x = ...`) is
not a layer loop: the body must call the layer.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace

import libcst as cst

from .model import LayerCall, LayerLoop
from .syntax import assigned_names, code, dotted, names_in, statements, statements_of

INDEXED_LAYER_CALL = re.compile(r"self\.layers\[[^\[\]]*\]\s*\(")
"""`self.layers[i](...)`. The subscript holds no bracket, so each `self.layers[` is scanned up
to the next bracket only: a string of 20,000 unclosed `self.layers[` took 4 s, quadratically."""


def layer_loops(
    body: cst.BaseSuite, walked: Sequence[cst.BaseStatement] | None = None
) -> list[tuple[cst.For, LayerLoop]]:
    """The loops over the layers of a function body (at any depth, not in nested defs),
    described; `runs_layers` tells the layer loops from loops that only mention the layers.
    `walked`: the body's statements when the caller has already listed them (`statements`)."""
    top = set(map(id, body.body)) if isinstance(body, cst.IndentedBlock) else set()
    found = []
    for stmt in statements(body) if walked is None else walked:
        if isinstance(stmt, cst.For):
            loop = recognise(stmt, nested=id(stmt) not in top)
            if loop is not None:
                found.append((stmt, loop))
    return found


def running_loops(body: cst.BaseSuite) -> list[tuple[cst.For, LayerLoop]]:
    """The loops of a body that run the layers; failing those, the ones that mention them."""
    found = layer_loops(body)
    return [each for each in found if each[1].runs_layers] or found


def recognise(loop: cst.For, *, nested: bool = False) -> LayerLoop | None:
    """Describe `loop` if it walks the decoder layers, else None."""
    found = _recognise(loop, nested)
    if found is None or found.refusal is not None or found.index in (None, "_"):
        return found
    body = list(loop.body.body) if isinstance(loop.body, cst.IndentedBlock) else []
    if any(_rebinds(stmt, {found.index}) for stmt in body):
        # Qwen3-Omni's `layer_idx = layer_idx + self.start_layer`: a header given `start=`
        # would offset the index twice.
        return replace(
            found,
            refusal=f"the loop rebinds its index `{found.index}` in its body; a tap cannot "
            "tell which layer it is at",
        )
    return found


def _recognise(loop: cst.For, nested: bool) -> LayerLoop | None:
    iter_node = loop.iter
    if _is_call(iter_node, "range"):
        return _range_loop(loop, nested)
    if "self.layers" not in code(iter_node):
        return _indexing_loop(loop, nested) if _calls_indexed(loop) else None
    if _is_islice(iter_node) and _is_call(iter_node.args[0].value, "enumerate"):
        return _sliced_enumerate(loop, nested)
    enumerated = _is_call(iter_node, "enumerate")
    index: str | None = None
    enumerate_start: str | None = None
    layers_node = iter_node
    target = loop.target
    layer = target.value if isinstance(target, cst.Name) else None
    if enumerated:
        assert isinstance(iter_node, cst.Call)
        positional = [a for a in iter_node.args if a.keyword is None]
        layers_node = positional[0].value if positional else iter_node
        for i, arg in enumerate(iter_node.args):
            keyword = arg.keyword.value if arg.keyword is not None else None
            if keyword == "start" or (keyword is None and i == 1):
                enumerate_start = code(arg.value)
        pair = _name_pair(target)
        index, layer = pair if pair is not None else (None, None)
    spelling, start, unsupported = _layers_iterable(layers_node)
    refusal = None
    if spelling is None or layer is None or unsupported:
        refusal = f"unsupported loop over self.layers: `for {code(target)} in {code(iter_node)}`"
    called = names_in(target) if layer is None else {layer}
    call = None
    if layer is not None:
        call = _layer_call(loop, lambda node: isinstance(node, cst.Name) and node.value == layer)
    runs = _calls_indexed(loop) or any(_calls_name(loop, name) for name in called)
    layers_text = code(layers_node)
    return LayerLoop(
        spelling="enumerate" if enumerated else spelling or "other",
        index=index,
        layer=layer,
        layers=layers_text,
        start=start,
        enumerate_start=enumerate_start,
        slices_layers=layers_text.startswith("islice(")
        or ("self.layers[" in layers_text and ":" in layers_text),
        runs_layers=runs,
        call=call,
        nested=nested,
        refusal=refusal or _refusal(call, nested),
    )


def _indexing_loop(loop: cst.For, nested: bool) -> LayerLoop:
    """`for idx in layer_ids: self.layers[idx](...)`: which layers it runs is not visible."""
    index = loop.target.value if isinstance(loop.target, cst.Name) else None
    return LayerLoop(
        spelling="other",
        index=index,
        layer=None,
        layers=code(loop.iter),
        start=None,
        enumerate_start=None,
        slices_layers=False,
        runs_layers=True,
        call=None,
        nested=nested,
        refusal=f"unsupported loop over self.layers: `for {code(loop.target)} in "
        f"{code(loop.iter)}`",
    )


def _sliced_enumerate(loop: cst.For, nested: bool) -> LayerLoop | None:
    """`for i, layer in islice(enumerate(self.layers), a, b)`: the index is already global."""
    assert isinstance(loop.iter, cst.Call)
    pair = _name_pair(loop.target)
    enumerated = loop.iter.args[0].value
    assert isinstance(enumerated, cst.Call)
    if (
        pair is None
        or len(enumerated.args) != 1
        or dotted(enumerated.args[0].value) != ("self.layers")
    ):
        return None
    index, layer = pair
    args = loop.iter.args
    call = _layer_call(loop, lambda node: isinstance(node, cst.Name) and node.value == layer)
    return LayerLoop(
        spelling="islice-enumerate",
        index=index,
        layer=layer,
        layers=code(loop.iter),
        start=code(args[1].value) if len(args) == 3 else None,
        enumerate_start="0",
        slices_layers=True,
        runs_layers=call is not None or _calls_name(loop, layer),
        call=call,
        nested=nested,
        refusal=_refusal(call, nested),
    )


def _range_loop(loop: cst.For, nested: bool) -> LayerLoop | None:
    assert isinstance(loop.iter, cst.Call)
    if not isinstance(loop.target, cst.Name):
        return None
    index = loop.target.value
    layer = _range_layer(loop, index)

    def runs_layer(node: cst.BaseExpression) -> bool:
        if layer is not None and isinstance(node, cst.Name) and node.value == layer:
            return True
        return _indexes_layers(node, index)

    if "self.layers[" not in code(loop.body):
        return None
    call = _layer_call(loop, runs_layer)
    args = [a for a in loop.iter.args if a.keyword is None]
    start = code(args[0].value) if len(args) >= 2 else None
    refusal = None
    if len(args) == 3:
        refusal = f"unsupported loop over self.layers: `for {index} in {code(loop.iter)}`"
    return LayerLoop(
        spelling="range",
        index=index,
        layer=layer,
        layers=code(loop.iter),
        start=start,
        enumerate_start=start,
        slices_layers=False,
        runs_layers=call is not None or _calls_indexed(loop),
        call=call,
        nested=nested,
        refusal=refusal or _refusal(call, nested),
    )


def _refusal(call: LayerCall | None, nested: bool) -> str | None:
    if nested:
        return (
            "the layer loop is nested in another block; its aux list would not reach the "
            "final return"
        )
    if call is None:
        return (
            "the layer loop has no single `hidden_states, residual = layer(...)` statement "
            "to take the hidden-state and residual names from"
        )
    return None


def _layers_iterable(node: cst.BaseExpression) -> tuple[str | None, str | None, bool]:
    """(spelling, first index, unsupported) for `self.layers`, a slice of it or `islice(...)`:
    unsupported when it skips layers (a step)."""
    if dotted(node) == "self.layers":
        return "layers", None, False
    if isinstance(node, cst.Subscript) and dotted(node.value) == "self.layers":
        bounds = node.slice[0].slice if len(node.slice) == 1 else None
        if not isinstance(bounds, cst.Slice):
            return None, None, False
        lower = None if bounds.lower is None else code(bounds.lower)
        return "slice", lower, bounds.step is not None
    if _is_islice(node):
        assert isinstance(node, cst.Call)
        args = node.args
        if not args or dotted(args[0].value) != "self.layers":
            return None, None, False
        if any(a.keyword is not None for a in args) or len(args) > 3:
            return "islice", None, True
        return "islice", code(args[1].value) if len(args) == 3 else None, False
    return None, None, False


def _layer_call(
    loop: cst.For, runs_layer: Callable[[cst.BaseExpression], bool]
) -> LayerCall | None:
    """The one top-level body statement assigning the result of calling the layer."""
    body = list(loop.body.body) if isinstance(loop.body, cst.IndentedBlock) else []
    found: list[tuple[int, cst.Assign]] = []
    for position, stmt in enumerate(body):
        if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
            continue
        small = stmt.body[0]
        if (
            isinstance(small, cst.Assign)
            and len(small.targets) == 1
            and isinstance(small.value, cst.Call)
            and runs_layer(small.value.func)
        ):
            found.append((position, small))
    if len(found) != 1:
        return None
    position, assign = found[0]
    target = assign.targets[0].target
    residual: str | None
    if isinstance(target, cst.Name):
        hidden, residual = _stream_name(target.value, assign.value, body[position + 1 :]), None
        if hidden is None:
            return None
    else:
        pair = _name_pair(target)
        if pair is None:
            return None
        hidden, residual = pair
        if residual == "_":
            residual = None
    call = assign.value
    assert isinstance(call, cst.Call)
    passes = residual is not None and any(
        isinstance(a.value, cst.Name) and a.value.value == residual for a in call.args
    )
    names = {hidden, residual or hidden}
    rebound = any(_rebinds(stmt, names) for stmt in body[:position])
    after = any(_rebinds(stmt, names) for stmt in body[position + 1 :])
    return LayerCall(position, hidden, residual, passes, rebound, after)


def _stream_name(result: str, call: cst.Call, after: list[cst.BaseStatement]) -> str | None:
    """The hidden-state name of `result = layer(...)`: `result` itself when the layer receives
    it, else the name the layer receives and a later statement rebinds (Zamba2's
    `layer_outputs = layer(hidden_states, ...)` then `hidden_states = layer_outputs`); the tap
    must read what enters the layer, never a name first bound by the call."""
    passed = [a.value.value for a in call.args if isinstance(a.value, cst.Name)]
    if result in passed:
        return result
    positional = [
        a.value.value for a in call.args if a.keyword is None and isinstance(a.value, cst.Name)
    ]
    rebound = [name for name in positional if any(_rebinds(stmt, {name}) for stmt in after)]
    return rebound[0] if rebound else None


def _rebinds(stmt: cst.BaseStatement, names: set[str]) -> bool:
    return any(assigned_names(s) & names for s in (stmt, *statements_of(stmt)))


def _range_layer(loop: cst.For, index: str) -> str | None:
    """`layer` for `layer = self.layers[i]` in the body of `for i in range(...)`."""
    body = list(loop.body.body) if isinstance(loop.body, cst.IndentedBlock) else []
    for stmt in body:
        if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
            continue
        small = stmt.body[0]
        if (
            isinstance(small, cst.Assign)
            and len(small.targets) == 1
            and isinstance(small.targets[0].target, cst.Name)
            and _indexes_layers(small.value, index)
        ):
            return small.targets[0].target.value
    return None


def _indexes_layers(node: cst.BaseExpression, index: str) -> bool:
    """`self.layers[index]`."""
    return (
        isinstance(node, cst.Subscript)
        and dotted(node.value) == "self.layers"
        and len(node.slice) == 1
        and isinstance(node.slice[0].slice, cst.Index)
        and isinstance(node.slice[0].slice.value, cst.Name)
        and node.slice[0].slice.value.value == index
    )


def _calls_indexed(loop: cst.For) -> bool:
    """Any `self.layers[...](...)` call in the loop body."""
    return bool(INDEXED_LAYER_CALL.search(code(loop.body)))


def _calls_name(loop: cst.For, name: str) -> bool:
    return bool(re.search(rf"(?<![\w.]){re.escape(name)}\s*\(", code(loop.body)))


def _is_islice(node: cst.BaseExpression) -> bool:
    return (
        isinstance(node, cst.Call)
        and bool(node.args)
        and (dotted(node.func) or "").rpartition(".")[2] == "islice"
    )


def _is_call(node: cst.BaseExpression, name: str) -> bool:
    return isinstance(node, cst.Call) and dotted(node.func) == name


def _name_pair(node: cst.BaseExpression) -> tuple[str, str] | None:
    if not isinstance(node, cst.Tuple) or len(node.elements) != 2:
        return None
    first, second = (e.value for e in node.elements)
    if isinstance(first, cst.Name) and isinstance(second, cst.Name):
        return first.value, second.value
    return None
