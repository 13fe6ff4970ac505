"""Which branches of a module-level `if` run: on which platform (`current_platform.is_x()`),
under `TYPE_CHECKING`, on this interpreter's `sys.version_info`, or only at run time."""

from __future__ import annotations

import operator
import sys
from collections.abc import Callable, Sequence

import libcst as cst

from eagle3lint.shapes.syntax import dotted

CUDA = "cuda"
"""The platform whose code path a verdict is about."""

UNDECIDED = -1
"""`branch_taken` for a chain whose outcome depends on something only known at run time."""


def _evaluate(test: cst.BaseExpression, platform: str) -> bool | None:
    """The value of an import-time condition on `platform` at run time: `TYPE_CHECKING` is
    False, `current_platform.is_x()` is whether x is `platform`, `sys.version_info` compares
    as this interpreter's; None when not decidable."""
    if isinstance(test, cst.Name | cst.Attribute) and dotted(test) in _TYPE_CHECKING:
        return False
    version = _version_test(test)
    if version is not None:
        return version
    tested = platform_test(test)
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


def branch_taken(
    branches: list[tuple[cst.BaseExpression | None, Sequence[cst.CSTNode]]], platform: str
) -> int | None:
    """Index of the branch that runs on `platform`; None if none does, `UNDECIDED` if unknown."""
    for i, (test, _) in enumerate(branches):
        if test is None:
            return i
        value = _evaluate(test, platform)
        if value is None:
            return UNDECIDED
        if value:
            return i
    return None


def platforms_in(test: cst.BaseExpression) -> set[str]:
    """Platforms a condition tests for (`is_rocm()` → rocm)."""
    found = platform_test(test)
    if found is not None:
        return {found}
    if isinstance(test, cst.UnaryOperation):
        return platforms_in(test.expression)
    if isinstance(test, cst.BooleanOperation):
        return platforms_in(test.left) | platforms_in(test.right)
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


def platform_test(test: cst.BaseExpression) -> str | None:
    """`current_platform.is_rocm()` → "rocm", `current_platform.device_type == "tpu"` → "tpu";
    None for any other condition."""
    if isinstance(test, cst.Call) and not test.args and isinstance(test.func, cst.Attribute):
        attr = test.func.attr.value
        owner = dotted(test.func.value) or ""
        if attr.startswith("is_") and owner.split(".")[-1] == "current_platform":
            return attr.removeprefix("is_")
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        target = test.comparisons[0]
        name = dotted(test.left) or ""
        if (
            isinstance(target.operator, cst.Equal)
            and isinstance(target.comparator, cst.SimpleString)
            and name.split(".")[-2:] == ["current_platform", "device_type"]
        ):
            return target.comparator.evaluated_value
    return None
