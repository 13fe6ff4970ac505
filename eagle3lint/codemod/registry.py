"""Repair type → codemod: the one table `fix` looks a repair up in.

Built-in codemods are listed here, in the order edits are applied within one file. A plugin adds
its own through the `eagle3lint.repairs` entry-point group, pointing at a mapping of its
`Repair` subclasses to codemods (or at a module holding one as `CODEMODS`). A plugin that fails
to load or declares something malformed is reported and skipped; a plugin codemod that raises
refuses its repair, as a codemod that declines a shape does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cache
from importlib.metadata import entry_points
from typing import Any

import libcst as cst

from eagle3lint.codemod.accessors import add_embed_head_accessor
from eagle3lint.codemod.gate import add_gate_entry
from eagle3lint.codemod.methods import add_aux_methods, add_delegating_methods, rename_method
from eagle3lint.codemod.proposer import add_proposer_branch
from eagle3lint.codemod.protocol import add_base
from eagle3lint.codemod.taps import add_forward_taps, add_mixin_taps
from eagle3lint.errors import CodemodRefused
from eagle3lint.repairs import (
    AddAuxMethods,
    AddDelegatingMethods,
    AddEmbedHeadAccessor,
    AddForwardTaps,
    AddGateEntry,
    AddMixinTaps,
    AddProposerBranch,
    AddProtocolBase,
    RenameMethod,
    Repair,
)
from eagle3lint.sandbox import DEFAULT_RULE_TIMEOUT, RuleTimeout, plugin_call

ENTRY_POINT_GROUP = "eagle3lint.repairs"

Codemod = Callable[[cst.Module, Any, bool], cst.Module]
"""Applies one repair to a parsed file: `(module, repair, relative) -> module`. `relative` says
whether the file sits beside `interfaces.py`, so that an import it adds is `from .interfaces`.
Returns the module unchanged when the change is already there; raises `CodemodRefused` when the
code has a shape it cannot rewrite safely."""


def _protocol_base(m: cst.Module, r: AddProtocolBase, relative: bool) -> cst.Module:
    return add_base(m, r.cls, relative=relative)


def _aux_methods(m: cst.Module, r: AddAuxMethods, _: bool) -> cst.Module:
    return add_aux_methods(m, r.cls, getter_name=r.getter, inner_attr=r.inner)


def _delegating_methods(m: cst.Module, r: AddDelegatingMethods, _: bool) -> cst.Module:
    return add_delegating_methods(m, r.cls, getter_name=r.getter)


def _forward_taps(m: cst.Module, r: AddForwardTaps, _: bool) -> cst.Module:
    return add_forward_taps(m, r.cls, stream=r.stream, inherited_init=r.inherited_init)


def _mixin_taps(m: cst.Module, r: AddMixinTaps, relative: bool) -> cst.Module:
    return add_mixin_taps(m, r.cls, stream=r.stream, relative=relative)


def _rename(m: cst.Module, r: RenameMethod, _: bool) -> cst.Module:
    return rename_method(m, r.cls, r.old, r.new)


def _gate_entry(m: cst.Module, r: AddGateEntry, _: bool) -> cst.Module:
    return add_gate_entry(m, r.model_type)


def _embed_head_accessor(m: cst.Module, r: AddEmbedHeadAccessor, _: bool) -> cst.Module:
    return add_embed_head_accessor(m, r.cls, embed=r.embed, head=r.head)


def _proposer_branch(m: cst.Module, r: AddProposerBranch, _: bool) -> cst.Module:
    return add_proposer_branch(m, r.cls, r.attribute)


BUILTIN: Mapping[type[Repair], Codemod] = {
    AddProtocolBase: _protocol_base,
    RenameMethod: _rename,
    AddAuxMethods: _aux_methods,
    AddDelegatingMethods: _delegating_methods,
    AddForwardTaps: _forward_taps,
    AddMixinTaps: _mixin_taps,
    AddGateEntry: _gate_entry,
    AddProposerBranch: _proposer_branch,
    AddEmbedHeadAccessor: _embed_head_accessor,
}
"""The built-in codemods, in the order edits are applied within one file (the base before the
methods, as vLLM's own changes read; a getter renamed before the methods are added, which then
find it under its new name instead of adding a second one)."""


def declaration_problem(
    repair_type: object, codemod: object, known: Mapping[type[Repair], Codemod]
) -> str | None:
    """What is wrong with one entry a repair plugin declares, or None when it can be used."""
    if not (isinstance(repair_type, type) and issubclass(repair_type, Repair)):
        return f"{repair_type!r} is not a Repair subclass"
    kind = repair_type.kind
    if not isinstance(kind, str) or not kind:
        return f"repair {repair_type.__name__} has no kind"
    if not callable(codemod):
        return f"the codemod of {kind} is {codemod!r}, not a function"
    taken = [t for t in known if t.kind == kind]
    if taken:
        return f"repair kind {kind} is already applied by {taken[0].__module__}"
    return None


@cache
def load_codemods() -> tuple[Mapping[type[Repair], Codemod], tuple[str, ...]]:
    """Every codemod (built-ins first, then plugins by entry-point name), and a message for each
    plugin or entry that was refused. Read once per process."""
    found: dict[type[Repair], Codemod] = dict(BUILTIN)
    broken: list[str] = []
    for point in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda p: p.name):
        where = f"repair plugin {point.name} ({point.value})"
        try:
            with plugin_call(DEFAULT_RULE_TIMEOUT):
                loaded = point.load()
            declared = dict(loaded if isinstance(loaded, Mapping) else loaded.CODEMODS)
        except (Exception, SystemExit, RuleTimeout) as exc:  # third-party code
            broken.append(f"{where} failed to load: {exc!r}")
            continue
        for repair_type, codemod in declared.items():
            problem = declaration_problem(repair_type, codemod, found)
            if problem is not None:
                broken.append(f"{where}: {problem}; not loaded")
                continue
            found[repair_type] = _guarded(repair_type.kind, codemod)
    return found, tuple(broken)


def _guarded(kind: str, codemod: Codemod) -> Codemod:
    """A plugin's codemod whose crash refuses its repair instead of stopping `fix`."""

    def run(module: cst.Module, repair: Repair, relative: bool) -> cst.Module:
        try:
            with plugin_call(DEFAULT_RULE_TIMEOUT):
                result = codemod(module, repair, relative)
        except CodemodRefused:
            raise
        except (Exception, SystemExit, RuleTimeout) as exc:  # third-party code
            raise CodemodRefused(f"the codemod of {kind} failed: {exc!r}") from exc
        if not isinstance(result, cst.Module):
            raise CodemodRefused(f"the codemod of {kind} returned {type(result).__name__}")
        return result

    return run


def apply_repair(module: cst.Module, repair: Repair, relative: bool) -> cst.Module:
    """`module` with `repair` applied by its registered codemod; CodemodRefused when there is
    none or it declines."""
    codemods, broken = load_codemods()
    codemod = codemods.get(type(repair))
    if codemod is None:
        why = f" (plugins not loaded: {'; '.join(broken)})" if broken else ""
        raise CodemodRefused(f"no codemod for {repair.kind}{why}")
    return codemod(module, repair, relative)


def edit_order(repair: Repair) -> tuple[int, tuple[tuple[str, str], ...]]:
    """Where `repair` goes among the edits of one file: registry order, then its parameters."""
    order = list(load_codemods()[0])
    kind = order.index(type(repair)) if type(repair) in order else len(order)
    return kind, repair.params
