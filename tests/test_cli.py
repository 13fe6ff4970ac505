"""Command-line conventions shared with ruff."""

from __future__ import annotations

import json
import os
import re
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from eagle3lint import __version__
from eagle3lint.cli import app

REPO = Path(__file__).resolve().parent.parent

ERA = Path(__file__).resolve().parent.parent / "fixtures" / "eras" / "e2_stub"


def codes(*args: str) -> set[str]:
    result = CliRunner().invoke(
        app, ["check", str(ERA), "--format", "json", "--exit-zero", "--no-cache", *args]
    )
    assert result.exit_code == 0, result.output
    return {f["code"] for t in json.loads(result.stdout)["targets"] for f in t["findings"]}


def test_select_takes_comma_separated_and_repeated_prefixes() -> None:
    every = codes()
    assert codes("--select", "EAG1,EAG5") == {c for c in every if c[:4] in ("EAG1", "EAG5")}
    assert codes("--select", "EAG1", "--select", "EAG5") == codes("--select", "EAG1,EAG5")
    assert codes("--ignore", "EAG1,EAG3") == {c for c in every if c[:4] not in ("EAG1", "EAG3")}


def test_unknown_arch_exits_2_with_close_matches() -> None:
    result = CliRunner().invoke(app, ["check", str(ERA), "--arch", "GoodLlamaForCausalLm"])
    assert result.exit_code == 2
    assert "did you mean GoodLlamaForCausalLM" in result.output


def run(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(app, list(args), env=env)


@pytest.mark.parametrize(
    ("flag", "value", "closest"),
    [
        ("--select", "EAG999", "EAG9"),
        ("--select", "eag3", "EAG3"),
        ("--ignore", "EAG32", "EAG3"),
        ("--extend-select", "XYZ", None),
    ],
)
def test_unknown_selectors_exit_2_with_the_closest_codes(
    flag: str, value: str, closest: str | None
) -> None:
    result = run("check", str(ERA), flag, value, "--no-cache")
    assert result.exit_code == 2
    assert f"unknown rule selector `{value}`" in result.output and flag in result.output
    if closest:
        assert "closest known: " in result.output and closest in result.output


@pytest.mark.parametrize(
    "args",
    [("--select", ""), ("--ignore", ","), ("--extend-select", " "), ("-j", "0"), ("--jobs", "-2")],
    ids=["empty-select", "comma-ignore", "blank-extend", "no-jobs", "negative-jobs"],
)
def test_empty_selections_and_no_jobs_exit_2(args: tuple[str, str]) -> None:
    """Issue 31: `--select ''` selected everything and `-j 0` was taken."""
    result = run("check", str(ERA), *args, "--no-cache")
    assert result.exit_code == 2, result.output
    assert "names no rule code" in result.output or "not in the range" in result.output


def test_unknown_selector_in_the_configuration_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.eagle3lint]\nselect = ["EAG999"]\n')
    monkeypatch.chdir(tmp_path)
    result = run("check", str(ERA), "--no-cache")
    assert result.exit_code == 2
    assert "pyproject.toml [tool.eagle3lint] select" in result.output
    assert "`EAG999`" in result.output


def test_extend_select_adds_to_the_selection() -> None:
    assert codes("--select", "EAG1", "--extend-select", "EAG5") == codes("--select", "EAG1,EAG5")


def test_version_and_short_help() -> None:
    version = run("--version")
    assert version.exit_code == 0 and version.stdout == f"eagle3lint {__version__}\n"
    assert run("-h").exit_code == 0 and "check" in run("-h").stdout
    short = run("check", "-h")
    assert short.exit_code == 0 and "--output-format" in short.stdout


def test_text_output_is_one_line_per_finding_with_a_summary() -> None:
    result = run("check", str(ERA), "--no-cache")
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    finding = re.compile(r"^\S+\.py:\d+:\d+: EAG\d{3}( \[\*\])?( \[warning\])? \S")
    listed = [line for line in lines if finding.match(line)]
    assert listed and lines[: len(listed)] == listed
    assert "\x1b[" not in result.stdout
    summary = lines[len(listed) :]
    assert any(line.startswith("Found ") and "errors" in line for line in summary)
    assert any(re.match(r"^\s+\d+\s+EAG301\s+\[\*\] missing-forward-tap$", s) for s in summary)
    assert any(re.match(r"^\[\*\] \d+ fixable with `eagle3lint fix`\.$", s) for s in summary)


def test_a_finding_shared_by_targets_is_one_line() -> None:
    args = ("check", str(ERA), "--require", "*", "--no-cache")
    report = json.loads(run(*args, "--format", "json").stdout)
    shared = Counter(
        (f["path"], f["line"], f["code"])
        for t in report["targets"]
        for f in t["findings"]
        if f["code"] != "EAG502"
    )
    (path, line, code), count = shared.most_common(1)[0]
    assert count > 1
    text = run(*args, "--verbose").stdout
    shown = os.path.relpath(path)
    [entry] = [s for s in text.splitlines() if s.startswith(f"{shown}:{line}:") and code in s]
    assert f"(affects {count} architectures: " in entry


def test_full_output_shows_rule_hint_and_every_architecture() -> None:
    result = run("check", str(ERA), "--output-format", "full", "--no-cache")
    assert result.exit_code == 1
    assert "  rule: forward-taps" in result.stdout and "  hint: " in result.stdout
    assert result.stdout.startswith("eagle3lint vLLM ")
    assert run("check", str(ERA), "--format", "full", "--no-cache").stdout == result.stdout


def test_statistics_count_findings_by_code() -> None:
    result = run("check", str(ERA), "--statistics", "--no-cache")
    assert result.exit_code == 1
    rows = result.stdout.splitlines()
    assert rows and all(
        re.match(r"^\s*\d+  EAG\d{3}  (\[\*\]|   ) [a-z0-9-]+$", row) for row in rows
    )
    assert any(re.match(r"^\s*1  EAG301  \[\*\] missing-forward-tap$", row) for row in rows)


def test_columns_are_one_based_in_text_and_json() -> None:
    report = json.loads(run("check", str(ERA), "--format", "json", "--no-cache").stdout)
    finding = next(f for t in report["targets"] for f in t["findings"] if f["code"] == "EAG101")
    assert finding["column"] == 1  # a class statement starts in the first column
    text = run("check", str(ERA), "--no-cache", "--select", "EAG101", "--require", "*").stdout
    assert f":{finding['line']}:1: EAG101" in text


def test_color_choice_and_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR")
    args = ("check", str(ERA), "--no-cache")
    assert "\x1b[" not in run(*args).stdout
    assert "\x1b[" in run(*args, "--color", "always").stdout
    assert "\x1b[" in run(*args, env={"FORCE_COLOR": "1"}).stdout
    assert "\x1b[" not in run(*args, "--color", "never", env={"FORCE_COLOR": "1"}).stdout
    assert "\x1b[" not in run(*args, env={"FORCE_COLOR": "1", "NO_COLOR": "1"}).stdout


@pytest.mark.parametrize("where", ["inside typer", "around typer"])
def test_a_ctrl_c_before_a_command_guard_is_exit_2_interrupted(
    where: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Ctrl-C that lands after start-up but before the command's own guard: typer would exit
    130 silently; eagle3lint's contract is exit 2 with `interrupted`."""
    import typer

    from eagle3lint import cli

    early = typer.Typer()

    @early.command()
    def starting() -> None:
        raise KeyboardInterrupt

    def around() -> None:
        raise KeyboardInterrupt

    built = early if where == "inside typer" else around
    monkeypatch.setattr(cli, "build_app", lambda only=None: built)
    monkeypatch.setattr(sys, "argv", ["eagle3lint"])
    with pytest.raises(SystemExit) as exited:
        cli.main()
    assert exited.value.code == 2
    assert capsys.readouterr().err == "eagle3lint: interrupted\n"


@pytest.mark.parametrize("command", ["check", "pair", "fix", "matrix"])
def test_help_names_every_option_whole_at_80_columns(command: str) -> None:
    """Issue 31: rich's help panels cut option names (`--respect-gitign…`) at 80 columns."""
    result = run(command, "--help", env={"COLUMNS": "80"})
    assert result.exit_code == 0
    assert "…" not in result.output
    assert all(len(line) <= 80 for line in result.output.splitlines())
    if command == "check":
        assert "--respect-gitignore / --no-respect-gitignore" in result.output


def test_pair_and_fix_say_what_their_paths_and_release_mean() -> None:
    # Both printed check's text ("Check release X.Y.Z's sources"), which is not what a PATH
    # or --vllm does for them.
    helps = {c: run(c, "--help", env={"COLUMNS": "300"}).stdout for c in ("check", "pair", "fix")}
    assert "whose release runs the pair" in helps["pair"]
    assert "Judge the pair as vLLM release X.Y.Z runs it" in helps["pair"]
    assert "What to repair" in helps["fix"]
    assert "a cached release is never written" in helps["fix"]
    assert "Check release X.Y.Z's sources from PyPI." in helps["check"]
    assert "runs the pair" not in helps["check"] + helps["fix"]


@pytest.mark.parametrize("text", ['{"hello": 1}', '{"model": "x", "method": "eagle3"}', "{}"])
def test_an_hf_config_that_is_no_model_config_is_a_named_error(
    text: str, tmp_path: Path, era_copy: Path
) -> None:
    # Any JSON object was taken for a checkpoint's config with no attribute set.
    config = tmp_path / "config.json"
    config.write_text(text)
    result = run("check", str(era_copy), "--hf-config", str(config))
    assert result.exit_code == 2
    assert "is not a model's config.json: it names no model_type and no architectures" in (
        result.output
    )


def test_pair_writes_its_report_to_the_file_output_names(
    vllm_release: Callable[[str], Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vllm_release("0.34.0")
    monkeypatch.chdir(REPO)
    out = tmp_path / "reports" / "pair.json"
    head = '{"model": "examples/eagle3-llama-3.1-8b", "num_speculative_tokens": 3}'
    target = "fixtures/pairing/llama-3.1-8b/config.json"
    args = ["pair", "--vllm", "0.34.0", "--target", target, "--speculative-config", head]
    result = run(*args, "--output-format", "json", "-o", str(out))
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert json.loads(out.read_text())["targets"]
    text = run(*args, "--output", str(tmp_path / "pair.txt"))
    assert "verdict" in (tmp_path / "pair.txt").read_text() and text.stdout == ""


def test_matrix_takes_output_format_as_check_spells_it(era_copy: Path) -> None:
    spelled = [
        run("matrix", str(era_copy), option, "json", "--no-cache").stdout
        for option in ("--output-format", "--format")
    ]
    assert spelled[0] == spelled[1] and json.loads(spelled[0])


def test_check_writes_its_report_to_the_file_output_names(era_copy: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.sarif"
    result = run("check", str(era_copy), "--output-format", "sarif", "-o", str(out), "--no-cache")
    assert result.exit_code == 1 and result.stdout == ""
    assert json.loads(out.read_text())["runs"][0]["results"]
    text = tmp_path / "report.txt"
    run("check", str(era_copy), "--output", str(text), "--color", "auto", "--no-cache")
    assert "Found " in text.read_text() and "\x1b[" not in text.read_text()
