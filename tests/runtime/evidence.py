"""Runtime evidence for eagle3lint's error findings, gathered by the oracle venv's own vLLM.

Run by a release's venv python with an eagle3lint JSON report of that venv's `vllm` tree on
stdin; prints one JSON object per error finding on an architecture whose class vLLM's
`supports_eagle3()` accepts, with what the imported code shows without loading weights:

- EAG103: `supports_eagle3()` on the wrapper's language-model class;
- EAG204: whether the decoder class is an `EagleModelMixin` (the protocol default asserts it),
  with the assertion's source line;
- EAG301: whether the decoder's `forward` (as Python resolves it) contains any tap;
- EAG401: the exception reading the attribute raises on the config class built with its
  defaults (exactly what the proposer's `target_model.config.<attr>` raises).

Optional dependencies missing from the venv are stubbed for the modules named as arguments
(`evidence.py torchvision timm`), as `oracle.py` does, and each record lists them.
Like `oracle.py`, this is the only kind of place where vLLM's code runs.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import re
import sys
from typing import Any

from oracle import StubFinder

os.environ["CUDA_VISIBLE_DEVICES"] = ""
os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")

SUBJECT = {
    "EAG103": re.compile(r"^The language model (\w+) of"),
    "EAG204": re.compile(r"asserts that (\w+) is an EagleModelMixin"),
    "EAG301": re.compile(r"^(\w+)\.forward never"),
    "EAG401": re.compile(r"^(\w+)(?: and \S+)? (?:has|have) no ([\w.]+):"),
}
TAP_MARKERS = ("aux_hidden_state", "_maybe_add_hidden_state")


def _module_of(path: str) -> str:
    rel = path.split("/site-packages/", 1)[-1].removesuffix(".py").removesuffix("/__init__")
    return rel.replace("/", ".")


def _find(module: str, name: str) -> Any:
    found = getattr(importlib.import_module(module), name, None)
    if found is None:
        raise LookupError(f"{name} is not a name of {module}")
    return found


def _evidence(code: str, cls: Any, extra: str, interfaces: Any) -> str:
    if code == "EAG103":
        return f"supports_eagle3({cls.__name__}) is {bool(interfaces.supports_eagle3(cls))}"
    if code == "EAG204":
        mixin = interfaces.EagleModelMixin
        source = inspect.getsource(interfaces.SupportsEagle3.set_aux_hidden_state_layers)
        asserts = [line.strip() for line in source.splitlines() if "assert" in line]
        return (
            f"issubclass({cls.__name__}, EagleModelMixin) is {issubclass(cls, mixin)}; the "
            f"protocol default runs `{asserts[0] if asserts else '?'}`"
        )
    if code == "EAG301":
        forward = cls.forward
        source = inspect.getsource(forward)
        file = inspect.getsourcefile(forward) or "?"
        line = inspect.getsourcelines(forward)[1]
        taps = [m for m in TAP_MARKERS if m in source]
        where = f"{forward.__qualname__} ({file.split('/site-packages/')[-1]}:{line})"
        return f"{where} mentions {', '.join(taps)}" if taps else f"{where} has no tap at all"
    if code == "EAG401":
        try:
            config = cls()
        except Exception as exc:
            return f"{cls.__name__}() with defaults raises {type(exc).__name__}: {exc}"
        node: Any = config
        for part in extra.split("."):
            try:
                node = getattr(node, part)
            except AttributeError as exc:
                return f"{cls.__name__}().{extra} raises AttributeError: {exc}"
        return f"{cls.__name__}().{extra} is {node!r}"
    return ""


def main() -> int:
    report = json.load(sys.stdin)
    stubs = set(sys.argv[1:])
    interfaces = importlib.import_module("vllm.model_executor.models.interfaces")
    if stubs:  # after vLLM's and transformers' own imports, as in oracle.py
        sys.meta_path.insert(0, StubFinder(stubs))
    for target in report["targets"]:
        if target.get("role", "target") != "target":
            continue
        errors = [f for f in target["findings"] if f["severity"] == "error"]
        if not errors:
            continue
        record: dict[str, Any] = {
            "arch": target["arch"],
            "class": target["class"],
            "stubs": sorted(stubs),
        }
        try:
            cls = _find(_module_of(target["path"]), target["class"])
            record["supports_eagle3"] = bool(interfaces.supports_eagle3(cls))
        except Exception as exc:
            record["supports_eagle3"] = None
            record["import_error"] = f"{type(exc).__name__}: {exc}"[:300]
        record["findings"] = []
        for finding in errors:
            item = {"code": finding["code"], "message": finding["message"]}
            pattern = SUBJECT.get(finding["code"])
            found = pattern.search(finding["message"]) if pattern else None
            if found:
                try:
                    subject = _find(_module_of(finding["path"]), found.group(1))
                    extra = found.group(2) if found.lastindex and found.lastindex > 1 else ""
                    item["evidence"] = _evidence(finding["code"], subject, extra, interfaces)
                except Exception as exc:
                    item["evidence"] = f"not gathered: {type(exc).__name__}: {exc}"[:300]
            record["findings"].append(item)
        print(json.dumps(record), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
