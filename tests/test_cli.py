"""Command-line conventions shared with ruff."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from eagle3lint.cli import app

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
