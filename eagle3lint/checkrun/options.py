"""The options of a check and what they say before anything is analysed: which files and tree
(`discover_for`) and which files are left out (`excluder_for`). Light on purpose: a check the
whole-run cache answers reads its options and stops here, never loading the engine."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eagle3lint.sandbox import DEFAULT_RULE_TIMEOUT
from eagle3lint.sources.discovery import Workspace, discover
from eagle3lint.sources.walk import Excluder


@dataclass
class CheckOptions:
    paths: list[Path] = field(default_factory=list)
    release: str | None = None
    """A release to check from PyPI (`--vllm X.Y.Z`, `--sglang X.Y.Z`), of `release_engine`."""
    release_engine: str = "vllm"
    archs: list[str] = field(default_factory=list)
    require: list[str] = field(default_factory=list)
    """Architectures (or class names) that must be EAGLE-3 ready whether or not their code
    claims support; `*` asks about every one (what a support matrix needs)."""
    hf_config: Path | None = None
    model_type: str | None = None
    platform: str | None = None
    """The platform the engine runs on (`--platform`), which decides its model runner; None:
    the installed build's, else the engine's default."""
    select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    exclude_root: Path | None = None
    """The folder of the configuration that set `exclude` (its globs are relative to it)."""
    respect_gitignore: bool = True
    baseline: Path | None = None
    """Findings recorded there are not reported (see `baseline`)."""
    rule_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    rule_timeout: float = DEFAULT_RULE_TIMEOUT
    """Seconds one rule may run on one target before it is stopped (EAG903)."""
    jobs: int | None = None
    use_cache: bool = True
    progress: bool = False
    on_file: Callable[[], None] | None = None
    """Called once per file analysed (the terminal's progress line)."""
    pairing: Any = None
    """The draft `eagle3lint pair` checks against the target (see `RuleContext.pairing`)."""
    reuse_verdicts: bool = False
    """A whole-tree run takes the verdicts of the targets whose reads are unchanged from the
    last such run (`checkrun.verdicts`): those are then `Judged` in `CheckRun.targets`, which
    hold what the report reads of a target, for callers that read only the report."""
    plan_fixes: bool = True
    """Plan the repairs (what `[*]` promises). Off for reports that show verdicts alone (the
    matrix): their findings are then none fixable, which costs nothing to compute."""


def discover_for(options: CheckOptions) -> Workspace:
    """What the options' paths mean (see `sources.discovery`)."""
    return discover(
        options.paths,
        options.release,
        excluder_for(options),
        options.progress,
        options.respect_gitignore,
        options.release_engine,
    )


def excluder_for(options: CheckOptions) -> Excluder:
    """`exclude` relative to its configuration's folder and to each folder given as PATH."""
    bases = [p for p in options.paths if os.path.isdir(p)]
    if options.exclude_root is not None:
        bases.append(options.exclude_root)
    return Excluder(options.exclude, bases)
