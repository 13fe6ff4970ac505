"""`eagle3lint fix`: its options, and the run `fixer.run_fix` does."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from eagle3lint.commands.guard import guard, housekeeping
from eagle3lint.commands.options import RUN_ARGS, RunArgs, takes

FIX_ARGS = tuple(
    name for name in RUN_ARGS if name not in ("extend_select", "respect_gitignore", "baseline")
)
"""`fix` takes no baseline: what it repairs is every fixable finding."""


@takes(
    *FIX_ARGS,
    helps={
        "paths": "What to repair: a vLLM checkout or package folder, model files in one, or "
        "out-of-tree model files. None: the installed vLLM.",
        "vllm": "Plan the repairs on release X.Y.Z's sources from PyPI; a cached release is "
        "never written: with --diff, print them as a patch for your checkout.",
        "sglang": "Plan the repairs on SGLang release X.Y.Z's sources from PyPI (with --diff).",
    },
)
def fix(
    args: RunArgs,
    diff: Annotated[
        bool, typer.Option("--diff", help="Print a unified diff; write nothing.")
    ] = False,
    recover: Annotated[
        bool,
        typer.Option(
            "--recover",
            help=(
                "Only undo what an interrupted fix run wrote (fix stops at its journal and "
                "says what this would undo)."
            ),
        ),
    ] = False,
) -> None:
    """Apply every fixable finding, then check again (exit 0 ready, 1 blockers remain)."""
    with guard(args.debug):
        from eagle3lint.errors import UsageError
        from eagle3lint.fixer import run_fix

        if diff and recover:
            raise UsageError("--diff writes nothing and --recover writes: give one of them")
        options = args.check_options(progress=sys.stderr.isatty())
        code = run_fix(options, diff=diff, recover=recover)
        if not args.no_cache:
            housekeeping()
    raise typer.Exit(code)
