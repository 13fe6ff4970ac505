"""What the language server asks of the check, free of the protocol: the settings, a check of
the open files as their buffers hold them, and `fix`'s result computed in memory.

The check is the hook's: the open files are its PATHs, so the whole tree is indexed and only
the targets those files define are judged, exactly as `eagle3lint check FILE...` judges them.
Buffers reach the analysis through `sources.files.overlaid`, never through a copy of the tree.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from eagle3lint.commands.options import RunArgs
from eagle3lint.engine import CheckRun, run_check
from eagle3lint.errors import UsageError
from eagle3lint.fixer import MAX_PASSES
from eagle3lint.sources.files import overlaid

ENGINES = ("vllm", "sglang")

DEBOUNCE_SECONDS = 0.3
"""How long typing must pause before the open files are judged again: a check of one model
file of a whole vLLM tree takes about 0.4 s warm, so judging every keystroke would queue."""


@dataclass(frozen=True)
class Settings:
    """The client's initialization options; `[tool.eagle3lint]` supplies the rest, read from
    above the files judged as the command line reads it (the options win, as flags do)."""

    release: str | None = None
    """`--vllm X.Y.Z` (or `--sglang`): the contract of out-of-tree model files."""
    engine: str = "vllm"
    baseline: Path | None = None
    debounce: float = DEBOUNCE_SECONDS

    @classmethod
    def from_options(cls, options: object, root: Path | None) -> Settings:
        """The settings from `initializationOptions` (a JSON object, or nothing); a relative
        baseline is relative to the workspace `root`. UsageError names what is wrong."""
        if options is None:
            return cls()
        if not isinstance(options, Mapping):
            raise UsageError("initializationOptions must be an object")
        unknown = sorted(set(options) - {"release", "engine", "baseline", "debounce"})
        if unknown:
            raise UsageError(f"unknown initializationOptions: {', '.join(unknown)}")
        release, engine = options.get("release"), options.get("engine", "vllm")
        baseline, debounce = options.get("baseline"), options.get("debounce", DEBOUNCE_SECONDS)
        if release is not None and not isinstance(release, str):
            raise UsageError("initializationOptions.release must be a version string (0.34.0)")
        if engine not in ENGINES:
            raise UsageError(f"initializationOptions.engine must be one of {', '.join(ENGINES)}")
        if baseline is not None and not isinstance(baseline, str):
            raise UsageError("initializationOptions.baseline must be a path")
        if not isinstance(debounce, int | float) or isinstance(debounce, bool) or debounce < 0:
            raise UsageError("initializationOptions.debounce must be seconds (0 or more)")
        path = Path(baseline).expanduser() if baseline else None
        if path is not None and not path.is_absolute() and root is not None:
            path = root / path
        return cls(release, engine, path, float(debounce))

    def run_args(self, files: list[Path], fixing: str | None = None) -> RunArgs:
        """The command line these settings amount to for `files`: `check`'s, or with `fixing`
        an architecture, `fix --arch`'s (which takes no `--baseline`)."""
        vllm = self.release if self.engine == "vllm" else None
        sglang = self.release if self.engine == "sglang" else None
        return RunArgs(
            paths=list(files),
            vllm=vllm,
            sglang=sglang,
            arch=[fixing] if fixing else None,
            baseline=None if fixing else self.baseline,
        )


def judge(settings: Settings, buffers: Mapping[Path, bytes]) -> CheckRun:
    """`eagle3lint check` of the files in `buffers` (by real path), each as its buffer holds
    it."""
    with overlaid(buffers):
        options = settings.run_args(sorted(buffers)).check_options(progress=False)
        return run_check(options)


@dataclass
class FixResult:
    """What `eagle3lint fix --arch ARCH FILE...` would write, and why it would leave some
    targets alone."""

    contents: dict[Path, tuple[bytes, bytes]]
    """Every file it would change: its bytes now (the buffer's, if open) and after."""
    refused: list[str]
    """`fix`'s `not fixed:` lines."""


def fixed_in_memory(settings: Settings, buffers: Mapping[Path, bytes], arch: str) -> FixResult:
    """`fix`'s passes (write the plan, check again, up to `fixer.MAX_PASSES`), each pass's
    files held in memory instead of written: the same plans, so the same bytes."""
    files = sorted(buffers)
    contents = dict(buffers)
    before: dict[Path, bytes] = {}
    refused: list[str] = []
    for _ in range(MAX_PASSES):
        with overlaid(contents):
            run = run_check(settings.run_args(files, arch).check_options(progress=False))
        refused = run.plan.lines()
        changed = run.plan.changed
        if not changed:
            break
        for edit in changed:
            assert edit.new is not None
            path = Path(os.path.realpath(edit.path))  # as the buffers are named
            before.setdefault(path, edit.original)
            contents[path] = edit.new
    return FixResult(
        {path: (old, contents[path]) for path, old in before.items() if contents[path] != old},
        refused,
    )
