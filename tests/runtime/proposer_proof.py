"""Run the EAGLE proposer's multimodal branch for real (run by a release venv's python, never by
eagle3lint): the image-token copy of `load_model`, with each target's real config class.

Input (stdin, JSON): {"overlay": {module: file} | null, "proposer": module, "targets": [[arch,
module, class]]}. With an overlay, each named module is loaded from its file (the fixed copy).

The proposer module's own `if supports_multimodal(target_model):` block runs, compiled from its
source with the module's globals, minus the statement that fetches the language model (which
needs a built model): `self` is a stand-in whose `get_model_name` is the proposer's own, the
target an instance of the real model class (never initialised) holding a config built by the
config class with its defaults, as `from_pretrained` builds it from a config.json that leaves
them. The config classes are the ones the model's code names as its config, read as the check
reads them: what the class's own `__init__` annotates `self.config` (or `config`) with, else what
its file passes to `get_hf_config(...)` (vLLM checks the config is one), else what an inherited
`__init__` annotates.

Output (stdout): one JSON object per target: {"arch", "status", "configs", "stand_in", "why"},
`stand_in` true where the model file cannot be imported in this venv and was read instead; status
"ok" (the block ran with every config class), "raised" (with the exception) or "no-config"
(the model file names no config class).
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import importlib.util
import inspect
import json
import sys
import textwrap
import types
from pathlib import Path
from typing import Any

from proof import STUBS, Overlay, _config_annotations, _import_class, _short

MULTIMODAL_CHECK = "supports_multimodal"
LANGUAGE_MODEL = "get_language_model"
HF_CONFIG_CALL = "get_hf_config"


def _branch(proposer: Any) -> tuple[Any, type]:
    """The proposer's multimodal block as a function `(self, target_model) -> bool`, and the
    class whose `load_model` holds it."""
    for cls in vars(proposer).values():
        if not isinstance(cls, type) or cls.__module__ != proposer.__name__:
            continue
        load = cls.__dict__.get("load_model")
        if load is None:
            continue
        tree = ast.parse(textwrap.dedent(inspect.getsource(load)))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.If)
                and isinstance(node.test, ast.Call)
                and getattr(node.test.func, "id", None) == MULTIMODAL_CHECK
            ):
                kept = [s for s in node.body if LANGUAGE_MODEL not in ast.unparse(s)]
                body = [*kept, ast.Return(ast.Constant(True))]
                check = ast.If(node.test, body, [])
                params = [ast.arg("self"), ast.arg("target_model")]
                args = ast.arguments([], params, None, [], [], None, [])
                func = ast.FunctionDef(
                    "multimodal_branch", args, [check, ast.Return(ast.Constant(False))], []
                )
                module = ast.fix_missing_locations(ast.Module([func], []))
                namespace = dict(vars(proposer))
                exec(compile(module, proposer.__file__, "exec"), namespace)
                return namespace["multimodal_branch"], cls
    raise LookupError(f"no `if {MULTIMODAL_CHECK}(...)` block in a load_model of {proposer}")


def _model(module: str, name: str) -> tuple[type, list[Declared], bool]:
    """The model class; where its code says what its config is, in the order the check reads
    them (its own `__init__`, its file's `get_hf_config(X)` calls, inherited `__init__`s), each
    with the names its file binds; and whether the class is a stand-in: a model file this venv
    cannot import (its image processor needs torchvision, which the oracle venvs go without)
    is read instead, its imports run one by one, and the class is a stand-in of the same name,
    as multimodal as the check found it (the proposer reads only its name, flag and config)."""
    try:
        model_cls = _import_class(module, name)
    except ImportError:
        spec = importlib.util.find_spec(module)
        assert spec is not None and spec.origin
        tree = ast.parse(Path(spec.origin).read_text())
        namespace: dict[str, Any] = {"__name__": module, "__package__": module.rpartition(".")[0]}
        for node in tree.body:
            if isinstance(node, ast.Import | ast.ImportFrom):
                with contextlib.suppress(Exception):
                    exec(compile(ast.Module([node], []), spec.origin, "exec"), namespace)
        classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
        inits: list[ast.AST] = []
        pending = [name]
        while pending:
            found = classes.pop(pending.pop(), None)
            if found is not None:
                inits += [f for f in found.body if getattr(f, "name", "") == "__init__"]
                pending += [b.id for b in found.bases if isinstance(b, ast.Name)]
        stand_in = type(name, (), {"supports_multimodal": True, "__module__": module})
        places = [
            _annotated(inits[:1], namespace),
            (_hf_config_arguments(tree), namespace),
            _annotated(inits[1:], namespace),
        ]
        return stand_in, places, True
    own: list[Declared] = []
    inherited: list[Declared] = []
    for klass in model_cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None or not getattr(init, "__module__", "").startswith("vllm."):
            continue
        with contextlib.suppress(OSError, TypeError):
            tree = ast.parse(textwrap.dedent(inspect.getsource(init)))
            (own if klass is model_cls else inherited).append(_annotated([tree], init.__globals__))
    source = sys.modules[model_cls.__module__]
    file_calls = (_hf_config_arguments(ast.parse(inspect.getsource(source))), vars(source))
    return model_cls, [*own, file_calls, *inherited], False


Declared = tuple[list[ast.expr], dict[str, Any]]
"""Annotations or arguments that name config classes, with the namespace that binds them."""


def _annotated(inits: list[ast.AST], namespace: dict[str, Any]) -> Declared:
    """What `__init__`s say their `self.config` is, else their `config`."""
    stored = [a for init in inits for a in _stored_config_annotations(init)]
    return stored or [a for init in inits for a in _config_annotations(init)], namespace


def _config_classes(places: list[Declared]) -> list[type]:
    """The config classes named in the first place that names any."""
    for named, namespace in places:
        found = _classes(named, namespace)
        if found:
            return found
    return []


def _stored_config_annotations(tree: ast.AST) -> list[ast.expr]:
    """The annotations of `self.config: X = ...`, and of the local `self.config = local` stores."""
    locals_: dict[str, ast.expr] = {}
    stored: list[str] = []
    found: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign):
            if isinstance(node.target, ast.Name):
                locals_[node.target.id] = node.annotation
            elif _is_self_config(node.target):
                found.append(node.annotation)
        elif (
            isinstance(node, ast.Assign)
            and any(_is_self_config(t) for t in node.targets)
            and isinstance(node.value, ast.Name)
        ):
            stored.append(node.value.id)
    return found + [locals_[name] for name in stored if name in locals_]


def _is_self_config(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "config"
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    )


def _hf_config_arguments(tree: ast.AST) -> list[ast.expr]:
    return [
        arg
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == HF_CONFIG_CALL
        for arg in node.args
    ]


def _classes(named: list[ast.expr], namespace: dict[str, Any]) -> list[type]:
    pretrained = importlib.import_module("transformers").PretrainedConfig
    found: list[type] = []
    for expression in named:
        for node in ast.walk(expression):
            value = namespace.get(node.id) if isinstance(node, ast.Name) else None
            if (
                isinstance(value, type)
                and issubclass(value, pretrained)
                and value is not pretrained
                and value not in found
            ):
                found.append(value)
    return found


def _run(branch: Any, proposer_cls: type, model_cls: type, config_cls: type) -> None:
    config = config_cls()
    target = object.__new__(model_cls)
    object.__setattr__(target, "config", config)
    stand_in = types.SimpleNamespace(model=types.SimpleNamespace(config=types.SimpleNamespace()))
    stand_in.get_model_name = types.MethodType(proposer_cls.get_model_name, stand_in)
    if not branch(stand_in, target):
        raise AssertionError(f"{MULTIMODAL_CHECK}() is False for {model_cls.__name__}")


def main() -> int:
    request = json.loads(sys.stdin.read())
    importlib.import_module("vllm.model_executor.models.registry")
    sys.meta_path.append(STUBS)
    if request.get("overlay"):
        sys.meta_path.insert(0, Overlay(request["overlay"]))
    branch, proposer_cls = _branch(importlib.import_module(request["proposer"]))
    for arch, module, name in request["targets"]:
        record: dict[str, Any] = {"arch": arch, "configs": []}
        try:
            model_cls, places, stand_in = _model(module, name)
            record["stand_in"] = stand_in
            configs = _config_classes(places)
            record["configs"] = [f"{c.__module__}.{c.__qualname__}" for c in configs]
            if not configs:
                record.update(status="no-config", why=f"{module} names no config class")
            for config_cls in configs:
                _run(branch, proposer_cls, model_cls, config_cls)
            record.setdefault("status", "ok")
        except Exception as exc:
            record.update(status="raised", why=_short(exc))
        print(json.dumps(record), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
