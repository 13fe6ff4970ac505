"""The third-party rule pack of `examples/rule-pack`, installed as a user would: its rule is
listed, checked and fixed through the entry points, and its examples pass the same tests as
the built-in rules' (tests/test_rule_examples.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACK = REPO / "examples" / "rule-pack"
ERAS = REPO / "fixtures" / "eras"
MODEL = """\
from torch import nn
from .interfaces import SupportsEagle3
class BareForCausalLM(nn.Module, SupportsEagle3):
    pass
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The pack installed into a folder of its own (offline: no index, no build isolation)."""
    root = tmp_path_factory.mktemp("pack")
    source = root / "src"
    shutil.copytree(PACK, source)  # the build writes beside the sources: not into the repo
    target = root / "site"
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation"]
    subprocess.run(
        [*pip, "--no-index", "--target", str(target), str(source)], check=True, capture_output=True
    )
    return target


def run(site: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(REPO / "tests")])}
    return subprocess.run(
        [sys.executable, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=600
    )


def test_the_pack_is_listed_checked_and_fixed(site: Path, tmp_path: Path) -> None:
    listed = run(site, "-m", "eagle3lint", "rules")
    assert listed.returncode == 0, listed.stderr
    assert "ACME101" in listed.stdout

    tree = tmp_path / "e3_mixin"
    shutil.copytree(ERAS / "e3_mixin", tree)
    model = tree / "vllm" / "model_executor" / "models" / "bare.py"
    model.write_text(MODEL, encoding="utf-8")
    check = [str(model), "--select", "ACME", "--no-cache", "--require", "*"]
    result = run(site, "-m", "eagle3lint", "check", *check, "--output-format", "json")
    report = json.loads(result.stdout)
    assert report["errors"] == [], report["errors"]
    [finding] = [f for target in report["targets"] for f in target["findings"]]
    assert (finding["code"], finding["rule"], finding["line"]) == (
        "ACME101",
        "acme-draft-layers",
        3,
    )
    assert finding["fixable"] is True

    fixed = run(site, "-m", "eagle3lint", "fix", *check)
    assert "1 file(s) changed" in fixed.stdout, fixed.stdout + fixed.stderr
    assert "    ACME_DRAFT_LAYERS = ()\n    pass\n" in model.read_text(encoding="utf-8")
    again = run(site, "-m", "eagle3lint", "check", *check, "--output-format", "json")
    assert [f for target in json.loads(again.stdout)["targets"] for f in target["findings"]] == []


@pytest.mark.slow  # a whole pytest session in a subprocess; the pack's loading is fast-tier
def test_the_pack_examples_pass_the_built_in_example_tests(site: Path) -> None:
    result = run(
        site, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "acme",
        str(REPO / "tests" / "test_rule_examples.py"), cwd=REPO,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 passed" in result.stdout, result.stdout
