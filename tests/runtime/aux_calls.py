"""Call the aux-layer methods vLLM's model runner calls, on fixed models (run by a release venv's
python, never by eagle3lint).

Issue 24: `fix` renamed `DeepseekV2ForCausalLM`'s getter to the name the runner calls, while
Kimi-K2.5's getter still called the old name on its language model; the runner's call raised
AttributeError after the weights loaded. This script makes those calls as the runner does:
`supports_eagle3(model)`, then each getter the runner calls, then the setter with what the
getter returned, through the class's real MRO (the release's own protocol defaults included).

How instances are built, and why: the runner-called aux methods read the model's structure only
(`self.model`, `self.language_model` or `get_language_model()`, the decoder's `layers` and
`start_layer`, its `EagleModelMixin` state), never weights or towers, and a wrapper's real
`__init__` needs a checkpoint's config (vision towers, processors) that a test cannot give it.
So each class is created with `object.__new__` and `nn.Module.__init__`, and given what its own
`__init__` (along its MRO) assigns to `self.<attr>` where that is a part of the model: an
instance of the class the `__init__` builds there (the decoder, the language model: built the
same way in turn, so a delegation `self.language_model.<name>()` reaches the real class), the
decoder's `layers` (`make_layers` or a module list: `NUM_LAYERS` placeholders) and its
`start_layer`/`end_layer`. A setting a call reads that `__init__` computes from the config alone
(Kimi-Linear's `use_attn_res`) gets its value for the config class's defaults. A language model
built by `init_vllm_registered_model` is the class vLLM would build: the `architectures=[...]`
it is given, else the one vLLM picks for the text config (its `architectures`, else
transformers' causal-LM class for its `model_type`, as `VllmConfig.with_hf_config` does), the
config being the model's config class with its defaults. Where the checkpoint chooses it and
that config names none (vLLM 0.33.0's Pixtral, whose Mistral-format checkpoint names Mistral,
Mixtral or Mistral Large 3), every text model of the request whose calls ran is tried in turn.

Input (stdin, JSON): {"overlay": {module: file} | null, "methods": [getter names, setter],
"subjects": [[label, module, class, language model's arch | null]], "try_candidates": bool}.
Output (stdout): one JSON object per subject (and, with `try_candidates`, per wrapper and text
model tried as its language model): {"label", "candidate", "class", "status", "why",
"classes" (every vLLM class of the instances built), "calls" (each method and the class that
defines it), "delegate" (how the language model's class was decided), "needs_candidate"};
status "ran", "raised" (a runner call raised), "cannot-construct" (a call read an attribute its
`__init__` sets that this script could not give it: proves nothing), "not-eagle3"
(`supports_eagle3()` is False: the runner refuses it before any call) or "cannot-import".
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import json
import re
import sys
from typing import Any

from proof import (
    STUBS,
    Overlay,
    Placeholder,
    _config_classes,
    _from_config,
    _function_ast,
    _import_class,
    _model_inits,
    _short,
    _vllm_config,
)
from torch import nn

NUM_LAYERS = 8
"""Enough layers that the default aux layers (2, n // 2, n - 3) are distinct and in range."""
MODEL_PACKAGES = ("vllm.model_executor.models.", "vllm.models.")
MAX_DEPTH = 4
LAYERS = "layers"
REGISTERED_BUILDER = "init_vllm_registered_model"
LANGUAGE_MODEL_MARK = "_mark_language_model"
MARKED_NAMES = "_language_model_names"


class Graph:
    """The instances built for one subject, and how its language model was chosen."""

    def __init__(self, candidate: str | None) -> None:
        self.instances: list[nn.Module] = []
        self.candidate = candidate
        self.delegate: str | None = None
        self.needs_candidate = False
        """The checkpoint chooses the language model's class: none is named here."""


def _registered(arch: str) -> type | None:
    registry = importlib.import_module("vllm.model_executor.models.registry")
    entry = registry._VLLM_MODELS.get(arch)
    if entry is None:
        return None
    module, name = entry
    full = module if "." in module else f"vllm.model_executor.models.{module}"
    return _import_class(full, name)


def _is_model_class(value: Any) -> bool:
    return (
        isinstance(value, type)
        and issubclass(value, nn.Module)
        and value.__module__.startswith(MODEL_PACKAGES)
    )


Assignment = tuple[ast.expr, ast.expr, bool, Any]
"""(target, value, inside `with self._mark_language_model(...)`, the function it is in)."""


@functools.cache
def _own_assignments(func: Any) -> tuple[Assignment, ...]:
    """The assignments of `func` in source order."""
    tree = _function_ast(func)
    marked: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.With) and any(
            LANGUAGE_MODEL_MARK in ast.unparse(item.context_expr) for item in node.items
        ):
            marked |= {id(inner) for inner in ast.walk(node)}
    found: list[Assignment] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            found += [(t, node.value, id(node) in marked, func) for t in node.targets]
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            found.append((node.target, node.value, id(node) in marked, func))
    return tuple(sorted(found, key=lambda item: (item[1].lineno, item[1].col_offset)))


def _assignments(cls: type) -> list[Assignment]:
    """The assignments of the `__init__`s along the MRO (nearest first) and of the methods of
    the class they call on `self` (MiniCPM's `self._init_layers(...)`)."""
    found: list[Assignment] = []
    seen: set[Any] = set()
    pending = list(_model_inits(cls))
    while pending:
        func = pending.pop(0)
        if func in seen:
            continue
        seen.add(func)
        found += _own_assignments(func)
        for node in ast.walk(_function_ast(func)):
            if isinstance(node, ast.Call) and _self_attr(node.func) is not None:
                assert isinstance(node.func, ast.Attribute)
                method = inspect.getattr_static(cls, node.func.attr, None)
                if inspect.isfunction(method) and method.__module__.startswith("vllm."):
                    pending.append(method)
    return found


def _self_attr(node: ast.expr) -> str | None:
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    ):
        return node.attr
    return None


def _targets(target: ast.expr) -> list[str | None]:
    return [_self_attr(t) for t in (target.elts if isinstance(target, ast.Tuple) else [target])]


def init_attributes(cls: type) -> set[str]:
    """Every `self.<attr>` the `__init__`s along the MRO (and what they call) assign."""
    return {name for target, *_ in _assignments(cls) for name in _targets(target) if name}


def _built(owner: type, func: Any, value: ast.expr) -> type | ast.Call | None:
    """What `value` (in `func`, a method of `owner`) builds: a class it instantiates (directly,
    as a local bound before, through a method of `owner` that returns it), or the call to
    `init_vllm_registered_model` (the class is vLLM's choice); None for anything else."""
    if isinstance(value, ast.Name):
        for target, local, _, _ in _own_assignments(func):
            if isinstance(target, ast.Name) and target.id == value.id:
                return _built(owner, func, local)
        return None
    if not isinstance(value, ast.Call):
        return None
    callee = value.func
    if isinstance(callee, ast.Name) and callee.id == REGISTERED_BUILDER:
        return value
    found: Any = None
    if isinstance(callee, ast.Name):
        found = func.__globals__.get(callee.id)
        parameter = inspect.signature(func).parameters.get(callee.id)
        if parameter is not None:
            found = parameter.default  # `model_type: type[nn.Module] = LlamaModel`
    elif _self_attr(callee) is not None:
        assert isinstance(callee, ast.Attribute)
        found = inspect.getattr_static(owner, callee.attr, None)
        if inspect.isfunction(found):  # `self._init_model(...)`: what it returns
            for node in ast.walk(_function_ast(found)):
                if isinstance(node, ast.Return) and node.value is not None:
                    built = _built(owner, found, node.value)
                    if built is not None:
                        return built
            return None
    elif isinstance(callee, ast.Attribute) and isinstance(callee.value, ast.Name):
        base = func.__globals__.get(callee.value.id)
        found = getattr(base, callee.attr, None) if base is not None else None
    return found if isinstance(found, type) else None


_PARTS: dict[type, bool] = {}


def is_model_part(cls: type) -> bool:
    """A class of the model packages whose `__init__` builds `self.layers` or such a part (a
    decoder, a causal LM, a wrapper)."""
    if not _is_model_class(cls):
        return False
    if cls not in _PARTS:
        _PARTS[cls] = False  # a class that builds itself is not a part through that
        found = False
        for target, value, _, func in _assignments(cls):
            built = _built(cls, func, value)
            found = found or LAYERS in _targets(target) or isinstance(built, ast.Call)
            found = found or (isinstance(built, type) and is_model_part(built))
        _PARTS[cls] = found
    return _PARTS[cls]


class Builder:
    """Bare instances of model classes with the model parts their `__init__` builds."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph

    def build(self, cls: type, depth: int = 0) -> nn.Module:
        instance = object.__new__(cls)
        nn.Module.__init__(instance)
        self.graph.instances.append(instance)
        if depth >= MAX_DEPTH:
            return instance
        marked: list[str] = []
        for target, value, in_mark, func in _assignments(cls):
            given = self._give(instance, func, target, value, depth)
            marked += given if in_mark else []
        if marked and hasattr(type(instance), MARKED_NAMES):
            setattr(instance, MARKED_NAMES, marked)  # what `_mark_language_model` records
        return instance

    def _give(
        self, instance: nn.Module, func: Any, target: ast.expr, value: ast.expr, depth: int
    ) -> list[str]:
        """Set what this assignment builds, if it is a model part; the attributes set."""
        names = _targets(target)
        if len(names) > 1:
            if names[-1] != LAYERS or not isinstance(value, ast.Call):
                return []
            # `self.start_layer, self.end_layer, self.layers = make_layers(...)`
            values = [0, NUM_LAYERS, _layers()][-len(names) :]
            given = [n for n in names if n is not None and not _already(instance, n)]
            for name, held in zip(names, values, strict=True):
                if name in given:
                    setattr(instance, name, held)
            return given
        name = names[0]
        if name is None or _already(instance, name):
            return []
        built = _built(type(instance), func, value)
        part: nn.Module | None = None
        if isinstance(built, ast.Call):
            cls = self._language_model(type(instance), func, built)
            part = None if cls is None else self.build(cls, depth + 1)
        elif built is not None and is_model_part(built):
            part = self.build(built, depth + 1)
        elif name == LAYERS:
            part = _layers()
        if part is None:
            return []
        setattr(instance, name, part)
        return [name]

    def _language_model(self, owner: type, func: Any, call: ast.Call) -> type | None:
        """The class `init_vllm_registered_model(...)` builds: the architecture it is given,
        else vLLM's choice for the text config."""
        keywords = {k.arg: k.value for k in call.keywords if k.arg is not None}
        named = keywords.get("architectures")
        if isinstance(named, ast.List | ast.Tuple) and named.elts:
            first = named.elts[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                self.graph.delegate = f"{first.value} (named in {owner.__name__}.__init__)"
                return _registered(first.value)
        arch = _text_architecture(owner, func, keywords.get("hf_config"))
        if arch is not None:
            self.graph.delegate = f"{arch} (vLLM's choice for the default text config)"
            return _registered(arch)
        self.graph.needs_candidate = True
        if self.graph.candidate is None:
            return None
        self.graph.delegate = f"{self.graph.candidate} (one the checkpoint may choose)"
        return _registered(self.graph.candidate)


def _already(instance: nn.Module, name: str) -> bool:
    return name in instance.__dict__ or name in instance._modules


def _layers() -> nn.ModuleList:
    return nn.ModuleList(Placeholder() for _ in range(NUM_LAYERS))


def _default_config(cls: type) -> Any:
    """The model's config class with its defaults (None when none builds)."""
    for config_cls in _config_classes(cls, cls):
        try:
            return config_cls()
        except Exception:  # a config class whose defaults are incomplete
            continue
    return None


def _text_architecture(owner: type, func: Any, expr: ast.expr | None) -> str | None:
    """What vLLM builds for `hf_config=<expr>` with no architectures given, with the model's
    default config: the text config's `architectures`, else transformers' causal-LM class
    for its model type (`VllmConfig.with_hf_config`)."""
    config = _default_config(owner) if expr is not None else None
    if config is None or expr is None:
        return None
    mapping = importlib.import_module("transformers.models.auto.modeling_auto")
    bound = {"config": config, "hf_config": config, "vllm_config": _vllm_config(config)}
    try:
        text = eval(compile(ast.Expression(expr), "<hf_config>", "eval"), func.__globals__, bound)
    except Exception:  # it needs more than the config
        return None
    names = getattr(text, "architectures", None) or [
        mapping.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.get(getattr(text, "model_type", ""))
    ]
    return names[0] or None


def _defined_in(cls: type, name: str) -> str:
    for klass in cls.__mro__:
        if name in vars(klass):
            return f"{klass.__module__}.{klass.__qualname__}"
    return "(nowhere)"


def _classes(graph: Graph) -> list[str]:
    return sorted(
        {
            f"{klass.__module__}.{klass.__qualname__}"
            for instance in graph.instances
            for klass in type(instance).__mro__
            if klass.__module__.startswith("vllm.")
        }
    )


MISSING = re.compile(r"'(\w+)' object has no attribute '(\w+)'")
MAX_FILLS = 8


def _unbuilt(exc: AttributeError, graph: Graph) -> tuple[nn.Module, str] | None:
    """The instance and attribute, when the attribute is one an `__init__` of the instance's
    class sets and this script did not give it (torch's `nn.Module.__getattr__` names the
    class and the attribute only)."""
    found = MISSING.search(str(exc))
    if found is None:
        return None
    owner, name = found.groups()
    for instance in graph.instances:
        if type(instance).__name__ == owner and name in init_attributes(type(instance)):
            return instance, name
    return None


def exercise(cls: type, methods: list[str], candidate: str | None) -> dict[str, Any]:
    """The runner's calls on a bare instance of `cls`: the getters, then the setter with what
    the last getter returned. A setting the calls read that `__init__` computes from the config
    alone (Kimi-Linear's `use_attn_res`) is given its value for the config class's defaults,
    and the calls are made again on a new instance."""
    record: dict[str, Any] = {"class": f"{cls.__module__}.{cls.__qualname__}"}
    record["calls"] = [[name, _defined_in(cls, name)] for name in methods]
    fills: dict[tuple[type, str], Any] = {}
    for _ in range(MAX_FILLS):
        graph = Graph(candidate)
        try:
            model = Builder(graph).build(cls)
        except Exception as exc:
            record.update(status="cannot-construct", why=f"building: {_short(exc)}")
            return record
        for instance in graph.instances:
            for (owner, name), value in fills.items():
                if type(instance) is owner:
                    setattr(instance, name, value)
        record.update(
            classes=_classes(graph), delegate=graph.delegate, needs_candidate=graph.needs_candidate
        )
        try:
            layers = _runner_calls(model, methods)
        except AttributeError as exc:
            gap = _unbuilt(exc, graph)
            value = None
            if gap is not None:
                owner = type(gap[0])
                value = _from_config(owner, gap[1], _default_config(owner))
            if gap is None or value is None or (owner, gap[1]) in fills:
                status = "raised" if gap is None else "cannot-construct"
                record.update(status=status, why=_short(exc))
                return record
            fills[(owner, gap[1])] = value
            continue
        except Exception as exc:
            record.update(status="raised", why=_short(exc))
            return record
        record.update(status="ran", why="", layers=list(layers))
        return record
    record.update(status="cannot-construct", why=f"more than {MAX_FILLS} settings to compute")
    return record


def _runner_calls(model: nn.Module, methods: list[str]) -> tuple[int, ...]:
    """As the runner: `supports_eagle3(model)`, each getter, the setter with what the last
    getter returned."""
    interfaces = importlib.import_module("vllm.model_executor.models.interfaces")
    if not interfaces.supports_eagle3(model):
        raise RuntimeError("supports_eagle3(model) is False for the instance")
    *getters, setter = methods
    layers: Any = None
    for name in getters:
        layers = getattr(model, name)()
        if not (isinstance(layers, tuple | list) and all(isinstance(i, int) for i in layers)):
            raise TypeError(f"{name}() returned {layers!r}, not layer indices")
    getattr(model, setter)(tuple(layers))
    return tuple(layers)


def main() -> int:
    request = json.loads(sys.stdin.read())
    interfaces = importlib.import_module("vllm.model_executor.models.interfaces")
    importlib.import_module("vllm.model_executor.models.registry")
    sys.meta_path.append(STUBS)
    if request.get("overlay"):
        sys.meta_path.insert(0, Overlay(request["overlay"]))
    methods: list[str] = request["methods"]
    text_models: list[str] = []
    wrappers: list[tuple[str, type]] = []
    for label, module, name, candidate in request["subjects"]:
        base = {"label": label, "candidate": candidate}
        try:
            cls = _import_class(module, name)
        except Exception as exc:
            print(json.dumps({**base, "status": "cannot-import", "why": _short(exc)}), flush=True)
            continue
        if not interfaces.supports_eagle3(cls):
            print(json.dumps({**base, "status": "not-eagle3", "why": ""}), flush=True)
            continue
        record = exercise(cls, methods, candidate)
        print(json.dumps({**base, **record}), flush=True)
        if record.get("needs_candidate") and candidate is None:
            wrappers.append((label, cls))
        elif record["status"] == "ran" and not interfaces.supports_multimodal(cls):
            text_models.append(label)
    if request.get("try_candidates"):
        # A language model the checkpoint chooses may be any text model that runs.
        for label, cls in wrappers:
            for candidate in text_models:
                record = exercise(cls, methods, candidate)
                print(json.dumps({"label": label, "candidate": candidate, **record}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
