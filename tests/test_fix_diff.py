"""`fix --diff` heads each file's patch with its path in the tree, relative to the working
directory like every other file: a model file that is a link by the link's path, not by the path
of the file it leads to (issue "Hostile input, round 4", item 6)."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from typer.testing import CliRunner
from vllm_tree import MODEL_FILE, write_vllm_tree

from eagle3lint.cli import app


@pytest.mark.parametrize("leads", ["out of the tree", "elsewhere in the tree"])
def test_a_linked_model_file_is_named_by_its_link(tmp_path: Path, leads: str) -> None:
    """Before, the header named the file the link leads to, or the link's absolute path."""
    root = write_vllm_tree(tmp_path / "tree").parent
    model = root / MODEL_FILE
    target = tmp_path / "elsewhere" if leads == "out of the tree" else root / "shared"
    target.mkdir()
    model.rename(target / "llama_impl.py")
    model.symlink_to(target / "llama_impl.py")
    for cwd, path, name in ((root, ".", MODEL_FILE), (tmp_path, "tree", f"tree/{MODEL_FILE}")):
        with contextlib.chdir(cwd):
            result = CliRunner().invoke(app, ["fix", "--diff", path, "--require", "*"])
        assert result.exit_code == 1, result.output
        headers = [line for line in result.stdout.splitlines() if line[:4] in ("--- ", "+++ ")]
        assert headers == [f"--- a/{name}", f"+++ b/{name}"], result.stdout
