"""`eagle3lint fix` as a user runs it on a CPU build's tree, and the overlay that lays the
changed files over the installed package: what `test_e2e_repairs.py` and the sweep's repairs
(`sweep.py --repairs`) share."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from builds import Release
from venvs import copy_python_files

from eagle3lint.report.model import TargetResult


@dataclass
class Repair:
    """What `fix` did to a copy of a release's tree for one architecture."""

    copy: Path
    """The repaired copy of the installed `vllm` package."""
    overlay: Path
    """The changed files alone, laid out as `vllm/...` (what `Workbench.generate` overlays)."""
    changed: list[str]
    """The modules `fix` changed (`vllm.model_executor.models.gemma`)."""
    output: str
    """What `fix` printed."""
    after: TargetResult
    """eagle3lint's verdict on the repaired copy."""


def repair(release: Release, arch: str, target: Path, workdir: Path) -> Repair:
    """`eagle3lint fix --arch ARCH --hf-config TARGET/config.json` on a copy of `release`'s
    installed package in `workdir`, the changed files collected in an overlay, and the verdict
    on the repaired copy. Raises AssertionError when `fix` fails (exit 2 or a traceback)."""
    copy = workdir / "copy" / "vllm"
    copy_python_files(release.tree, copy)
    config = target / "config.json"
    command = ["fix", str(copy), "--arch", arch, "--hf-config", str(config)]
    fixed = subprocess.run(
        [sys.executable, "-m", "eagle3lint", *command],
        capture_output=True,
        text=True,
        check=False,
    )
    output = fixed.stdout + fixed.stderr
    assert fixed.returncode in (0, 1), output[-6000:]
    overlay = workdir / "overlay"
    changed = []
    for path in sorted(copy.rglob("*.py")):
        relative = path.relative_to(copy)
        if path.read_bytes() != (release.tree / relative).read_bytes():
            (overlay / "vllm" / relative).parent.mkdir(parents=True, exist_ok=True)
            (overlay / "vllm" / relative).write_bytes(path.read_bytes())
            changed.append("vllm." + ".".join(relative.with_suffix("").parts))
    return Repair(copy, overlay, changed, output, release.verdict(arch, target, tree=copy))
