"""Ask a real vLLM what it says about its registered architectures (run by the venv's python).

This script runs inside an oracle venv (`venvs.py`), never in eagle3lint's environment: it is the
one place where vLLM's code is executed, to be compared with eagle3lint's static verdicts.

Input (stdin, JSON): {"archs": [names] | null, "stubs": [top-level module names]}.
Output (stdout): one JSON object per architecture, flushed as soon as it is known, so a process
that dies on one class loses nothing else. For each arch: the class's module and name, vLLM's
`supports_eagle3()`, `is_text_generation_model()`, `is_pooling_model()`, whether the registry
lists it as a speculative-decoding model, the platform vLLM resolved, and for each
`SupportsEagle3` member whether the class only inherits the protocol's own stub (body `...`).
On failure: the exception, the module the registry names, and for a missing module its name
(the caller retries with a stub).
"""

from __future__ import annotations

import ast
import importlib
import importlib.abc
import importlib.machinery
import inspect
import json
import os
import sys
import textwrap
import types
from typing import Any

os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
os.environ["CUDA_VISIBLE_DEVICES"] = ""
os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")

MODELS_PACKAGE = "vllm.model_executor.models"


class _Anything:
    """A permissive stand-in for anything a stubbed module exports: callable (and a pass-through
    decorator), subscriptable, iterable, usable as a base class."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs and callable(args[0]):
            return args[0]
        return _Anything()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _Anything()

    def __getitem__(self, key: Any) -> Any:
        return _Anything()

    def __iter__(self) -> Any:
        return iter(())

    def __mro_entries__(self, bases: tuple[Any, ...]) -> tuple[type, ...]:
        return (object,)


class _StubModule(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        if name[:1].isupper():
            return type(name, (), {"__init__": lambda self, *a, **k: None})
        return _Anything()


class StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves a `_StubModule` for every module under the given top-level names."""

    def __init__(self, names: set[str]) -> None:
        self.names = names

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname.split(".")[0] in self.names:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec: Any) -> types.ModuleType:
        module = _StubModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        return None


def _is_stub_function(func: Any) -> bool:
    """The function's body is only `...`, `pass`, a docstring or `raise NotImplementedError`."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    except (OSError, TypeError, SyntaxError):
        return False
    node = tree.body[0]
    if not isinstance(node, ast.FunctionDef):
        return False
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    for stmt in body:
        if isinstance(stmt, ast.Pass):
            continue
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue
        if isinstance(stmt, ast.Raise):
            continue
        return False
    return True


def _members(cls: type, protocol: type) -> dict[str, str]:
    """For each protocol method: `missing`, `stub` (the protocol's own stub body), `default`
    (the protocol's own real body) or `own` (defined by the class or another base)."""
    out = {}
    for name, value in vars(protocol).items():
        if name.startswith("_") or not callable(value):
            continue
        found = inspect.getattr_static(cls, name, None)
        if found is None:
            out[name] = "missing"
        elif found is value:
            out[name] = "stub" if _is_stub_function(value) else "default"
        else:
            out[name] = "own"
    return out


def main() -> int:
    request = json.loads(sys.stdin.read() or "{}")
    stubs = set(request.get("stubs") or ())
    registry = importlib.import_module(f"{MODELS_PACKAGE}.registry")
    interfaces = importlib.import_module(f"{MODELS_PACKAGE}.interfaces")
    interfaces_base = importlib.import_module(f"{MODELS_PACKAGE}.interfaces_base")
    from vllm.platforms import current_platform

    if stubs:
        # Only now: transformers has already decided which optional packages it has, so a
        # stub never passes for the real package in its availability checks.
        sys.meta_path.insert(0, StubFinder(stubs))

    platform = type(current_platform).__name__
    runner_default = _runner_default()
    models: dict[str, tuple[str, str]] = dict(registry._VLLM_MODELS)
    drafts = set(getattr(registry, "_SPECULATIVE_DECODING_MODELS", {}))
    protocol = getattr(interfaces, "SupportsEagle3", None)
    archs = request.get("archs") or sorted(models)
    print(json.dumps({"archs": archs}), flush=True)
    for arch in archs:
        module_name, class_name = models[arch]
        record: dict[str, Any] = {
            "arch": arch,
            "platform": platform,
            "draft_section": arch in drafts,
            "stubs": sorted(stubs),
        }
        full = module_name if "." in module_name else f"{MODELS_PACKAGE}.{module_name}"
        try:
            cls = getattr(importlib.import_module(full), class_name)
            record.update(
                ok=True,
                module=cls.__module__,
                qualname=cls.__qualname__,
                supports_eagle3=bool(interfaces.supports_eagle3(cls)),
                is_text_generation_model=bool(interfaces_base.is_text_generation_model(cls)),
                is_pooling_model=bool(interfaces_base.is_pooling_model(cls)),
                runner=runner_default(arch, cls, interfaces_base),
                members=_members(cls, protocol) if protocol is not None else {},
            )
        except BaseException as exc:  # the class's own import-time code, whatever it raises
            if isinstance(exc, KeyboardInterrupt):
                raise
            error = f"{type(exc).__name__}: {exc}"[:500]
            record.update(ok=False, error=error, missing=missing_module(exc), module=full)
        print(json.dumps(record), flush=True)
    return 0


def _runner_default() -> Any:
    """`ModelConfig._get_default_runner_type` for a registered arch whose checkpoint has no
    Sentence Transformers config: pooling if the class is, generate if it is generative, else
    what vLLM's suffix table says for the name."""
    from vllm.config.model import try_match_architecture_defaults

    def runner(arch: str, cls: type, interfaces_base: Any) -> str:
        if interfaces_base.is_pooling_model(cls):
            return "pooling"
        if interfaces_base.is_text_generation_model(cls):
            return "generate"
        match = try_match_architecture_defaults(arch)
        return match[1][0] if match else "generate"

    return runner


def missing_module(exc: BaseException) -> str:
    """The module that is not installed, when that is why the import failed (directly or as
    the cause of a friendlier ImportError); "" for any other failure."""
    seen: BaseException | None = exc
    for _ in range(5):
        if seen is None:
            break
        if isinstance(seen, ModuleNotFoundError) and seen.name:
            return seen.name
        seen = seen.__cause__ or seen.__context__
    return ""


if __name__ == "__main__":
    raise SystemExit(main())
