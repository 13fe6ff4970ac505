"""mkdocs hook: the EAGLE-3 compatibility matrix of this vLLM checkout, as a file to include.

Copy this file to `docs/mkdocs/hooks/` in vLLM and list it under `hooks:` in `mkdocs.yaml`; a
page includes the generated file with pymdownx.snippets:

    --8<-- "docs/generated/eagle3_matrix.inc.md"

The hook runs `eagle3lint matrix vllm --format markdown -o docs/generated/eagle3_matrix.inc.md`
from the folder holding `mkdocs.yaml`. eagle3lint reads the checkout's sources statically: it
imports nothing from vLLM, needs no GPU and no network, and downloads nothing (the tree is given
as a path). Install it beside mkdocs (`pip install eagle3lint`).
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError

VLLM_TREE = "vllm"
"""The package folder to check, relative to the folder holding mkdocs.yaml."""

OUTPUT = "docs/generated/eagle3_matrix.inc.md"
"""The generated file, relative to the same folder (vLLM's mkdocs.yaml excludes `*.inc.md` from
the pages, so it is only ever included)."""

TIMEOUT = 900
"""Seconds: a whole vLLM tree takes well under a minute; a hung build should still end."""

log = logging.getLogger("mkdocs.hooks.eagle3_matrix")
_generated = False


def on_config(config: MkDocsConfig) -> None:
    """Write the matrix once per mkdocs run: `mkdocs serve` calls this on every rebuild, and a
    file written into docs/ on each would start the next one."""
    global _generated
    if _generated:
        return
    root = Path(config.config_file_path).resolve().parent
    generate(root)
    _generated = True


def generate(root: Path) -> None:
    """Run `eagle3lint matrix` on `root`'s vLLM tree; a PluginError (the build stops with its
    message) if eagle3lint is missing, the tree is not there or no table was written."""
    if not (root / VLLM_TREE).is_dir():
        raise PluginError(f"eagle3_matrix: no vLLM tree at {root / VLLM_TREE}")
    output = root / OUTPUT
    # Gone unless this run writes it: a stale table is never published as a new one.
    output.unlink(missing_ok=True)
    command = [eagle3lint(), "matrix", VLLM_TREE, "--format", "markdown", "-o", OUTPUT]
    log.info("eagle3_matrix: eagle3lint %s", " ".join(command[1:]))
    try:
        done = subprocess.run(
            command, cwd=root, capture_output=True, text=True, timeout=TIMEOUT, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PluginError(f"eagle3_matrix: eagle3lint did not run: {exc}") from exc
    if not output.is_file():
        raise PluginError(
            f"eagle3_matrix: eagle3lint exited with {done.returncode} and wrote no table:\n"
            + done.stderr.strip()
        )
    if done.returncode != 0:
        # Exit 2 with a table: some release had input errors, which the table lists too.
        log.warning("eagle3_matrix: %s", done.stderr.strip())


def eagle3lint() -> str:
    """The eagle3lint command: the one installed beside this Python first (mkdocs run from a
    venv that is not activated), else the one on PATH."""
    here = os.path.dirname(sys.executable)
    # An empty folder would make `which` look in the working directory: vLLM's checkout.
    found = (here and shutil.which("eagle3lint", path=here)) or shutil.which("eagle3lint")
    if found is None:
        raise PluginError(
            "eagle3_matrix: eagle3lint is not installed; `pip install eagle3lint` beside mkdocs "
            "(it reads vLLM's sources, never imports them)"
        )
    return found
