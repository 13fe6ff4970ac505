"""Class hierarchies across files: base classes as written (names, or calls of class
factories such as `as_embedding_model(LlamaForCausalLM)`) and C3 method resolution orders."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from eagle3lint.index.model import FactorySummary, FileSummary
from eagle3lint.index.refs import ClassRef, ExternalRef, ModuleRef, Resolved

if TYPE_CHECKING:
    from eagle3lint.index.project import ProjectIndex

CALL_ARG = re.compile(r"[A-Za-z_][\w.]*")
CALL = re.compile(r"^([A-Za-z_][\w.]*)\((.*)\)$")
"""A base written as a call: `as_embedding_model(LlamaForCausalLM)`."""
BOUND = "<bound>"
"""Prefix of a factory class's base already resolved to the qualname of the argument."""


def resolve_base(index: ProjectIndex, module: str, text: str, _depth: int = 0) -> Resolved:
    """A base class as written in `module`: a name, or a call of a class factory."""
    if _depth > 20:
        return ExternalRef(text)
    if text.startswith(BOUND):
        owner, _, name = text.removeprefix(BOUND).rpartition(".")
        return index.resolve(owner, name, _depth + 1)
    call = CALL.match(text)
    if call is None:
        return index.resolve_dotted(module, text.split("[")[0], _depth)
    found = _factory_class(index, module, call[1], call[2].strip(), _depth + 1)
    return found or ExternalRef(text)


def _factory_class(
    index: ProjectIndex, module: str, callee: str, argument: str, _depth: int
) -> ClassRef | None:
    """`factory(Arg)` → the class the factory builds, with its parameter bound to Arg."""
    found = _resolve_factory(index, module, callee)
    if found is None or "," in argument or "=" in argument:
        return None
    file, factory = found
    arg = resolve_base(index, module, argument, _depth)
    if not isinstance(arg, ClassRef):
        return None
    param = re.compile(rf"\b{re.escape(factory.params[0])}\b")
    bound = BOUND + arg.qualname
    cls = dataclasses.replace(
        factory.cls,
        name=f"{factory.cls.name}[{arg.qualname}]",
        bases=[param.sub(lambda _: bound, b) for b in factory.cls.bases],
    )
    return ClassRef(file, cls)


def _resolve_factory(
    index: ProjectIndex, module: str, text: str, depth: int = 0
) -> tuple[FileSummary, FactorySummary] | None:
    summary = index.summary(module)
    if summary is None or depth > 20:
        return None
    head, *rest = text.split(".")
    if rest:
        owner = index.resolve(module, head)
        if isinstance(owner, ModuleRef) and len(rest) == 1:
            return _resolve_factory(index, owner.module, rest[0], depth + 1)
        return None
    if head in summary.factories:
        return summary, summary.factories[head]
    ref = index.imported(summary, head)
    if ref is not None and ref.name:
        return _resolve_factory(index, ref.module, ref.name, depth + 1)
    return None


def _key(item: ClassRef | ExternalRef) -> str:
    return item.qualname if isinstance(item, ClassRef) else f"<external>{item.text}"


def c3(
    ref: ClassRef,
    bases: Callable[[ClassRef], list[ClassRef | ExternalRef]],
    known: Mapping[str, list[ClassRef | ExternalRef]],
    seen: frozenset[str] = frozenset(),
) -> list[ClassRef | ExternalRef]:
    """The C3 linearisation of `ref` over its resolved `bases`; external bases stay as opaque
    entries, and the MROs `known` already (by qualname) are reused."""
    if ref.qualname in seen:
        return [ref]
    seen = seen | {ref.qualname}
    direct = bases(ref)
    sequences: list[list[ClassRef | ExternalRef]] = []
    for base in direct:
        if not isinstance(base, ClassRef):
            sequences.append([base])
        else:
            found = known.get(base.qualname)
            sequences.append(found if found is not None else c3(base, bases, known, seen))
    sequences.append(list(direct))
    items = {_key(x): x for seq in sequences for x in seq}
    keys = [[_key(x) for x in seq] for seq in sequences if seq]
    result = [_key(ref)]
    while keys:
        for seq in keys:
            head = seq[0]
            if not any(head in other[1:] for other in keys):
                break
        else:
            # Inconsistent hierarchy (Python would refuse it); fall back to depth-first order.
            head = keys[0][0]
        if head not in result:
            result.append(head)
        keys = [rest for seq in keys if (rest := [k for k in seq if k != head])]
    return [ref, *(items[k] for k in result[1:])]
