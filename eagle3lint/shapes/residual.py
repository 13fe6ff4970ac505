"""What a decoder layer's `forward` returns: the residual convention a tap must follow.

* `delta` (Llama style): `return hidden_states, residual` where `hidden_states` is the
  sublayer's output and the next layer's fused add-norm (`norm(hidden_states, residual)`)
  adds the residual. The stream entering layer k is `hidden_states + residual`.
* `stream`: the layer adds (or folds) the residual itself, `hidden_states = residual +
  hidden_states` is the last binding of what it returns (PhiMoE, Exaone4, Cohere, StableLM).
  The stream entering layer k is `hidden_states`; adding the residual counts it twice.
* `unknown`: neither could be read; a tap cannot be written safely.
"""

from __future__ import annotations

import libcst as cst

from .model import DELTA, STREAM, UNKNOWN, LayerConvention
from .syntax import assigned_names, statements_of


def classify(forward: cst.FunctionDef) -> LayerConvention:
    """Classify a decoder layer's `forward` by the last binding of the hidden state it returns."""
    body = list(forward.body.body) if isinstance(forward.body, cst.IndentedBlock) else []
    if not body or not _is_return(body[-1]):
        return LayerConvention(UNKNOWN, "forward does not end with a return")
    returned = _returned_names(body[-1])
    if returned is None:
        return LayerConvention(UNKNOWN, "forward returns neither a name nor a pair of names")
    hidden = returned[0]
    for stmt in reversed(body[:-1]):
        inner = [stmt] if isinstance(stmt, cst.SimpleStatementLine) else statements_of(stmt)
        kinds = {_binding(s, hidden) for s in inner} - {None}
        if not kinds or kinds == {"scale"}:
            # Scaling in place (`hidden_states *= 1 / factor`) keeps the convention.
            continue
        if "add" in kinds:
            if len(kinds) > 1 or stmt not in inner:
                return LayerConvention(UNKNOWN, f"`{hidden}` is summed on some paths only")
            if _reads_residual(stmt, returned):
                return LayerConvention(
                    STREAM, f"`{hidden}` is summed with the residual in the layer"
                )
            if len(returned) == 2:
                # LongCat-Flash adds its MoE branch to the second MLP's output: a sum of
                # sublayer outputs, with the residual still returned beside it.
                return LayerConvention(
                    DELTA, f"`{hidden}` sums sublayer outputs; the residual is returned beside it"
                )
            return LayerConvention(UNKNOWN, f"`{hidden}` is a sum that reads no residual")
        if len(returned) == 2:
            return LayerConvention(
                DELTA, f"`{hidden}` is a sublayer output; the residual is returned beside it"
            )
        return LayerConvention(UNKNOWN, f"`{hidden}` is returned alone and not a sum")
    return LayerConvention(UNKNOWN, f"`{hidden}` is returned as received")


def _binding(stmt: cst.BaseStatement, name: str) -> str | None:
    """How a simple statement binds `name`: `add`, `scale` (in-place non-add), `other`, None."""
    if not isinstance(stmt, cst.SimpleStatementLine) or name not in assigned_names(stmt):
        return None
    small = stmt.body[-1]
    if isinstance(small, cst.AugAssign):
        return "add" if isinstance(small.operator, cst.AddAssign) else "scale"
    value = small.value if isinstance(small, cst.Assign) else None
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Add):
        return "add"
    return "other"


def _reads_residual(stmt: cst.BaseStatement, returned: tuple[str, ...]) -> bool:
    """Whether the sum in `stmt` reads the residual: the name returned beside the hidden
    state, or any name that says it is one (`residual`, `residual_mlp`)."""
    residual = returned[1] if len(returned) == 2 else None
    names: set[str] = set()

    class _Names(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            names.add(node.value)

    assert isinstance(stmt, cst.SimpleStatementLine)
    small = stmt.body[-1]
    value = small.value if isinstance(small, cst.Assign | cst.AugAssign) else None
    if value is not None:
        value.visit(_Names())
    return any(name == residual or "residual" in name for name in names)


def _is_return(stmt: cst.BaseStatement) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Return)
    )


def _returned_names(stmt: cst.BaseStatement) -> tuple[str, ...] | None:
    assert isinstance(stmt, cst.SimpleStatementLine)
    value = stmt.body[0].value if isinstance(stmt.body[0], cst.Return) else None
    if isinstance(value, cst.Name):
        return (value.value,)
    if isinstance(value, cst.Tuple) and len(value.elements) == 2:
        names = tuple(e.value.value for e in value.elements if isinstance(e.value, cst.Name))
        return names if len(names) == 2 else None
    return None
