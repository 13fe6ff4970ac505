"""`eagle3lint explain`, `eagle3lint rules` and the generated docs/rules/ pages."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from typer.testing import CliRunner

from eagle3lint.cli import app
from eagle3lint.codes import TOOL_PLUGIN, all_codes

REPO = Path(__file__).resolve().parent.parent


def gen_rules() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_rules", REPO / "docs" / "gen_rules.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_pages_are_up_to_date() -> None:
    assert gen_rules().stale() == [], "run: python docs/gen_rules.py"


def test_every_built_in_code_is_explained() -> None:
    for entry in all_codes():
        if entry.plugin == TOOL_PLUGIN:
            explain = entry.code.explain
            assert explain is not None, entry.code.code
            assert all((explain.runtime, explain.error, explain.releases, explain.example)), entry
            assert explain.fix and explain.fix != explain.example, entry.code.code


def test_explain_prints_the_page() -> None:
    result = CliRunner().invoke(app, ["explain", "eag101"])
    assert result.exit_code == 0
    assert result.stdout == (REPO / "docs" / "rules" / "EAG101.md").read_text()
    for heading in ("What vLLM does at run time", "The error", "Releases affected", "Fix"):
        assert f"## {heading}" in result.stdout
    assert "RuntimeError: Model does not support EAGLE3 interface" in result.stdout


def test_explain_an_unknown_code_exits_2_with_suggestions() -> None:
    result = CliRunner().invoke(app, ["explain", "EAG10"])
    assert result.exit_code == 2
    assert "unknown code 'EAG10' (did you mean " in result.output
    assert "EAG104" in result.output


def test_rules_lists_the_tool_codes_too() -> None:
    result = CliRunner().invoke(app, ["rules"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert "EAG904" in result.stdout and "unused-suppression" in result.stdout
