"""The facts the index keeps about one source file.

A `FileSummary` is everything the rules and the contract reader need to know about a file,
extracted once per file content and cached as JSON. Nothing in it refers to a syntax tree, so
it can cross process boundaries and be stored safely (JSON, never pickle: a cache entry is data,
not code).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Any, TypeVar

from eagle3lint.errors import SummaryFormatError
from eagle3lint.shapes.model import LayerConvention, LayerLoop

T = TypeVar("T")

SUMMARY_FORMAT = 21
"""Bumped whenever the shape or meaning of a summary changes: old cache entries are then ignored."""


@dataclass(slots=True)
class ImportRef:
    """Where a local name comes from: `module` and, for `from m import n`, the `name` in it."""

    module: str
    name: str | None = None
    written: str = ""
    """For a relative import, the module as written (`.interfaces`, `..`): an out-of-tree copy
    of a model file resolves it in its tree's models package (`ProjectIndex.relative_home`)."""


@dataclass(slots=True)
class Span:
    line: int
    column: int = 0


@dataclass(slots=True)
class MethodSummary:
    name: str
    line: int
    column: int
    is_stub: bool
    """Body is only `...`, `pass`, a docstring or `raise NotImplementedError`: no implementation."""
    delegates_to: str | None = None
    """`self.<attr>.<same name>(...)` is the whole body: the attribute it delegates to."""
    self_attr_assigns: list[str] = field(default_factory=list)
    """`self.a.b = ...` targets inside the body, as dotted text without `self.`."""
    calls_self: list[str] = field(default_factory=list)
    """Names of `self.<name>(...)` calls in the body."""
    returns_call: str | None = None
    """Dotted callee of the first `return <callee>(...)` (factory methods such as `_init_model`)."""
    required_args: int = 0
    """Parameters after `self` without a default: what a call must pass."""
    decorators: list[str] = field(default_factory=list)
    """Its decorators as dotted names, as written (`capture_outputs` for
    `@capture_outputs(tie_last_hidden_states=False)`)."""
    raises: str | None = None
    """The exception a `raise` among the body's own statements (under no condition) raises:
    the method never returns (a platform stub's `__init__`)."""
    returns_tuple: str | None = None
    """The tuple literal the body ends by returning, whitespace collapsed
    (`(2, num_layers // 2, num_layers - 3)`)."""


@dataclass(slots=True)
class AttrSummary:
    """A class-level attribute: `value` is dotted text when the value is a plain name."""

    line: int
    value: str | None = None
    has_value: bool = True
    keys: list[str] | None = None
    """The string keys of a dict literal value (a config's `attribute_map`); None otherwise."""


@dataclass(slots=True)
class InitAssign:
    """`self.<attr> = <value>` in `__init__` (directly or in a helper it calls)."""

    line: int
    callee: str | None = None
    """Dotted text of the callee when the value is a call: `DeepseekV2Model`, `self.model_cls`."""
    architectures: list[str] = field(default_factory=list)
    """String literals given as `architectures=[...]` (vLLM's `init_vllm_registered_model`)."""
    config_part: str | None = None
    """The checkpoint's sub-config the model is built from (`hf_config=config.text_config`)
    when no architectures are given: the class is the one that sub-config names."""
    param: str | None = None
    """The `__init__` parameter called (`model_type: type[M] = M`, `self.model =
    model_type(...)`): `callee` is its default, what vLLM's loader builds, as it passes only
    `vllm_config` and `prefix`; a subclass may pass another to `super().__init__`."""


@dataclass(slots=True)
class TapSummary:
    """One place where a forward collects an auxiliary hidden state."""

    line: int
    column: int
    style: str
    """`explicit` (`if idx in self.aux_hidden_state_layers: aux.append(v)`), `helper` or `dict`
    (`captured[idx] = v` in a loop handing the aux test on)."""
    value_expr: str
    """The captured value's source (empty for the helper, which guards `residual` itself)."""
    residual_guarded: bool
    """The captured value copes with `residual is None` (first pipeline rank, layer 0)."""
    before_layer: bool
    adds_residual: bool = False
    """The value adds a second name (the residual) to the hidden state."""
    unbound: list[str] = field(default_factory=list)
    """Names the value reads that are not bound on every path reaching the tap."""


@dataclass(slots=True)
class LoopSummary:
    """A `for` loop over `self.layers` in a forward."""

    line: int
    column: int
    shape: LayerLoop
    """The loop as `eagle3lint.shapes.loop` reads it: spelling, index, layer call, rewritable."""
    taps: list[TapSummary] = field(default_factory=list)


@dataclass(slots=True)
class ForwardSummary:
    line: int
    column: int
    loops: list[LoopSummary] = field(default_factory=list)
    aux_list_initialised: bool = False
    pre_loop_taps: list[TapSummary] = field(default_factory=list)
    post_loop_taps: list[TapSummary] = field(default_factory=list)
    """Explicit taps after the layer loop (`if self.end_layer in ...`): the last layer's output."""
    returns_aux_tuple: bool = False
    delegates_to: str | None = None
    """`self.<attr>(...)` result returned as-is: the forward of that attribute does the work."""
    loop_helper: str | None = None
    """The method of the class that runs the layer loop when forward calls it (`_run_layers`)."""
    ends_with_return_name: bool = False
    """The last statement is `return <name>`: a final aux return can be put before it."""
    returns_super: bool = False
    """With no layer loop of its own, it returns `super().forward(...)`: the next forward in the
    MRO runs the layers (vLLM's MistralModel over LlamaModel)."""


UNKNOWN_BUILDER = "?"
"""A `ModuleListSummary.classes` entry for an element built by something not read here."""


@dataclass(slots=True)
class ModuleListSummary:
    """`self.<name> = nn.ModuleList(...)` in `__init__`: what builds its elements."""

    classes: list[str] = field(default_factory=list)
    """The capitalised callees that build the elements, as written; a class picked from a map
    shows as `MAP[]` (`ALL_DECODER_LAYER_TYPES[config.layer_types[i]](...)`)."""
    count: str | None = None
    """What the `range(...)` building the elements runs to, as written
    (`config.num_hidden_layers`); None when they are not built over a range."""


@dataclass(slots=True)
class ClassSummary:
    name: str
    line: int
    column: int
    bases: list[str]
    """Base classes as dotted text, as written (`nn.Module`, `interfaces.SupportsEagle3`)."""
    is_protocol: bool = False
    methods: dict[str, MethodSummary] = field(default_factory=dict)
    attrs: dict[str, AttrSummary] = field(default_factory=dict)
    init_assigns: dict[str, InitAssign] = field(default_factory=dict)
    init_consumes: list[str] = field(default_factory=list)
    """Named `__init__` parameters it neither stores under their own name (`self.k = ...`,
    `setattr(self, "k", ...)`) nor passes on to `super().__init__` as `k=`: a config.json key of
    that name is consumed by the parameter, where transformers' `PretrainedConfig` would have set
    it as an attribute."""
    assigned_attrs: list[str] = field(default_factory=list)
    """Every `self.<name>` some method of the class assigns, sorted: an attribute a base's
    helper sets for a subclass's `__init__` is in none of `init_assigns`."""
    forward: ForwardSummary | None = None
    assigns_layers: bool = False
    """`__init__` sets `self.layers` (directly or by tuple unpacking)."""
    layer_classes: list[str] = field(default_factory=list)
    """Capitalised names (as written) in what `__init__` assigns to `self.layers`: the decoder
    layer classes, or maps of them."""
    module_lists: dict[str, ModuleListSummary] = field(default_factory=dict)
    """The `nn.ModuleList`s `__init__` assigns to `self`, by attribute."""
    language_model_marks: list[str] = field(default_factory=list)
    """What `__init__` assigns to `self` inside `with self._mark_language_model(...)`: the
    language model vLLM's default `get_language_model` returns (their common prefix)."""
    layer_params: dict[str, str] = field(default_factory=dict)
    """`__init__` parameters that pick the layer class there, with their defaults as written."""
    super_init_classes: dict[str, str] = field(default_factory=dict)
    """Class-valued keywords this `__init__` passes to `super().__init__` (`layer_type=X`)."""
    layer_convention: LayerConvention | None = None
    """What `forward` returns, read as a decoder layer's: its residual convention."""
    config_types: list[str] = field(default_factory=list)
    """Names in the annotations that say what `__init__` stores as `self.config` (`self.config:
    X`, or a local `v: X` it stores), else what its `config` is annotated with."""
    renamed_layers: list[str] = field(default_factory=list)
    """Layer indices past the layer count that `__init__` names modules with, as written
    (`shapes.layer_names`): vLLM's EAGLE-3 head takes the first of those names."""

    def held_callee(self, name: str) -> str | None:
        """What `self.<name>(...)` calls when this class defines `name`: the class an attribute
        holds (`model_cls = DeepseekV2Model`) or what a method returns a call of
        (`return DeepseekV2Model(...)`), as written; None when this class does not say."""
        attr = self.attrs.get(name)
        if attr is not None and attr.value:
            return attr.value
        method = self.methods.get(name)
        return method.returns_call if method is not None else None


@dataclass(slots=True)
class FactorySummary:
    """A module-level function that defines a class deriving from one of its parameters and
    returns it (vLLM's `as_embedding_model(cls)`): a call of it is a subclass of the argument."""

    params: list[str]
    cls: ClassSummary
    """The class it returns; bases name the parameters as written."""


@dataclass(slots=True)
class DictEntry:
    key: str
    module: str
    cls: str


@dataclass(slots=True)
class DictLiteral:
    """A module-level dict literal whose values are `(module, class)` string pairs."""

    line: int
    entries: list[DictEntry] = field(default_factory=list)
    splats: list[str] = field(default_factory=list)
    """Names merged in with `**name`, in order."""


@dataclass(slots=True)
class PlatformImport:
    platform: str
    local: str
    ref: ImportRef


@dataclass(slots=True)
class BodySpan:
    """Where a top-level class or function is: its first line (its first decorator's), the
    first line of its body and its last line."""

    name: str
    header: int
    start: int
    end: int


@dataclass(slots=True)
class FileSummary:
    path: str
    module: str
    imports: dict[str, ImportRef] = field(default_factory=dict)
    classes: dict[str, ClassSummary] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)
    """Module-level `Name = other.Name` bindings (class aliases)."""
    registry_dicts: dict[str, DictLiteral] = field(default_factory=dict)
    platform_imports: list[PlatformImport] = field(default_factory=list)
    """Imports chosen by `if current_platform.is_x(): ...` chains (vLLM's models packages)."""
    version: str | None = None
    """`__version__` when the file assigns it (vLLM's `_version.py`)."""
    lazy_exports: dict[str, str] = field(default_factory=dict)
    """Names a module-level `__getattr__` imports on first use, from a `{name: module}` dict."""
    config_reads: list[str] = field(default_factory=list)
    """Attribute names the file reads from config objects (`config.x`, `hf_config.x`)."""
    hf_config_types: list[str] = field(default_factory=list)
    """What the file passes to `get_hf_config(X)`: the config class vLLM checks it is given."""
    factories: dict[str, FactorySummary] = field(default_factory=dict)
    """Class factories defined at module level, by function name."""
    class_maps: dict[str, list[str]] = field(default_factory=dict)
    """Module-level dicts whose values are all names (`{"attention": AttentionLayer, ...}`)."""
    name_lists: dict[str, list[str]] = field(default_factory=dict)
    """Module-level lists and tuples whose items are all names (SGLang's `EntryClass = [A, B]`),
    with `name_lines` the line of each such assignment."""
    name_lines: dict[str, int] = field(default_factory=dict)
    bodies: list[BodySpan] = field(default_factory=list)
    """Where the bodies of the top-level classes are, for those that can be left unread
    (`index.skim`); empty in a summary of every class."""
    unread: list[str] = field(default_factory=list)
    """Top-level classes whose bodies were left unread: their entries in `classes` hold the
    header alone (name, position, bases). The index reads a body before it hands such a class
    out."""


def to_json(obj: Any) -> Any:
    """A summary (or any tree of dataclasses, such as the contract) as plain JSON data."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_json(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        return {k: to_json(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [to_json(v) for v in obj]
    if isinstance(obj, frozenset):
        return sorted(to_json(v) for v in obj)
    return obj


Builder = Callable[[Any], Any]

_SCALARS = (str, int, bool)
_MISSING = object()


def from_json(cls: type[T], data: Any) -> T:
    """Rebuild a summary (or the contract) from `to_json` output, checking every field's type
    on the way."""
    return _builder(cls)(data)


@cache
def _builder(tp: Any) -> Builder:
    """A function that checks and rebuilds JSON data of type `tp`.

    Built once per type: a warm run rebuilds hundreds of thousands of nodes, and inspecting
    type hints at each of them cost more than reading the JSON.
    """
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        (inner,) = [a for a in typing.get_args(tp) if a is not type(None)]
        build_inner = _builder(inner)
        return lambda data: None if data is None else build_inner(data)
    if origin is frozenset:
        build_members = _builder(tuple[typing.get_args(tp)[0], ...])
        return lambda data: frozenset(build_members(data))
    if origin in (tuple, list):
        item, *rest = typing.get_args(tp)
        if origin is tuple and rest != [Ellipsis]:
            raise TypeError(f"unsupported type {tp!r}")
        build_item = _builder(item)
        wrap = tuple if origin is tuple else list
        scalar = item if item in _SCALARS else None

        def build_sequence(data: Any) -> Any:
            if not isinstance(data, list):
                raise SummaryFormatError(f"expected a list, got {type(data).__name__}")
            if scalar is None:
                return wrap([build_item(v) for v in data])
            for value in data:  # checked here: a call per item cost more than the check
                if type(value) is not scalar:
                    build_item(value)  # raises, saying what was found
            return wrap(data)

        return build_sequence
    if origin is dict:
        build_value = _builder(typing.get_args(tp)[1])

        def build_dict(data: Any) -> Any:
            if not isinstance(data, dict):
                raise SummaryFormatError(f"expected an object, got {type(data).__name__}")
            return {str(k): build_value(v) for k, v in data.items()}

        return build_dict
    if dataclasses.is_dataclass(tp):
        return _dataclass_builder(tp)
    if tp in _SCALARS:

        def build_scalar(data: Any) -> Any:
            if type(data) is not tp:
                raise SummaryFormatError(f"expected {tp.__name__}, got {type(data).__name__}")
            return data

        return build_scalar
    raise TypeError(f"unsupported type {tp!r}")


def _dataclass_builder(tp: type) -> Builder:
    """A builder for dataclass `tp`, generated as one function: a warm run rebuilds tens of
    thousands of these objects, and a generic loop over the fields, calling a checker per
    scalar, was half of the run's time. Scalar types are tested inline (their builder only
    says what was wrong); nested types call
    their own builders, looked up on first use (the dataclasses refer to each other)."""
    hints = typing.get_type_hints(tp)
    namespace: dict[str, Any] = {"tp": tp, "Error": SummaryFormatError, "MISSING": _MISSING}
    lines = [
        "def build(data):",
        "    if not isinstance(data, dict):",
        f"        raise Error({f'expected an object for {tp.__name__}'!r})",
        "    kwargs = {}",
    ]
    for index, item in enumerate(dataclasses.fields(tp)):
        name, hint = item.name, hints[item.name]
        required = dataclasses.MISSING is item.default is item.default_factory
        lines.append(f"    value = data.get({name!r}, MISSING)")
        if required:
            lines += [
                "    if value is MISSING:",
                f"        raise Error({f'{tp.__name__}.{name} is missing'!r})",
            ]
        else:
            lines.append("    if value is not MISSING:")
        indent = "    " if required else "        "
        builder = f"build_{index}"
        scalar, optional = _scalar(hint)
        if scalar is not None:
            test = f"type(value) is not {scalar.__name__}"
            if optional:
                test = f"value is not None and {test}"
            namespace[builder] = _builder(hint)
            lines += [
                f"{indent}if {test}:",
                f"{indent}    {builder}(value)  # raises, saying what was found",
                f"{indent}kwargs[{name!r}] = value",
            ]
        else:
            namespace[builder] = _resolve_on_first_use(namespace, builder, hint)
            lines.append(f"{indent}kwargs[{name!r}] = {builder}(value)")
    lines.append("    return tp(**kwargs)")
    # Only field names and type names of eagle3lint's own dataclasses go into the code.
    exec("\n".join(lines), namespace)
    return namespace["build"]


def _scalar(hint: Any) -> tuple[type | None, bool]:
    """(the scalar type, whether None is allowed) for `str`, `int`, `bool` and their optional
    forms; (None, False) for any other type."""
    if hint in _SCALARS:
        return hint, False
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(inner) == 1 and inner[0] in _SCALARS:
            return inner[0], True
    return None, False


def _resolve_on_first_use(namespace: dict[str, Any], name: str, hint: Any) -> Builder:
    """A stand-in for the builder of `hint` that builds it on first call and takes its place."""

    def first_use(data: Any) -> Any:
        namespace[name] = _builder(hint)
        return namespace[name](data)

    return first_use
