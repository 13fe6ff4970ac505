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


def test_every_file_given_is_judged_as_the_whole_tree_judges_it(tree: Path) -> None:
    """What pre-commit's --all-files passes: the same targets, findings and severities."""
    files = sorted(str(p.relative_to(tree)) for p in (tree / "vllm").rglob("*.py"))
    _, whole = check("vllm")
    _, given = check(*files)

    def verdicts(report: dict[str, Any]) -> list[tuple[Any, ...]]:
        return sorted(
            (t["arch"], t["eagle3_ready"], f["code"], f["path"], f["line"], f["severity"])
            for t in report["targets"]
            for f in t["findings"] or [{"code": "", "path": "", "line": 0, "severity": ""}]
        )

    assert verdicts(given) == verdicts(whole)
    assert given["summary"] | {"files_analysed": 0} == whole["summary"] | {"files_analysed": 0}


def test_a_model_file_no_registered_target_reaches_is_checked_as_a_new_model(tree: Path) -> None:
    (tree / MODELS / "new_model.py").write_text(
        (tree / MODELS / "no_tap.py").read_text().replace("NoTap", "NewModel")
    )
    code, report = check(str(MODELS / "new_model.py"), "--require", "*")
    assert code == 1
    assert {t["arch"]: t["registered"] for t in report["targets"]} == {"NewModelForCausalLM": False}
