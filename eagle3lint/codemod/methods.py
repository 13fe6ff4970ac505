"""Adding and renaming the EAGLE-3 methods of a model class."""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst
import libcst.matchers as m

from eagle3lint.engines.vllm.names import LANGUAGE_MODEL_ATTR, SETTER
from eagle3lint.index.extract_classes import is_stub_body

from ._layout import BLANK_LINE, parse_statement
from ._nodes import (
    class_body,
    find_class,
    method_index,
    method_name,
    replace,
    with_body,
)
from .errors import CodemodRefused


def add_aux_methods(
    module: cst.Module, class_name: str, *, getter_name: str, inner_attr: str = "model"
) -> cst.Module:
    """Give a causal-LM class the EAGLE-3 methods that reach into its decoder `self.<inner_attr>`.

    Adds, as vLLM's llama.py and deepseek_v2.py do::

        def set_aux_hidden_state_layers(self, layers: tuple[int, ...]) -> None:
            self.model.aux_hidden_state_layers = layers

        def <getter_name>(self) -> tuple[int, ...]:
            num_layers = len(self.model.layers)
            return (2, num_layers // 2, num_layers - 3)

    `getter_name` is `get_eagle3_aux_hidden_state_layers` up to vLLM 0.17 and
    `get_eagle3_default_aux_hidden_state_layers` from 0.18. They go after `__init__` and the
    methods right after it that `__init__` calls as `self.name(...)` (`set_moe_parameters` in
    deepseek_v2.py), or at the end of a class without `__init__`. A method already defined is
    skipped; when only one of the two exists, the other is put next to it.

    An empty `inner_attr` means the class is the decoder itself (the bare decoder a wrapper
    holds as its language model): the methods then read and set its own attributes.

    Refuses when the class is missing.
    """
    decoder = f"self.{inner_attr}" if inner_attr else "self"
    setter = f"""
def {SETTER}(self, layers: tuple[int, ...]) -> None:
    {decoder}.aux_hidden_state_layers = layers
"""
    getter = f"""
def {getter_name}(self) -> tuple[int, ...]:
    num_layers = len({decoder}.layers)
    return (2, num_layers // 2, num_layers - 3)
"""
    return _insert_pair(module, class_name, (SETTER, setter), (getter_name, getter), _after_init)


def add_delegating_methods(
    module: cst.Module,
    class_name: str,
    *,
    getter_name: str,
    language_model_attr: str = LANGUAGE_MODEL_ATTR,
) -> cst.Module:
    """Give a multimodal wrapper EAGLE-3 methods that forward to its language model.

    Adds, as vLLM 0.18's kimi_k25.py does::

        def set_aux_hidden_state_layers(self, layers: tuple[int, ...]) -> None:
            self.language_model.set_aux_hidden_state_layers(layers)

        def <getter_name>(self) -> tuple[int, ...]:
            return self.language_model.<getter_name>()

    They go before `load_weights`, or at the end of the class without it. A method already
    defined is skipped; when only one of the two exists, the other is put next to it.

    Refuses when the class is missing.
    """
    setter = f"""
def {SETTER}(self, layers: tuple[int, ...]) -> None:
    self.{language_model_attr}.{SETTER}(layers)
"""
    getter = f"""
def {getter_name}(self) -> tuple[int, ...]:
    return self.{language_model_attr}.{getter_name}()
"""
    return _insert_pair(
        module, class_name, (SETTER, setter), (getter_name, getter), _before_load_weights
    )


ALIAS_COMMENT = "# Callers of the old name (a wrapper delegating to this model) keep working."


def rename_method(module: cst.Module, class_name: str, old: str, new: str) -> cst.Module:
    """Rename the method `old` of `class_name` to `new`, with the class's own `self.old` uses,
    and keep `old` as an alias of it.

    Callers elsewhere may still use the old name: a wrapper's getter delegating to its language
    model (`self.language_model.old()`, vLLM 0.18's Kimi-K2.5) or code outside the tree. The
    alias keeps every such call working, so the rename can break no caller::

        def new(self) -> tuple[int, ...]: ...

        # Callers of the old name (a wrapper delegating to this model) keep working.
        old = new

    The renamed method's own delegation (`self.language_model.old()`) is renamed too: once the
    runner calls it, it must reach the method the runner would call on the language model, as
    the language model may be a class that never defined `old` (vLLM 0.33.0's Pixtral, whose
    checkpoint chooses Mistral, which has only the protocol's default under the new name).

    Nothing changes when `old` is not a method and `new` is (already renamed). Refuses when the
    class is missing, when it defines both methods, or neither.
    """
    cls = find_class(module, class_name)
    body = class_body(cls)
    at = method_index(body, old)
    has_new = method_index(body, new) is not None
    if at is not None and has_new:
        raise CodemodRefused(f"{class_name} already defines {new}; not renaming {old} onto it")
    if at is None:
        if has_new:
            return module
        raise CodemodRefused(f"{class_name} defines no method {old!r} to rename")
    renamed = cls.visit(_MethodRenamer(old, new))
    assert isinstance(renamed, cst.ClassDef)
    alias = parse_statement(module, f"{old} = {new}\n").with_changes(
        leading_lines=[BLANK_LINE, cst.EmptyLine(indent=True, comment=cst.Comment(ALIAS_COMMENT))]
    )
    body = class_body(renamed)
    return replace(module, cls, with_body(renamed, [*body[: at + 1], alias, *body[at + 1 :]]))


class _MethodRenamer(cst.CSTTransformer):
    """Renames `def old` directly in the class body, `self.old` anywhere in it, and `x.old` for
    any other `x` but `super()` inside the renamed method (its delegation)."""

    def __init__(self, old: str, new: str) -> None:
        super().__init__()
        self._old = old
        self._new = new
        self._depth = 0
        self._in_renamed = False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self._depth += 1
        if self._depth == 1 and node.name.value == self._old:
            self._in_renamed = True
        return True

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef:
        self._depth -= 1
        if self._depth == 0 and original_node.name.value == self._old:
            self._in_renamed = False
            return updated_node.with_changes(name=cst.Name(self._new))
        return updated_node

    def leave_Attribute(
        self, original_node: cst.Attribute, updated_node: cst.Attribute
    ) -> cst.Attribute:
        if not m.matches(original_node, m.Attribute(attr=m.Name(self._old))):
            return updated_node
        if m.matches(original_node.value, m.Name("self")):
            return updated_node.with_changes(attr=cst.Name(self._new))
        if self._in_renamed and not m.matches(original_node.value, m.Call(func=m.Name("super"))):
            # `super().old()` stays: a base keeps `old` (its own, or the alias of its rename).
            return updated_node.with_changes(attr=cst.Name(self._new))
        return updated_node


def _after_init(body: list[cst.BaseStatement]) -> int:
    """Index after `__init__` and the methods right after it that it calls as `self.name(...)`."""
    init = method_index(body, "__init__")
    if init is None:
        return len(body)
    called = {
        attribute.attr.value
        for attribute in m.findall(body[init], m.Attribute(value=m.Name("self"), attr=m.Name()))
        if isinstance(attribute, cst.Attribute)
    }
    index = init + 1
    while index < len(body) and method_name(body[index]) in called:
        index += 1
    return index


def _before_load_weights(body: list[cst.BaseStatement]) -> int:
    index = method_index(body, "load_weights")
    return len(body) if index is None else index


def _insert_pair(
    module: cst.Module,
    class_name: str,
    setter: tuple[str, str],
    getter: tuple[str, str],
    anchor: Callable[[list[cst.BaseStatement]], int],
) -> cst.Module:
    """Insert the setter and getter methods (name, code) that `class_name` does not define yet.

    Both go at `anchor(body)`, setter first; when one of them exists, the other goes next to
    it (the setter before the getter). Methods are separated by one blank line.
    """
    cls = find_class(module, class_name)
    body = class_body(cls)
    replaced = False
    for name, code in (setter, getter):
        at = method_index(body, name)
        stub = body[at] if at is not None else None
        if isinstance(stub, cst.FunctionDef) and is_stub_body(stub.body):
            # A stub (`raise NotImplementedError`, `...`) does nothing the new method would
            # lose: it takes the stub's place.
            method = parse_statement(module, code.lstrip("\n"))
            body[at] = method.with_changes(leading_lines=stub.leading_lines)
            replaced = True
    setter_index = method_index(body, setter[0])
    getter_index = method_index(body, getter[0])
    if setter_index is None and getter_index is None:
        index, missing = anchor(body), [setter, getter]
    elif setter_index is None:
        index, missing = getter_index, [setter]
    elif getter_index is None:
        index, missing = setter_index + 1, [getter]
    elif replaced:
        return replace(module, cls, with_body(cls, body))
    else:
        return module
    methods = [
        parse_statement(module, code.lstrip("\n")).with_changes(leading_lines=[BLANK_LINE])
        for _, code in missing
    ]
    if index == 0:
        # ruff-format keeps no blank line at the start of a block, and one between methods.
        methods[0] = methods[0].with_changes(leading_lines=[])
        body[0] = body[0].with_changes(leading_lines=[BLANK_LINE, *body[0].leading_lines])
    return replace(module, cls, with_body(cls, body[:index] + methods + body[index:]))
