"""eagle3lint never runs the code it analyses: not the model files, not vLLM's own package.

Every file of a small vLLM tree starts with top-level side effects (writing a marker file,
running a command through `os.system` and `subprocess`). Checking and fixing that tree, in a
subprocess and in-process, must leave no marker behind and never put `vllm` in `sys.modules`.
The tree's model claims no EAGLE-3 support, so the runs ask about it (`--require *`) to get
its blockers and fixes.
"""

from __future__ import annotations

import importlib
import json
import os
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner
from vllm_tree import ARCH, FILES, MODEL_FILE, write_vllm_tree

from eagle3lint.cli import app
from eagle3lint.sources import wheels as download
from eagle3lint.sources.discovery import installed_tree


def hostile(markers: Path) -> Callable[[str], str]:
    """A prelude for each file that leaves three traces in `markers` if it ever runs."""

    def prelude(relpath: str) -> str:
        marker = markers / relpath.replace("/", "__")
        return (
            "import os, pathlib, subprocess\n"
            f"pathlib.Path({str(marker)!r}).write_text('imported')\n"
            f"os.system({f'touch {shlex.quote(str(marker))}.system'!r})\n"
            f"subprocess.run(['touch', {str(marker) + '.subprocess'!r}])\n"
        )

    return prelude


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    """(the folder holding the hostile `vllm/`, the markers folder)."""
    markers = tmp_path / "markers"
    markers.mkdir()
    root = tmp_path / "checkout"
    write_vllm_tree(root, hostile(markers))
    return root, markers


def test_the_preludes_do_run_when_imported(tree: tuple[Path, Path]) -> None:
    """The control: importing the tree for real leaves markers, so their absence means something."""
    root, markers = tree
    subprocess.run([sys.executable, "-c", "import vllm"], cwd=root, check=True)
    assert {p.name for p in markers.iterdir()} == {
        "vllm____init__.py",
        "vllm____init__.py.system",
        "vllm____init__.py.subprocess",
    }


def run_cli(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "eagle3lint", *args],
        cwd=cwd,
        env={**os.environ, "NO_COLOR": "1", **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_check_and_fix_in_a_subprocess_run_nothing(tree: tuple[Path, Path]) -> None:
    root, markers = tree
    before = {relpath: (root / relpath).read_bytes() for relpath in FILES}

    result = run_cli(
        "check", str(root), "--format", "json", "--no-cache", "--require", "*", cwd=root
    )
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    # The hostile files were analysed, not skipped: the model's findings come from them.
    assert [t["arch"] for t in report["targets"]] == [ARCH]
    assert report["vllm"]["version"] == "0.16.0"

    result = run_cli("fix", str(root), "--diff", "--no-cache", "--require", "*", cwd=root)
    assert result.returncode == 1, result.stderr
    assert "+++ b/" in result.stdout
    assert {relpath: (root / relpath).read_bytes() for relpath in FILES} == before

    result = run_cli("fix", str(root), "--no-cache", "--require", "*", cwd=root)
    assert result.returncode in (0, 1), result.stderr
    assert (root / MODEL_FILE).read_bytes() != before[MODEL_FILE]

    assert list(markers.iterdir()) == []


def test_installed_vllm_is_located_without_importing_it(
    tree: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`check` with no PATH finds vLLM with importlib.util.find_spec, which imports nothing."""
    root, markers = tree
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.delitem(sys.modules, "vllm", raising=False)
    importlib.invalidate_caches()
    found = installed_tree()
    assert found is not None and found[1] == root / "vllm"
    assert "vllm" not in sys.modules

    result = run_cli(
        "check",
        "--format",
        "json",
        "--no-cache",
        "--require",
        "*",
        cwd=root.parent,
        env={"PYTHONPATH": str(root)},
    )
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    assert report["vllm"]["contract_source"] == "installed vLLM"
    assert report["vllm"]["root"] == str(root / "vllm")
    assert list(markers.iterdir()) == []


def test_check_and_fix_in_process_import_nothing_of_the_tree(
    tree: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, markers = tree
    monkeypatch.delitem(sys.modules, "vllm", raising=False)
    modules = set(sys.modules)
    runner = CliRunner()

    result = runner.invoke(app, ["check", str(root), "--no-cache", "--jobs", "1", "--require", "*"])
    assert result.exit_code == 1, result.output
    result = runner.invoke(
        app, ["fix", str(root), "--diff", "--no-cache", "--jobs", "1", "--require", "*"]
    )
    assert result.exit_code == 1, result.output

    new = set(sys.modules) - modules
    assert not {m for m in new if m == "vllm" or m.startswith("vllm.")}
    tree_root = str(root)
    assert not [
        m for m in new if str(getattr(sys.modules[m], "__file__", "") or "").startswith(tree_root)
    ]
    assert list(markers.iterdir()) == []


def test_a_release_is_fetched_as_a_wheel_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pip would build a source distribution to read its metadata, running its setup.py."""
    commands: list[list[str]] = []

    def fake_run(command: list[str], **_: object) -> subprocess.CompletedProcess:
        commands.append(command)
        return subprocess.CompletedProcess(command, 1, "", "no matching distribution")

    wheel = "vllm-0.16.0-cp38-abi3-manylinux_2_31_x86_64.whl"
    published = {wheel: download.Wheel(f"https://files.example/{wheel}", "0" * 64)}
    monkeypatch.setattr(download, "published_wheels", lambda version, index, package: published)
    monkeypatch.setattr(download.subprocess, "run", fake_run)
    with pytest.raises(download.DownloadError):
        download.fetch_release("0.16.0", cache_root=tmp_path)
    (command,) = commands
    assert command[1:5] == ["-I", "-m", "pip", "download"]
    assert "--only-binary=:all:" in command
    assert "--no-deps" in command
