"""One CPU build of vLLM as the end-to-end tests see it: its workbench (`runs.py`), its installed
tree, and eagle3lint's verdicts on that tree."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from runs import Workbench

from eagle3lint.engine import CheckOptions, run_check
from eagle3lint.report.model import TargetResult


@dataclass
class Release:
    version: str
    bench: Workbench
    tree: Path
    """The installed `vllm` package eagle3lint checks."""

    def verdict(self, arch: str, target: Path, tree: Path | None = None) -> TargetResult:
        """eagle3lint's verdict on `arch`, asked as a user asks about a checkpoint:
        `check --arch ARCH --hf-config TARGET/config.json`, on the installed tree or `tree` (a
        repaired copy of it)."""
        options = CheckOptions(
            paths=[tree or self.tree], archs=[arch], hf_config=target / "config.json"
        )
        (result,) = [t for t in run_check(options).report.targets if t.arch == arch]
        return result
