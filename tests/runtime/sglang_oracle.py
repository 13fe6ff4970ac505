"""Ask a real SGLang what its registered model classes expose (run by an SGLang venv's python).

The one place SGLang's code is executed, to be compared with eagle3lint's static facts. It
imports every top-level module of `sglang.srt.models` as SGLang's registry does, and for each
class of its `EntryClass`: where `set_eagle3_layers_to_capture` comes from (the class of the MRO
whose function it is), whether that function is a stub, how many arguments it requires, which
embedding/head accessors the class has, and whether `is_generation_model` calls it a pooling
model.

On CPU some imports fail: a kernel library that needs `libcuda.so.1` at load (`sgl_kernel`,
stubbed from the start), a package left out, or a name a newer transformers exports. The
modules failing so are imported after all others, the failing top-level package served by a
permissive stub from then on; the stubs a module needed are recorded with it.

Output (stdout): one JSON object per module, flushed as soon as it is known.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import pkgutil
import sys
import traceback
from typing import Any

os.environ["CUDA_VISIBLE_DEVICES"] = ""
os.environ.setdefault("SGLANG_LOGGING_LEVEL", "ERROR")

from oracle import StubFinder, _is_stub_function

CAPTURE = "set_eagle3_layers_to_capture"
ACCESSORS = ("get_embed_and_head", "get_embed_and_head_for_draft")
MAX_STUBS_PER_MODULE = 12


def _required_args(func: Any) -> int | None:
    try:
        params = list(inspect.signature(func).parameters.values())[1:]
    except (TypeError, ValueError):
        return None
    return sum(
        p.default is inspect.Parameter.empty
        and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
        for p in params
    )


def _owner(cls: type, name: str) -> tuple[str | None, Any]:
    """`module.Class` of the MRO entry that defines `name`, and the value found there."""
    for klass in cls.__mro__:
        if name in vars(klass):
            return f"{klass.__module__}.{klass.__qualname__}", vars(klass)[name]
    return None, None


def describe(cls: type, pooling: Any) -> dict[str, Any]:
    owner, value = _owner(cls, CAPTURE)
    function = getattr(value, "__func__", value)
    return {
        "arch": cls.__name__,
        "class": f"{cls.__module__}.{cls.__qualname__}",
        "capture_owner": owner,
        "capture_stub": bool(owner)
        and inspect.isfunction(function)
        and _is_stub_function(function),
        "capture_required": _required_args(function) if inspect.isfunction(function) else None,
        "accessors": [name for name in ACCESSORS if hasattr(cls, name)],
        "pooling": None if pooling is None else not pooling([cls.__name__]),
    }


def _forget(top: str) -> None:
    for name in [n for n in sys.modules if n == top or n.startswith(f"{top}.")]:
        del sys.modules[name]


def _missing_package(exc: BaseException) -> str | None:
    """The top-level package whose import failed, unless it is SGLang's own."""
    name = getattr(exc, "name", None)
    if not name:
        for frame in reversed(traceback.extract_tb(exc.__traceback__)):
            parts = frame.filename.split("/site-packages/")
            if len(parts) == 2 and not parts[1].startswith("sglang/"):
                name = parts[1].split("/")[0].removesuffix(".py")
                break
    top = name.split(".")[0] if name else None
    return None if top in (None, "sglang") else top


def _import(module_name: str, stubs: set[str], pooling: Any, retry: bool) -> dict[str, Any]:
    """The module's record; with `retry`, a package whose import fails is stubbed (for the rest
    of the run) and the module imported again."""
    needed: list[str] = []
    record: dict[str, Any] = {"module": module_name}
    for _ in range(MAX_STUBS_PER_MODULE):
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:
            top = _missing_package(exc)
            record["error"] = f"{type(exc).__name__}: {exc}"[:300]
            record["missing"] = top
            if not retry or top is None or top in stubs:
                break
            stubs.add(top)
            needed.append(top)
            _forget(top)
            continue
        record.pop("error", None)
        record.pop("missing", None)
        entry = getattr(module, "EntryClass", None)
        classes = entry if isinstance(entry, list) else [entry] if entry is not None else []
        record["classes"] = [describe(cls, pooling) for cls in classes]
        break
    record["stubs"] = needed
    return record


def main() -> int:
    stubs: set[str] = {"sgl_kernel"}  # loads libcuda.so.1 at import on every release read
    sys.meta_path.insert(0, StubFinder(stubs))
    try:
        from sglang.srt.configs.model_config import is_generation_model as pooling
    except Exception:  # recorded: roles are then compared on the registry alone
        pooling = None
    import sglang.srt.models as models

    names = [n for _, n, ispkg in pkgutil.iter_modules(models.__path__) if not ispkg]
    # Modules that need a stub more are imported last, so that no other module sees the stub.
    deferred = []
    for short in names:
        record = _import(f"{models.__name__}.{short}", stubs, pooling, retry=False)
        if record.get("missing"):
            deferred.append(record["module"])
        else:
            print(json.dumps(record), flush=True)
    for module_name in deferred:
        print(json.dumps(_import(module_name, stubs, pooling, retry=True)), flush=True)
    print(json.dumps({"stubs_total": sorted(stubs), "pooling_test": pooling is not None}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
