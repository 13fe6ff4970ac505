"""Aux hidden-state taps: where a forward collects the residual stream for EAGLE-3.

Two spellings exist:

* explicit: `if idx in self.aux_hidden_state_layers: aux.append(value)`, also through a local
  temporary (`t = hidden_states + residual` then `aux.append(t)`);
* helper: `self._maybe_add_hidden_state(aux, idx, hidden_states, residual)` (`EagleModelMixin`,
  vLLM 0.18+), which adds the residual when it is not None;
* dict capture: a layer loop that passes `idx in self.aux_hidden_state_layers` on and stores
  what comes back by layer id, `captured[idx] = value` (DeepseekV41), from which the forward
  later builds its aux list.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from eagle3lint.engines.vllm.names import AUX_LAYERS_ATTR, TAP_HELPER

from .syntax import code, dotted, statements, statements_of


@dataclass(frozen=True, slots=True)
class Tap:
    """One tap found in a statement."""

    style: str
    """`explicit`, `helper` or `dict`."""
    collects_into: str
    """The list it appends to ("" when that is not a plain name)."""
    value: str
    """The captured value's source; for the helper, its hidden-state and residual arguments."""
    reads: tuple[str, ...]
    """Plain names the captured value reads (attribute names excluded)."""
    residual_guarded: bool
    """The value copes with `residual is None` (first pipeline rank, layer 0)."""
    adds_residual: bool
    """The value adds a second name to the hidden state (or the helper is given a residual)."""


def taps_in(stmt: cst.BaseStatement) -> list[Tap]:
    """The taps a statement makes: an explicit `if ... in self.aux_hidden_state_layers:` block
    or a helper call (bare or assigned)."""
    return [*_explicit(stmt), *_helper(stmt)]


def dict_captures(stmt: cst.BaseStatement, index: str) -> list[Tap]:
    """`name[<index expression>] = value` anywhere in a statement of a layer loop whose index is
    `index`; only meaningful in a loop that reads `self.aux_hidden_state_layers`."""
    taps = []
    for inner in (stmt, *statements_of(stmt)):
        if not isinstance(inner, cst.SimpleStatementLine):
            continue
        for small in inner.body:
            if not isinstance(small, cst.Assign) or len(small.targets) != 1:
                continue
            target = small.targets[0].target
            if (
                isinstance(target, cst.Subscript)
                and isinstance(target.value, cst.Name)
                and len(target.slice) == 1
                and isinstance(target.slice[0].slice, cst.Index)
                and index in _reads(target.slice[0].slice.value)
            ):
                taps.append(
                    Tap(
                        style="dict",
                        collects_into=target.value.value,
                        value=code(small.value),
                        reads=_reads(small.value),
                        residual_guarded=_guards_residual(small.value),
                        adds_residual=_adds(small.value),
                    )
                )
    return taps


def tests_aux_membership(test: cst.BaseExpression) -> bool:
    """`x in self.aux_hidden_state_layers`, alone or as the first operand of an `and`."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return tests_aux_membership(test.left)
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    comparison = test.comparisons[0]
    return isinstance(comparison.operator, cst.In) and AUX_LAYERS_ATTR in code(
        comparison.comparator
    )


def _explicit(stmt: cst.BaseStatement) -> list[Tap]:
    if not isinstance(stmt, cst.If) or not tests_aux_membership(stmt.test):
        return []
    taps = []
    bound: dict[str, cst.BaseExpression] = {}
    for inner in statements(stmt.body):
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
                # Names bound earlier in the tap's own block are bound when it appends.
                reads = tuple(n for n in _reads(value) if n not in bound)
                taps.append(
                    Tap(
                        style="explicit",
                        collects_into=owner,
                        value=code(value),
                        reads=reads,
                        residual_guarded=_guards_residual(value),
                        adds_residual=_adds(value),
                    )
                )
    return taps


def _helper(stmt: cst.BaseStatement) -> list[Tap]:
    if not isinstance(stmt, cst.SimpleStatementLine):
        return []
    taps = []
    for small in stmt.body:
        value = small.value if isinstance(small, cst.Expr | cst.Assign) else None
        if not (
            isinstance(value, cst.Call)
            and dotted(value.func) == f"self.{TAP_HELPER}"
            and len(value.args) >= 2
        ):
            continue
        first = value.args[0].value
        name = first.value if isinstance(first, cst.Name) else None
        if name is None and isinstance(small, cst.Assign):
            target = small.targets[0].target
            name = target.value if isinstance(target, cst.Name) else None
        states = [a.value for a in value.args[2:4]]
        residual = states[1] if len(states) == 2 else None
        taps.append(
            Tap(
                style="helper",
                collects_into=name or "",
                value=", ".join(code(s) for s in states),
                reads=tuple(sorted({n for s in states for n in _reads(s)})),
                residual_guarded=True,
                adds_residual=residual is not None
                and not (isinstance(residual, cst.Name) and residual.value == "None"),
            )
        )
    return taps


def _reads(value: cst.BaseExpression) -> tuple[str, ...]:
    """Plain names read by an expression (not attributes, not `None`/`True`/`False`)."""
    found: set[str] = set()

    class _Names(cst.CSTVisitor):
        def visit_Attribute(self, node: cst.Attribute) -> bool:
            node.value.visit(self)
            return False

        def visit_Arg(self, node: cst.Arg) -> bool:
            node.value.visit(self)  # not the keyword's name
            return False

        def visit_Name(self, node: cst.Name) -> None:
            if node.value not in ("None", "True", "False"):
                found.add(node.value)

    value.visit(_Names())
    return tuple(sorted(found))


def _adds(value: cst.BaseExpression) -> bool:
    """The value is a sum (`hidden_states + residual`), in either branch of a conditional."""
    if isinstance(value, cst.IfExp):
        return _adds(value.body) or _adds(value.orelse)
    return isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Add)


def _guards_residual(value: cst.BaseExpression) -> bool:
    """True unless the value adds a residual that is None on the first rank's first layer."""
    text = code(value)
    if "residual" not in text:
        return True
    return isinstance(value, cst.IfExp) or "is not None" in text or "is None" in text
