"""What `ForwardSummary` holds, read from a decoder's `forward`: its layer loops (also in a
helper method it calls), the aux hidden-state taps in and around them, and how the aux list
is built and returned."""

from __future__ import annotations

import re
from collections.abc import Callable

import libcst as cst

from eagle3lint.engines.vllm.names import AUX_LAYERS_ATTR, RESIDUAL
from eagle3lint.index.locate import function_positions
from eagle3lint.index.model import ClassSummary, ForwardSummary, LoopSummary, TapSummary
from eagle3lint.shapes.loop import INDEXED_LAYER_CALL, LayerLoop, layer_loops
from eagle3lint.shapes.syntax import (
    assigned_names,
    code,
    names_in,
    returns_name,
    self_calls,
    statements,
    super_call,
)
from eagle3lint.shapes.taps import Tap, dict_captures, taps_in

_LAYER_CALL = re.compile(r"\blayer\s*\(")

HELPER_DEPTH = 2
"""How many `self.<method>(...)` calls deep a forward's layer loop is looked for."""


def forward_summary(
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
        forward.returns_super = any(super_call(s, "forward", returned=True) for s in top)
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
    # Once the body has assigned the residual (a layer, or its input norm, returned it), a tap
    # reads that value and not the None the first layer starts from (Kimi K3, MiniMax M3).
    reassigned = False
    for i, stmt in enumerate(body):
        before = call_at is None or i < call_at
        found = taps_in(stmt) + (dict_captures(stmt, shape.index or "") if by_id else [])
        for tap in found:
            tap_line, tap_col = position(stmt)
            summary.taps.append(
                _tap_summary(tap, tap_line, tap_col, before, in_body, guarded=reassigned)
            )
        if in_body is not None:
            in_body |= _binds_on_every_path(stmt)
        reassigned = reassigned or RESIDUAL in assigned_names(stmt)
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
