"""Adding an interface base class to a model class."""

from __future__ import annotations

import libcst as cst

from eagle3lint.engines.vllm.names import PROTOCOL

from ._layout import (
    bracketed,
    has_magic_comma,
    insert_exploded,
    one_per_line,
    parse_statement,
    refuse_if_commented,
)
from ._nodes import find_class, last_name, replace
from .imports import ensure_interface_import


def add_base(
    module: cst.Module, class_name: str, base: str = PROTOCOL, *, relative: bool = True
) -> cst.Module:
    """Make `class_name` inherit from `base`, and import `base` from the interfaces module.

    The base goes right after `SupportsEagle` when the class has it, else after the other bases
    (before keywords such as `metaclass=`). Bases are then laid out as ruff-format would at
    vLLM's line length: on the `class` line, hugged on one indented line, or one per line; a list
    that is already one per line keeps its layout and comments. `relative` is passed on to
    `ensure_interface_import`. Nothing changes when the class already has the base.

    Refuses when the class is missing or defined twice, or when bases that need reflowing carry
    comments.
    """
    cls = find_class(module, class_name)
    new_cls = add_class_base(module, cls, base)
    if new_cls is cls:
        return module
    return ensure_interface_import(replace(module, cls, new_cls), base, relative=relative)


def add_class_base(module: cst.Module, cls: cst.ClassDef, base: str) -> cst.ClassDef:
    """`cls` with `base` added to its bases as `add_base` does, without touching imports.

    Returns `cls` itself when it already has the base.
    """
    names = [last_name(arg.value) for arg in cls.bases]
    if base in names:
        return cls
    index = names.index("SupportsEagle") + 1 if "SupportsEagle" in names else len(names)
    arguments = [*cls.bases, *cls.keywords]
    new_arg = cst.Arg(value=cst.Name(base))
    opening = None if cls.lpar is cst.MaybeSentinel.DEFAULT else cls.lpar.whitespace_after
    if one_per_line(opening, arguments):
        arguments = insert_exploded(arguments, index, new_arg, opening)
        return cls.with_changes(
            bases=arguments[: len(cls.bases) + 1], keywords=arguments[len(cls.bases) + 1 :]
        )
    refuse_if_commented(f"the bases of {cls.name.value!r}", cls.lpar, *arguments, cls.rpar)
    items = [
        module.code_for_node(arg.with_changes(comma=cst.MaybeSentinel.DEFAULT)) for arg in arguments
    ]
    items.insert(index, base)
    # Model classes are module-level, so the header starts at column zero.
    header = bracketed(
        f"class {cls.name.value}(",
        items,
        "):",
        column=0,
        hug=True,
        magic_comma=has_magic_comma(arguments),
    )
    parsed = parse_statement(module, f"{header}\n{module.default_indent}pass\n")
    assert isinstance(parsed, cst.ClassDef)
    return cls.with_changes(
        lpar=parsed.lpar,
        bases=parsed.bases,
        keywords=parsed.keywords,
        rpar=parsed.rpar,
        whitespace_after_name=parsed.whitespace_after_name,
        whitespace_before_colon=parsed.whitespace_before_colon,
    )
