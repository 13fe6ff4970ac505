"""The baseline round trip: record today's findings, shift lines, still suppressed; a new finding
is reported."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from eagle3lint.cli import app

ERA = Path(__file__).resolve().parent.parent / "fixtures" / "eras" / "e2_stub"
MODELS = Path("vllm/model_executor/models")


@pytest.fixture
def tree(era_copy: Path) -> Path:
    return era_copy


def check(*args: str) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(app, ["check", "vllm", "--require", "*", "--format", "json", *args])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)


def reported(report: dict[str, Any]) -> set[tuple[str, str]]:
    return {(t["arch"], f["code"]) for t in report["targets"] for f in t["findings"]}


def test_write_edit_lines_above_still_suppressed_new_finding_reported(tree: Path) -> None:
    code, before = check()
    assert code == 1 and reported(before)
    written = CliRunner().invoke(
        app, ["check", "vllm", "--require", "*", "--write-baseline", "baseline.json"]
    )
    assert written.exit_code == 0, written.output
    assert "recorded" in written.stderr
    entries = json.loads((tree / "baseline.json").read_text())["findings"]
    assert all(not e["path"].startswith("/") for e in entries)  # relative to the baseline

    code, after = check("--baseline", "baseline.json")
    assert (code, reported(after)) == (0, set())
    assert after["summary"]["baselined"] > 0
    # Verdicts stay the plain truth: a baselined blocker still blocks.
    assert [t["eagle3_ready"] for t in after["targets"]] == [
        t["eagle3_ready"] for t in before["targets"]
    ]

    # Lines added above every finding of no_tap.py: the findings move, the baseline holds.
    no_tap = tree / MODELS / "no_tap.py"
    no_tap.write_text("# a new header\n# and another line\n\n" + no_tap.read_text())
    code, shifted = check("--baseline", "baseline.json")
    assert (code, reported(shifted)) == (0, set())

    # A new blocker is reported.
    good = tree / MODELS / "good_llama.py"
    good.write_text(
        good.read_text().replace(
            "class GoodLlamaForCausalLM(nn.Module, SupportsPP, SupportsEagle3):",
            "class GoodLlamaForCausalLM(nn.Module, SupportsPP):",
        )
    )
    code, new = check("--baseline", "baseline.json")
    assert code == 1
    assert ("GoodLlamaForCausalLM", "EAG101") in reported(new)
    assert ("NoTapForCausalLM", "EAG301") not in reported(new)


def test_baseline_from_the_configuration_and_bad_files(tree: Path) -> None:
    CliRunner().invoke(app, ["check", "vllm", "--require", "*", "--write-baseline", "b.json"])
    (tree / "pyproject.toml").write_text('[tool.eagle3lint]\nbaseline = "b.json"\n')
    code, report = check()
    assert (code, reported(report)) == (0, set())
    (tree / "b.json").write_text("{not json")
    result = CliRunner().invoke(app, ["check", "vllm"])
    assert result.exit_code == 2 and "b.json is not valid JSON" in result.output
    result = CliRunner().invoke(app, ["check", "vllm", "--baseline", "missing.json"])
    assert result.exit_code == 2 and "does not exist" in result.output
