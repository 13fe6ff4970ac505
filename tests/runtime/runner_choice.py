"""Ask a real vLLM which model runner it picks by default (run by a release venv's python).

This script runs inside an oracle venv (`venvs.py`), never in eagle3lint's environment. It has two
questions, both answered by the installed vLLM's own code:

- **decide** (input: a JSON list of cases `{arch, moe, hybrid, attention_free}`, each
  optionally with `platform` and the `key` its answer is given under): the value of
  vLLM's own `VllmConfig.use_v2_model_runner` property for the plain CUDA EAGLE-3 setup, with a
  model config showing those traits. The property and every `VllmConfig` method it calls
  (`_is_default_v2_model_runner_model`, `_get_v2_model_runner_unsupported_features`, ...) are
  vLLM's own functions, bound to a stand-in `self` (`PlainEagle3Config`) whose sub-configs hold
  the values of the plain setup (each documented below). Output: `{arch: "v1" | "v2" |
  "error: ..."}` plus, under `"_stand_in_reads"`, every attribute the code read that the
  stand-in does not set (answered with None: absent / off), so that a guess is never silent.
  A release without the property has no choice to make: V1 runs where V1's runner is there
  (0.18 and earlier), V2 where it is gone (0.34). A case with `"platform": "cpu"` asks the
  same of vLLM's CPU build: a CPU platform and no Triton.
- **traits** (input: `{"traits": [archs]}`): for each arch, the class vLLM's registry loads, the
  platform vLLM resolved, whether the class is a `MixtureOfExperts` subclass, and vLLM's own
  `is_hybrid` / `is_attention_free` for it (the registry's `_ModelInfo`, as `ModelConfig` reads
  them). A missing optional package (torchvision, left out of the oracle venvs) is stubbed as
  the differential oracle does (`oracle.StubFinder`); `stubs_active` lists the stubs in place.

The JSON comes as the first argument, else on stdin; the answer is one JSON object on stdout.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import traceback
import types
from typing import Any

# Never let the environment choose the runner: the question is vLLM's default.
os.environ.pop("VLLM_USE_V2_MODEL_RUNNER", None)
os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
os.environ["CUDA_VISIBLE_DEVICES"] = ""
os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")

PROPERTY = "use_v2_model_runner"


class Plain:
    """A stand-in sub-config: the values given, then the real config class's own methods and
    properties (bound to this object), then None for anything else, recorded in `reads`."""

    def __init__(self, name: str, reads: set[str], real: type | None = None, **values: Any):
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_reads", reads)
        object.__setattr__(self, "_real", real)
        for key, value in values.items():
            object.__setattr__(self, key, value)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        real = object.__getattribute__(self, "_real")
        found = _own_member(real, name) if real is not None else None
        if isinstance(found, property) and found.fget is not None:
            return found.fget(self)
        if callable(found):
            return found.__get__(self)
        object.__getattribute__(self, "_reads").add(f"{self._name}.{name}")
        return None


def _own_member(cls: type, name: str) -> Any:
    """`name` as defined along `cls`'s MRO (no descriptor invoked), else None."""
    for klass in cls.__mro__:
        if name in vars(klass):
            return vars(klass)[name]
    return None


def _platform(name: str) -> Any:
    """A platform that is CUDA (not ROCm, not unspecified) or CPU: vLLM's own `Platform` with
    that enum, so that its `is_cuda()`, `is_rocm()`, `is_cpu()`... answer as on that device,
    without importing the CUDA platform module (it needs the GPU's libraries)."""
    from vllm.platforms.interface import Platform, PlatformEnum

    enum = PlatformEnum.CUDA if name == "cuda" else PlatformEnum.CPU
    plain = type(
        f"Plain{name.title()}Platform",
        (Platform,),
        {"_enum": enum, "device_name": name, "device_type": name},
    )
    return plain()


def _use_platform(module: Any, name: str) -> None:
    """Make the property see platform `name`: Triton is there on a CUDA install (the plain
    setup) and not in the CPU build; the platform is set wherever the property reads it, the
    module's global (0.33) and the lazily resolved `vllm.platforms.current_platform` (for a
    function importing it locally)."""
    import vllm.platforms

    module.HAS_TRITON = name == "cuda"
    platform = _platform(name)
    vllm.platforms.current_platform = platform
    if hasattr(module, "current_platform"):
        module.current_platform = platform


def decide(cases: list[dict[str, Any]]) -> dict[str, Any]:
    import vllm.config.vllm as module

    config_cls = module.VllmConfig
    if not isinstance(_own_member(config_cls, PROPERTY), property):
        # No runner choice in VllmConfig: V1 before 0.22, V2 alone once V1's runner is gone.
        v1 = importlib.util.find_spec("vllm.v1.worker.gpu_model_runner") is not None
        runner = "v1" if v1 else "v2"
        return {case.get("key", case["arch"]): runner for case in cases} | {"_stand_in_reads": []}

    members = {
        name: value
        for name, value in vars(config_cls).items()
        if not name.startswith("__") and (callable(value) or isinstance(value, property))
    }
    members["__getattr__"] = Plain.__getattr__
    stand_in_cls = type("PlainEagle3Config", (), members)

    answers: dict[str, Any] = {}
    reads: set[str] = set()
    for case in cases:
        key = case.get("key", case["arch"])
        _use_platform(module, case.get("platform", "cuda"))
        try:
            answers[key] = "v2" if _evaluate(stand_in_cls, module, case, reads) else "v1"
        except Exception as error:  # reported per arch, not raised
            tail = traceback.format_exc().strip().splitlines()[-3:]
            answers[key] = f"error: {type(error).__name__}: {error} | {' / '.join(tail)}"
    answers["_stand_in_reads"] = sorted(reads)
    return answers


def _evaluate(stand_in_cls: type, module: Any, case: dict[str, Any], reads: set[str]) -> bool:
    config = object.__new__(stand_in_cls)
    real = {name: getattr(module, name, None) for name in ("ModelConfig", "SpeculativeConfig")}
    compilation_mode = getattr(module, "CompilationMode", None)
    values = {
        "_name": "vllm_config",
        "_reads": reads,
        "_real": None,
        # The target model, as vLLM's ModelConfig would show it for a plain generative
        # checkpoint of this architecture.
        "model_config": Plain(
            "model_config",
            reads,
            real["ModelConfig"],
            architectures=[case["arch"]],
            # A text-generation target (the EAGLE-3 case), not a pooling model.
            runner_type="generate",
            # The traits under test, from the class (see the caller's docstring).
            is_moe=bool(case["moe"]),
            is_hybrid=bool(case["hybrid"]),
            is_attention_free=bool(case["attention_free"]),
            # An autoregressive model; unquantized; no special serving features requested.
            is_diffusion=False,
            is_quantized=False,
            quantization=None,
            enable_return_routed_experts=False,
            logits_processors=None,
            enable_prompt_embeds=False,
            # ModelConfig's default logprobs mode.
            logprobs_mode="raw_logprobs",
            pooler_config=None,
            hf_config=None,
        ),
        # EAGLE-3, the draft's defaults: no parallel drafting, same vocabulary, no adaptive
        # verification, unquantized draft head.
        "speculative_config": Plain(
            "speculative_config",
            reads,
            real["SpeculativeConfig"],
            method="eagle3",
            num_speculative_tokens=3,
            parallel_drafting=False,
            use_heterogeneous_vocab=False,
            enable_adaptive_verification=False,
            draft_lm_head_quantization=None,
        ),
        # One GPU: no tensor, pipeline, data, prefill- or decode-context parallelism; the default
        # single-process executor; no dual batch overlap, elastic EP or micro-batching.
        "parallel_config": Plain(
            "parallel_config",
            reads,
            tensor_parallel_size=1,
            pipeline_parallel_size=1,
            data_parallel_size=1,
            prefill_context_parallel_size=1,
            decode_context_parallel_size=1,
            distributed_executor_backend="uni",
            enable_dbo=False,
            enable_elastic_ep=False,
            use_ubatching=False,
            enable_expert_parallel=False,
        ),
        # vLLM's default compilation (its own compile mode, not stock torch.compile), without
        # sequence parallelism.
        "compilation_config": Plain(
            "compilation_config",
            reads,
            mode=getattr(compilation_mode, "VLLM_COMPILE", None),
            pass_config=Plain("compilation_config.pass_config", reads, enable_sp=False),
        ),
        # The default KV cache: no fast-prefill KV sharing.
        "cache_config": Plain("cache_config", reads, kv_sharing_fast_prefill=False),
        # No HiSparse attention (0.33 forces V2 for it).
        "attention_config": Plain("attention_config", reads, hisparse_config=None),
        # Default scheduling (read only by V1's own checks).
        "scheduler_config": Plain("scheduler_config", reads, async_scheduling=False),
        # None of the optional features: no encoder-cache transfer, diffusion canvas,
        # watermarking, reasoning budget, KV transfer, LoRA.
        "ec_transfer_config": None,
        "diffusion_config": None,
        "watermark_config": None,
        "reasoning_config": None,
        "kv_transfer_config": None,
        "lora_config": None,
    }
    for name, value in values.items():
        object.__setattr__(config, name, value)
    return bool(getattr(config, PROPERTY))


NEVER_STUBBED = frozenset({"vllm", "torch", "transformers"})
MAX_STUBS = 8


def _load_class(registry: Any, arch: str, stubs: set[str]) -> type:
    """The class the registry names for `arch`, imported as vLLM imports it; an optional
    third-party module that is not installed (torchvision, left out of the oracle venvs:
    `venvs.MISMATCHED_BINARY_PACKAGES`) is served by `oracle.StubFinder` and recorded in
    `stubs`, as the differential oracle does. The traits read here are the class's MRO, which
    a stub for an image library does not change."""
    import importlib

    from oracle import StubFinder, missing_module

    module_name, class_name = registry._VLLM_MODELS[arch]
    full = module_name if "." in module_name else f"vllm.model_executor.models.{module_name}"
    for _ in range(MAX_STUBS):
        try:
            return getattr(importlib.import_module(full), class_name)
        except Exception as error:
            missing = missing_module(error).split(".")[0]
            if not missing or missing in NEVER_STUBBED or missing in stubs:
                raise
            stubs.add(missing)
            sys.meta_path.insert(0, StubFinder({missing}))
            for name in [m for m in sys.modules if m == full or m.startswith(f"{full}.")]:
                del sys.modules[name]
    raise ImportError(f"{full}: still failing with stubs for {sorted(stubs)}")


def _experts(arch: str, cls: type, interfaces: Any) -> dict[str, Any]:
    """Whether vLLM counts experts for `arch`, as `ModelConfig.is_moe` does for a checkpoint: the
    architecture's transformers config with its defaults (the model_type found from the class
    name in transformers' auto mappings), asked by vLLM's own `get_num_experts` where the
    release has one taking the text config; else (`moe_source` says which) the class being a
    `MixtureOfExperts`."""
    try:
        from transformers import AutoConfig
        from transformers.models.auto import modeling_auto

        model_type = next(
            (
                key
                for name in dir(modeling_auto)
                if name.endswith("_MAPPING_NAMES")
                for key, value in getattr(modeling_auto, name).items()
                if value == arch or (isinstance(value, tuple | list) and arch in value)
            ),
            None,
        )
        if model_type is None:
            raise LookupError(f"no transformers model_type names {arch}")
        config = AutoConfig.for_model(model_type)
        text = config.get_text_config()
        from vllm.transformers_utils import model_arch_config_convertor as convertor

        base = convertor.ModelArchConfigConvertorBase
        stand_in = types.SimpleNamespace(
            hf_text_config=text, get_num_experts_from_block_configs=lambda: 0
        )
        count = base.get_num_experts(stand_in)
        return {"moe": bool(count), "moe_source": f"{model_type} config: {count} experts"}
    except Exception as error:  # an older release, or a config transformers lacks
        # A Protocol with data members: issubclass() refuses it.
        return {
            "moe": interfaces.MixtureOfExperts in cls.__mro__,
            "moe_source": f"class (no config count: {type(error).__name__}: {error})"[:200],
        }


def traits(archs: list[str]) -> dict[str, Any]:
    import vllm.platforms
    from vllm.model_executor.models import interfaces
    from vllm.model_executor.models import registry as registry_module
    from vllm.model_executor.models.registry import _ModelInfo

    platform = type(vllm.platforms.current_platform).__name__
    answers: dict[str, Any] = {}
    stubs: set[str] = set()
    for arch in archs:
        try:
            cls = _load_class(registry_module, arch, stubs)
            info = _ModelInfo.from_model_cls(cls)
            answers[arch] = {
                "ok": True,
                "module": cls.__module__,
                "qualname": cls.__qualname__,
                "platform": platform,
                "stubs_active": sorted(stubs),
                **_experts(arch, cls, interfaces),
                "hybrid": bool(info.is_hybrid),
                "attention_free": bool(info.is_attention_free),
                "text_generation": bool(getattr(info, "is_text_generation_model", True)),
            }
        except Exception as error:  # reported per arch, not raised
            answers[arch] = {"ok": False, "error": f"{type(error).__name__}: {error}"[:500]}
    return answers


def main(argv: list[str]) -> int:
    request = json.loads(argv[1] if len(argv) > 1 else sys.stdin.read())
    # vLLM logs (registry errors among them) to stdout: everything printed while it works goes
    # to stderr, so that stdout carries the answer alone.
    sys.stdout.flush()
    answer_fd = os.dup(1)
    os.dup2(2, 1)
    try:
        if isinstance(request, dict) and "traits" in request:
            answer = traits(request["traits"])
        else:
            answer = decide(request)
    finally:
        sys.stdout.flush()
        os.dup2(answer_fd, 1)
        os.close(answer_fd)
    print(json.dumps(answer), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
