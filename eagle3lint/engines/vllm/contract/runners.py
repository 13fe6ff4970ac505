"""Which model runner runs EAGLE-3, and for which methods, read from a vLLM tree.

vLLM has had two model runners since 0.16: V1 (`v1/worker/gpu_model_runner.py`) and V2
(`v1/worker/gpu/model_runner.py`). Which one runs is decided by
`VllmConfig.use_v2_model_runner` in `config/vllm.py` (from 0.22): V1 unless the environment
asks (≤ 0.18), V2 for a list of architectures (0.22-0.25, with conditions on the model kind),
V2 for all (0.30-0.33), V2 alone once V1 is gone (0.34). The shapes are read, never the
version: a tree is judged by what its own code says.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from eagle3lint.engines.vllm.contract.model import V1, V2, Runners
from eagle3lint.sources.walk import files_under

V1_RUNNER = "v1/worker/gpu_model_runner.py"
V2_RUNNER = "v1/worker/gpu/model_runner.py"
SELECTION = "config/vllm.py"
V2_EAGLE3 = "v1/worker/gpu/spec_decode/eagle/eagle3_utils.py"
SPECULATIVE = "config/speculative.py"
EXPERT_COUNT_FILES = ("transformers_utils/model_arch_config_convertor.py", "config/model.py")
"""Where `get_num_experts` lists the config attributes that hold the number of experts."""
SPECULATOR_CONFIGS = "v1/worker/gpu/spec_decode"
"""Where 0.34's per-method `SpeculatorConfig` classes live (`speculator_config.py` and each
speculator's `config.py`)."""

_SELECTOR = re.compile(r"^    def use_v2_model_runner\(self\)[^:]*:\n", re.MULTILINE)
_NEXT_DEF = re.compile(r"^    (?:@|def )", re.MULTILINE)
_FROZENSET = r"^{name}\s*=\s*frozenset\(\s*(\{{.*?\}}|\[.*?\]|\(.*?\))\s*\)"
_STRING = re.compile(r"""["']([^"'\n]+)["']""")
_APPEND = re.compile(r"""unsupported\.append\(\s*(f?)(?:"([^"\n]+)"|'([^'\n]+)')\s*\)""")
_METHOD_TUPLE = re.compile(r"""method\s+in\s*\(([^()]*)\)""")
_RELAY_REFUSAL = re.compile(
    r"supports_aux_hidden_states_over_pp[^\n]*\n(?:[^\n]*\n){0,3}?\s*raise ValueError"
)
_AUX_FLAG = "use_aux_hidden_state_outputs"


def read_runners(vllm_dir: Path, read: Callable[[Path], str | None]) -> Runners | None:
    """The runners of the tree at `vllm_dir` and how the default is chosen; None when it has
    neither runner (0.10's V0 engine). `read` returns a file's text, or None when it is not
    there."""
    present = tuple(
        name for name, rel in ((V1, V1_RUNNER), (V2, V2_RUNNER)) if read(vllm_dir / rel) is not None
    )
    if not present:
        return None
    eagle3 = read(vllm_dir / V2_EAGLE3) or ""
    relay = bool(_RELAY_REFUSAL.search(eagle3))
    if present == (V2,) or present == (V1,):
        return Runners(present, present[0], v2_pp_needs_relay=relay and V2 in present)
    selection_path = vllm_dir / SELECTION
    text = read(selection_path) or ""
    selector = _SELECTOR.search(text)
    if selector is None:
        # V2 is there, opt-in through VLLM_USE_V2_MODEL_RUNNER only.
        return Runners(present, V1)
    body = _method_body(text, selector.end())
    line = text.count("\n", 0, selector.start()) + 1
    facts: dict[str, object] = {
        "path": str(selection_path),
        "line": line,
        "v1_without_triton": "HAS_TRITON" in body,
        "v1_features": _v2_unsupported(text),
        "v2_pp_needs_relay": relay,
    }
    if "_is_default_v2_model_runner_model" in body:
        start = text.find("def _is_default_v2_model_runner_model")
        rule = _method_body(text, text.index("\n", start) + 1) if start >= 0 else ""
        kinds = tuple(
            kind
            for kind, flag in (("hybrid", "is_hybrid"), ("attention-free", "is_attention_free"))
            if flag in rule
        )
        return Runners(
            present,
            V1,
            v2_architectures=_frozenset(text, "DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES"),
            v2_for_dense=bool(re.search(r"\bor\s+not\s+model_config\.is_moe", rule)),
            v2_needs_dense=bool(re.search(r"return\s+not\s+model_config\.is_moe", rule)),
            v1_for_kinds=kinds,
            expert_keys=_expert_keys(vllm_dir, read) if "is_moe" in rule else (),
            checkpoint_conditions=("quantized",) if ".is_quantized" in rule else (),
            **facts,  # type: ignore[arg-type]
        )
    rocm = _frozenset(text, "ROCM_DEFAULT_MRV1_ARCHITECTURES") if "is_rocm()" in body else ()
    return Runners(present, V2, rocm_v1_architectures=rocm, **facts)  # type: ignore[arg-type]


def read_methods(
    vllm_dir: Path, runners: Runners | None, read: Callable[[Path], str | None]
) -> tuple[str, ...]:
    """The speculative methods for which a runner of the tree asks the target for its aux
    hidden states: the methods the EAGLE-3 target contract gates."""
    found: dict[str, None] = {}
    if runners is None:
        return ()
    if V1 in runners.present:
        found.update(dict.fromkeys(_v1_methods(read(vllm_dir / V1_RUNNER) or "", vllm_dir, read)))
    if V2 in runners.present:
        eagle3 = read(vllm_dir / V2_EAGLE3) or ""
        found.update(
            dict.fromkeys(_tested_methods(_function(eagle3, "requires_aux_hidden_states")))
        )
        found.update(dict.fromkeys(_speculator_methods(vllm_dir, read)))
    # EAGLE-3 first, the rest in order of name: the report reads the same on every release.
    return tuple(sorted(found, key=lambda method: (method != "eagle3", method)))


def _v1_methods(text: str, vllm_dir: Path, read: Callable[[Path], str | None]) -> list[str]:
    """The methods of the V1 runner's drafter branches that set `use_aux_hidden_state_outputs`
    to anything but False: `method == "eagle3"`, `method == "..."` or a `use_<x>()` test of the
    speculative config (resolved to the methods that method compares)."""
    methods: list[str] = []
    for match in re.finditer(rf"self\.{_AUX_FLAG}\s*=\s*(?!\s|False\b)", text):
        branch = text.rfind("if ", 0, match.start())
        test = text[branch : text.index("\n", branch)] if branch >= 0 else ""
        methods += _tested_methods(test)
        for helper in re.findall(r"\.(use_\w+)\(\)", test):
            methods += _tested_methods(_function(read(vllm_dir / SPECULATIVE) or "", helper))
    return methods


def _speculator_methods(vllm_dir: Path, read: Callable[[Path], str | None]) -> list[str]:
    """0.34's per-method configs: `base_method` of each `SpeculatorConfig` subclass whose
    `uses_aux_hidden_states` (its own or inherited) is not `return False`."""
    folder = vllm_dir / SPECULATOR_CONFIGS
    if not (folder / "speculator_config.py").is_file():
        return []
    classes: dict[str, tuple[list[str], str | None, bool | None]] = {}
    for path in files_under(folder, "*config*.py"):
        text = read(path) or ""
        for match in re.finditer(r"^class (\w+)\(([^)]*)\):\n", text, re.MULTILINE):
            body = _class_body(text, match.end())
            method = re.search(r"^    base_method[^=\n]*=\s*[\"'](\w+)[\"']", body, re.MULTILINE)
            uses = re.search(
                r"def uses_aux_hidden_states\(self\)[^:]*:\n(.*?)(?=\n    \S|\Z)", body, re.DOTALL
            )
            own = (
                None
                if uses is None
                else not re.search(r"return\s+False\s*$", uses.group(1).strip())
            )
            bases = [b.strip().rsplit(".", 1)[-1] for b in match.group(2).split(",") if b.strip()]
            classes[match.group(1)] = (bases, method.group(1) if method else None, own)

    def resolve(name: str, field: int, seen: frozenset[str] = frozenset()) -> object:
        if name not in classes or name in seen:
            return None
        value = classes[name][field]
        if value is not None:
            return value
        for base in classes[name][0]:
            found = resolve(base, field, seen | {name})
            if found is not None:
                return found
        return None

    return [
        str(resolve(name, 1))
        for name in classes
        if resolve(name, 1) is not None and resolve(name, 2) is True
    ]


def _expert_keys(vllm_dir: Path, read: Callable[[Path], str | None]) -> tuple[str, ...]:
    """The string literals of the list in `get_num_experts` (`num_experts`, `n_routed_experts`,
    ...): what `ModelConfig.is_moe` reads from the checkpoint's config."""
    for rel in EXPERT_COUNT_FILES:
        body = _function(read(vllm_dir / rel) or "", "get_num_experts")
        listed = re.search(r"=\s*\[([^\]]*)\]", body)
        if listed:
            return tuple(_STRING.findall(listed.group(1)))
    return ()


def _tested_methods(test: str) -> list[str]:
    """Method names a test compares `method` with (`== "x"`, `in ("x", "y")`)."""
    names = re.findall(r"""method\s*==\s*["'](\w+)["']""", test)
    for group in _METHOD_TUPLE.findall(test):
        names += _STRING.findall(group)
    return names


def _function(text: str, name: str) -> str:
    """The source of function (or method) `name` in `text`, or ""."""
    match = re.search(rf"^(\s*)def {name}\(", text, re.MULTILINE)
    if match is None:
        return ""
    indent = len(match.group(1).strip("\n"))
    # A line at the def's indent starting with `)` closes a signature written over lines.
    end = re.compile(rf"^ {{0,{indent}}}[^\s)]", re.MULTILINE).search(
        text, text.index("\n", match.end()) + 1
    )
    return text[match.start() : end.start() if end else len(text)]


def _method_body(text: str, start: int) -> str:
    """A method's lines from `start` to the next method (or decorator) of the class."""
    following = _NEXT_DEF.search(text, start)
    return text[start : following.start() if following else len(text)]


def _class_body(text: str, start: int) -> str:
    following = re.compile(r"^\S", re.MULTILINE).search(text, start)
    return text[start : following.start() if following else len(text)]


def _frozenset(text: str, name: str) -> tuple[str, ...]:
    match = re.search(_FROZENSET.format(name=name), text, re.MULTILINE | re.DOTALL)
    return tuple(_STRING.findall(match.group(1))) if match else ()


def _v2_unsupported(text: str) -> tuple[str, ...]:
    """What `_get_v2_model_runner_unsupported_features` names, as its messages say it; the
    methods of an f-string message (`speculative method '{method}'`) from the test above it."""
    start = text.find("def _get_v2_model_runner_unsupported_features")
    if start < 0:
        return ()
    body = _method_body(text, text.index("\n", start) + 1)
    features: list[str] = []
    for match in _APPEND.finditer(body):
        if not match.group(1):
            features.append(match.group(2) or match.group(3))
            continue
        test = body[body.rfind("if ", 0, match.start()) : match.start()]
        if "not in" in test:
            continue
        for group in _METHOD_TUPLE.findall(test):
            features += [f"speculative method '{m}'" for m in _STRING.findall(group)]
    return tuple(dict.fromkeys(features))
