"""Discovery like ruff's: git-ignored and default-excluded folders are not read, configuration
is found above the analysed path, `exclude` holds in every path form, and files of a vLLM
checkout outside `vllm/` use the checkout's contract."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from eagle3lint.cli import app
from eagle3lint.sources.walk import python_files

ERA = Path(__file__).resolve().parent.parent / "fixtures" / "eras" / "e2_stub"
MODEL = "from torch import nn\n\n\nclass {name}ForCausalLM(nn.Module):\n    pass\n"


def check(*args: str) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(app, ["check", *args, "--format", "json", "--no-cache"])
    assert result.exit_code in (0, 1, 2), result.output
    return result.exit_code, json.loads(result.stdout)


def plugin_repo(root: Path) -> Path:
    for rel, name in [
        ("models/mine.py", "Mine"),
        (".venv/lib/python3.11/site-packages/pkg/other.py", "Venv"),
        ("generated/gen.py", "Generated"),
        ("build/lib/built.py", "Built"),
    ]:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(MODEL.format(name=name))
    (root / ".gitignore").write_text("generated/\n")
    return root


def names(files: list[Path], root: Path) -> set[str]:
    return {f.relative_to(root).as_posix() for f in files}


def test_git_ignored_and_default_excluded_folders_are_not_read(tmp_path: Path) -> None:
    root = plugin_repo(tmp_path / "repo")
    assert names(python_files(root), root) == {"models/mine.py"}  # no repository
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    assert names(python_files(root), root) == {"models/mine.py"}  # in a repository
    unfiltered = python_files(root, respect_gitignore=False)
    assert names(unfiltered, root) == {"models/mine.py", "generated/gen.py"}


def test_check_of_a_plugin_repository_reads_only_its_own_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = plugin_repo(tmp_path / "repo")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    monkeypatch.chdir(root)
    _, report = check(".")
    assert {t["class"] for t in report["targets"]} == {"MineForCausalLM"}
    _, report = check(".", "--no-respect-gitignore")
    assert {t["class"] for t in report["targets"]} == {"MineForCausalLM", "GeneratedForCausalLM"}


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    shutil.copytree(ERA, tmp_path / "checkout")
    return tmp_path / "checkout"


@pytest.mark.parametrize("name", ["pyproject.toml", "eagle3lint.toml"])
def test_the_trees_configuration_applies_from_any_working_directory(
    checkout: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    table = "[tool.eagle3lint]\n" if name == "pyproject.toml" else ""
    (checkout / name).write_text(table + 'ignore = ["EAG3"]\n')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for cwd in (elsewhere, checkout / "vllm" / "model_executor"):
        monkeypatch.chdir(cwd)
        for path in (checkout / "vllm", checkout / "vllm/model_executor/models/no_tap.py"):
            _, report = check(str(path), "--require", "*")
            found = {f["code"] for t in report["targets"] for f in t["findings"]}
            assert found and not {c for c in found if c.startswith("EAG3")}, (cwd, path)


def test_exclude_holds_in_every_path_form(checkout: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (checkout / "pyproject.toml").write_text('[tool.eagle3lint]\nexclude = ["**/no_tap.py"]\n')
    for cwd in (checkout, checkout / "vllm"):
        monkeypatch.chdir(cwd)
        _, whole = check(str(checkout / "vllm"), "--require", "*")
        archs = {t["arch"] for t in whole["targets"]}
        assert "NoTapForCausalLM" not in archs and "GoodLlamaForCausalLM" in archs
        assert not [
            f for t in whole["targets"] for f in t["findings"] if f["path"].endswith("no_tap.py")
        ]
        code, single = check(str(checkout / "vllm/model_executor/models/no_tap.py"))
        assert (code, single["targets"]) == (0, [])


def test_files_of_a_checkout_outside_vllm_use_its_contract(checkout: Path) -> None:
    tests = checkout / "tests" / "test_models.py"
    tests.parent.mkdir()
    tests.write_text("def test_nothing():\n    pass\n")
    code, report = check(str(tests))
    assert code == 0 and report["errors"] == []
    assert report["vllm"]["contract_source"] == "tree"
    assert report["vllm"]["root"] == str(checkout / "vllm")
    assert report["targets"] == []
