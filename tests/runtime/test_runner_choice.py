"""The model runner eagle3lint says vLLM picks by default is the one vLLM's own code picks.

For each release of `RUNNER_RELEASES` (its venv installed once, `venvs.py`) and a sample of
architectures (dense, listed for V2, MoE not listed, hybrid, attention-free, multimodal):

- eagle3lint checks the installed `vllm` package (the code the venv runs) statically, and its
  JSON gives each target's `runner` (null when the release has one runner only: that one);
- the release's interpreter loads each class through vLLM's registry and reads the traits
  `VllmConfig` decides on (`runner_choice.py traits`): `is_hybrid` / `is_attention_free` from the
  registry's own `_ModelInfo`, and MoE;
- then evaluates vLLM's own `VllmConfig.use_v2_model_runner` with those traits for the plain
  CUDA EAGLE-3 setup (`runner_choice.py`, whose stand-in values say why each is the plain one);
  before 0.22 (no such property) V1 is the runner.

Experts: vLLM counts them in the checkpoint's config (`ModelConfig.is_moe`); the oracle builds
each architecture's transformers config with its defaults and asks vLLM's own `get_num_experts`
(`moe_source` in the traits), while eagle3lint reads the model code (`MixtureOfExperts`, or a
read of one of the attributes `get_num_experts` lists). GPT-OSS has experts
(`num_local_experts: 128`) without being a `MixtureOfExperts`: both say V1 on 0.25.0.

vLLM on this machine resolves a CPU (or unspecified) platform when it loads the classes; the
sample avoids the `vllm/models/<family>` packages that pick a class per platform, and the test
asserts that eagle3lint analysed the very class vLLM loaded, so both sides answer for CUDA's
class. The decision itself is taken with a CUDA platform stand-in.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from runtime import in_venv, installed_tree
from venvs import install

RUNNER_CHOICE = Path(__file__).resolve().parent / "runner_choice.py"
TIMEOUT = 1800

RUNNER_RELEASES: tuple[str, ...] = ("0.16.0", "0.18.0", "0.25.0", "0.33.0", "0.34.0")
"""Before the choice (V1 only by default), the 0.22-0.25 era (listed architectures, dense
models, hybrid and attention-free kept on V1), V2 by default, and V2 alone (V1 gone): every
release the runtime suite installs."""
CPU = "@cpu"
"""The key suffix of the same question for vLLM's CPU build (a CPU platform, no Triton)."""

SAMPLE: tuple[str, ...] = (
    # Dense.
    "LlamaForCausalLM",
    "GemmaForCausalLM",
    # MoE by the class (MixtureOfExperts), not listed for V2 in 0.25.0.
    "MixtralForCausalLM",
    "Qwen3MoeForCausalLM",
    # Experts without the interface (its config's `num_local_experts`).
    "GptOssForCausalLM",
    # Listed in 0.25.0's DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES (DeepseekV2 with experts).
    "DeepseekV2ForCausalLM",
    "Qwen2MoeForCausalLM",
    "GraniteMoeForCausalLM",
    # Hybrid (IsHybrid), one of them with MixtureOfExperts too.
    "JambaForCausalLM",
    "NemotronHForCausalLM",
    # Attention-free (IsAttentionFree).
    "MambaForCausalLM",
    # Multimodal: a dense language model, and one whose class has MixtureOfExperts.
    "LlavaForConditionalGeneration",
    "Llama4ForConditionalGeneration",
)


@dataclass
class Choice:
    version: str
    eagle3lint: dict[str, dict[str, Any]]
    """arch → eagle3lint's JSON target (its `runner`, class and path)."""
    runners: dict[str, Any]
    """eagle3lint's runner facts for the release (`details.runners`)."""
    traits: dict[str, dict[str, Any]]
    """arch → what vLLM's registry loaded and the traits it shows."""
    vllm: dict[str, str]
    """arch → "v1" | "v2" | "error: ..." from vLLM's own property."""
    stand_in_reads: list[str]
    """Attributes vLLM's code read that the stand-in config does not set (answered None)."""

    def eagle3lint_runner(self, arch: str, platform: str = "cuda") -> str | None:
        """eagle3lint's runner on `platform`: `runner_by_platform`'s where it says, else the
        default `runner`; null (one runner only) is that runner."""
        target = self.eagle3lint.get(arch)
        if target is None:
            return None
        on_platform = (target.get("runner_by_platform") or {}).get(platform)
        if on_platform is not None:
            return str(on_platform)
        if target["runner"] is None and len(self.runners.get("present", ())) == 1:
            return str(self.runners["present"][0])
        return target["runner"]

    def same_class(self, arch: str) -> bool:
        target, trait = self.eagle3lint.get(arch), self.traits[arch]
        if target is None or not trait["ok"]:
            return False
        module = trait["module"].replace(".", "/")
        paths = (f"{module}.py", f"{module}/__init__.py")  # a module or a package
        return target["class"] == trait["qualname"] and target["path"].endswith(paths)

    def table(self) -> str:
        lines = [
            f"vLLM {self.version}: runners {self.runners.get('present')} "
            f"default {self.runners.get('default')}; stand-in reads: {self.stand_in_reads or 0}",
            f"  {'arch':34} {'moe':5} {'hyb':5} {'af':5} {'eagle3lint':10} {'vLLM':10} "
            f"{'cpu':9} class",
        ]
        for arch in SAMPLE:
            trait = self.traits[arch]
            flags = [str(trait.get(k, "?")) for k in ("moe", "hybrid", "attention_free")]
            ours, theirs = self.eagle3lint_runner(arch), self.vllm.get(arch, "not asked")
            cpu = f"{self.eagle3lint_runner(arch, 'cpu')}/{self.vllm.get(arch + CPU, '-')[:3]}"
            same = ours == theirs and cpu.split("/")[0] == cpu.split("/")[1]
            mark = "" if same else "  <-- DIFFERENT"
            where = f"{trait['module']}.{trait['qualname']}" if trait["ok"] else trait["error"]
            lines.append(
                f"  {arch:34} {flags[0]:5} {flags[1]:5} {flags[2]:5} {ours!s:10} "
                f"{theirs[:60]:10} {cpu:9} {where[:90]}{mark}"
            )
        return "\n".join(lines)


def _in_venv(python: Path, request: Any) -> dict[str, Any]:
    return in_venv(python, RUNNER_CHOICE, request, timeout=TIMEOUT)[-1]


def _eagle3lint(tree: Path) -> dict[str, Any]:
    args = [sys.executable, "-m", "eagle3lint", "check", str(tree), "--format", "json"]
    for arch in SAMPLE:
        args += ["--arch", arch]
    done = subprocess.run(args, capture_output=True, text=True, timeout=TIMEOUT, check=False)
    assert done.returncode in (0, 1), done.stderr[-3000:]
    return json.loads(done.stdout)


_CHOICES: dict[str, Choice] = {}


@pytest.fixture(scope="module", params=RUNNER_RELEASES)
def choice(request: pytest.FixtureRequest) -> Choice:
    version = request.param
    if version not in _CHOICES:
        python = install(version)
        report = _eagle3lint(installed_tree(version))
        traits = _in_venv(python, {"traits": list(SAMPLE)})
        cases = [
            {
                "arch": arch,
                "moe": trait["moe"],
                "hybrid": trait["hybrid"],
                "attention_free": trait["attention_free"],
                **platform,
            }
            for arch, trait in traits.items()
            if trait["ok"]
            for platform in ({}, {"platform": "cpu", "key": arch + CPU})
        ]
        answers = _in_venv(python, cases)
        reads = answers.pop("_stand_in_reads", [])
        _CHOICES[version] = Choice(
            version,
            {t["arch"]: t for t in report["targets"]},
            report["vllm"]["details"]["runners"] or {},
            traits,
            answers,
            reads,
        )
        print(_CHOICES[version].table())
    return _CHOICES[version]


def test_every_sample_arch_is_loaded_and_analysed(choice: Choice) -> None:
    """vLLM's registry loads every sample class, and eagle3lint reports the same class."""
    problems = [
        f"{arch}: vLLM {choice.traits[arch].get('error') or choice.traits[arch]['module']}, "
        f"eagle3lint {choice.eagle3lint.get(arch, {}).get('path', 'no target')}"
        for arch in SAMPLE
        if not choice.same_class(arch)
    ]
    assert not problems, "\n".join(problems) + "\n" + choice.table()


def test_vllm_decides_without_error(choice: Choice) -> None:
    errors = {arch: answer for arch, answer in choice.vllm.items() if answer not in ("v1", "v2")}
    assert not errors, f"{errors}\n{choice.table()}"


def test_eagle3lint_runner_is_vllms_default(choice: Choice) -> None:
    """For the plain CUDA EAGLE-3 setup, eagle3lint's `runner` is what vLLM's property says."""
    different = [
        arch
        for arch in SAMPLE
        if choice.same_class(arch) and choice.eagle3lint_runner(arch) != choice.vllm.get(arch)
    ]
    assert not different, f"eagle3lint and vLLM disagree on {different}:\n{choice.table()}"


def test_eagle3lint_runner_on_cpu_is_vllms(choice: Choice) -> None:
    """vLLM's CPU build (no Triton) runs what eagle3lint's `runner_by_platform["cpu"]` says, or
    the default runner where it says nothing."""
    different = [
        arch
        for arch in SAMPLE
        if choice.same_class(arch)
        and choice.eagle3lint_runner(arch, "cpu") != choice.vllm.get(arch + CPU)
    ]
    assert not different, f"eagle3lint and vLLM disagree on CPU for {different}:\n{choice.table()}"
