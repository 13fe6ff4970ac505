"""The engine face: a wing that is not vLLM plugs in through it alone, and the core names no
vLLM module outside vLLM's wing.

The scratch engine (tests/data/toy_engine: a `toyserve` tree with its own layout, registry and
contract, and a wing and rule registered by entry points) is run in a subprocess, as an
installed plugin would be: its dist-info lies on PYTHONPATH, nothing of it is registered in the
test process, and no file outside its folder knows about it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "eagle3lint"
TOY = Path(__file__).resolve().parent / "data" / "toy_engine"


def run_toy(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(TOY)}
    return subprocess.run(
        [sys.executable, "-m", "eagle3lint", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def toy_tree(tmp_path: Path) -> Path:
    shutil.copytree(TOY / "tree", tmp_path / "tree")
    return tmp_path / "tree" / "toyserve"


def test_a_scratch_engine_is_discovered_checked_and_reported_through_the_face(
    toy_tree: Path,
) -> None:
    result = run_toy("check", str(toy_tree), "--format", "json", "--no-cache", cwd=toy_tree.parent)
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    assert "vllm" not in report
    assert report["toy"]["version"] == "1.0"
    assert report["toy"]["details"] == {"hooks": ["capture_hidden", "embed_and_head"]}
    verdicts = {t["arch"]: t["eagle3_ready"] for t in report["targets"]}
    assert verdicts == {"ReadyForCausalLM": True, "HalfForCausalLM": False}
    codes = [f["code"] for t in report["targets"] for f in t["findings"]]
    # Only the toy engine's rule judged its targets: vLLM's rules are for vLLM's wing.
    assert codes == ["TOY101"]
    assert report["errors"] == []


def test_a_file_of_the_scratch_tree_is_judged_as_in_the_tree(toy_tree: Path) -> None:
    half = toy_tree / "models" / "half.py"
    result = run_toy("check", str(half), "--format", "full", "--no-cache", cwd=toy_tree.parent)
    assert result.returncode == 1, result.stderr
    assert "eagle3lint Toyserve 1.0 (tree)" in result.stdout
    assert "TOY101 HalfForCausalLM has no embed_and_head()" in result.stdout
    assert "1 architecture of Toyserve 1.0 (tree), 0 EAGLE-3 ready" in result.stdout

    ready = run_toy("check", str(toy_tree / "models" / "ready.py"), cwd=toy_tree.parent)
    assert ready.returncode == 0, ready.stdout + ready.stderr


def test_the_scratch_engine_reads_its_contract_from_its_tree(toy_tree: Path) -> None:
    spec = toy_tree / "spec.py"
    spec.write_text(spec.read_text().replace("def embed_and_head", "def _private_helper"))
    result = run_toy("check", str(toy_tree), "--format", "json", "--no-cache", cwd=toy_tree.parent)
    report = json.loads(result.stdout)
    assert report["toy"]["details"]["hooks"] == ["capture_hidden", "_private_helper"]
    assert {t["arch"]: t["eagle3_ready"] for t in report["targets"]} == {
        "ReadyForCausalLM": False,
        "HalfForCausalLM": False,
    }


VLLM_MODULE_PATH = re.compile(r"(?<![\w./])vllm[./][A-Za-z_]")
"""`vllm.model_executor...`, `vllm/v1/...`: a module of vLLM's, not `eagle3lint.engines.vllm`."""


def test_no_module_outside_the_vllm_wing_names_a_vllm_module_path() -> None:
    wing = PACKAGE / "engines" / "vllm"
    offenders = [
        f"{path.relative_to(PACKAGE)}:{number}: {line.strip()}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if not path.is_relative_to(wing)
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if VLLM_MODULE_PATH.search(line)
    ]
    assert offenders == []


def test_the_pattern_finds_what_it_is_for() -> None:
    assert VLLM_MODULE_PATH.search('REGISTRY = "vllm.model_executor.models.registry"')
    assert VLLM_MODULE_PATH.search("read vllm/v1/spec_decode/eagle.py")
    assert not VLLM_MODULE_PATH.search("from eagle3lint.engines.vllm.names import SETTER")
    assert not VLLM_MODULE_PATH.search("eagle3lint/engines/vllm/wing.py")
