"""File arguments (what pre-commit passes) report what those files decide, nothing else."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from eagle3lint.cli import app

ERA = Path(__file__).resolve().parent.parent / "fixtures" / "eras" / "e2_stub"
MODELS = Path("vllm/model_executor/models")
WRAPPER = "KimiLikeForConditionalGeneration"


@pytest.fixture
def tree(era_copy: Path) -> Path:
    return era_copy


def check(*args: str) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(app, ["check", *args, "--format", "json", "--no-cache"])
    assert result.exit_code in (0, 1, 2), result.output
    return result.exit_code, json.loads(result.stdout)


def test_a_target_defined_in_the_file_brings_all_its_findings(tree: Path) -> None:
    code, report = check(str(MODELS / "mm_wrapper.py"), "--require", WRAPPER)
    assert code == 1
    [target] = [t for t in report["targets"] if t["arch"] == WRAPPER]
    where = {Path(f["path"]).name for f in target["findings"] if f["severity"] == "error"}
    assert where == {"mm_wrapper.py", "no_protocol.py"}  # its language model's blockers too
    # Nothing of targets defined elsewhere that only share the language model's file.
    assert {t["arch"] for t in report["targets"]} == {WRAPPER}
    text = CliRunner().invoke(
        app, ["check", str(MODELS / "mm_wrapper.py"), "--require", WRAPPER, "--no-cache"]
    )
    outside = [line for line in text.stdout.splitlines() if line.startswith(str(MODELS / "no_"))]
    assert outside and all(f"outside the files checked; decides {WRAPPER}" in s for s in outside)


def test_an_unrelated_broken_file_is_not_this_commits_error(tree: Path) -> None:
    (tree / MODELS / "rank_local.py").write_text("class Broken(:\n")
    code, report = check(str(MODELS / "mm_wrapper.py"), "--require", WRAPPER)
    assert report["errors"] == [] and code == 1
    # The whole tree still ran: the broken file is an error of a whole-tree check.
    code, whole = check(str(tree / "vllm"))
    assert code == 2 and "rank_local.py" in {Path(e["path"]).name for e in whole["errors"]}
    # A file the reported target depends on (its language model's) is these files' error.
    (tree / MODELS / "no_protocol.py").write_text("class Broken(:\n")
    code, report = check(str(MODELS / "mm_wrapper.py"), "--require", WRAPPER)
    assert code == 2
    assert {Path(e["path"]).name for e in report["errors"]} == {"no_protocol.py"}


def test_only_classes_the_registry_reaches_are_targets_in_a_tree(tree: Path) -> None:
    hook = tree / "vllm" / "model_executor" / "models" / "config_hooks.py"
    hook.write_text(
        "class VerifyAndUpdateConfig:\n    pass\n\n\n"
        "class DeepseekV32ForCausalLM(VerifyAndUpdateConfig):\n    pass\n"
    )
    code, report = check(str(MODELS / "config_hooks.py"))
    assert (code, report["targets"], report["errors"]) == (0, [], [])
