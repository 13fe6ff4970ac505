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


RANK_LOCAL = MODELS / "rank_local.py"
LOOP = "enumerate(islice(self.layers, self.start_layer, self.end_layer))"


def write(*args: str) -> Any:
    return CliRunner().invoke(
        app, ["check", *args, "--require", "*", "--write-baseline", "baseline.json"]
    )


def entries(tree: Path) -> list[dict[str, Any]]:
    return json.loads((tree / "baseline.json").read_text())["findings"]


def test_an_entry_whose_finding_went_away_fails_the_run_like_a_strict_xfail(tree: Path) -> None:
    assert write("vllm").exit_code == 0
    data = json.loads((tree / "baseline.json").read_text())
    [entry] = [e for e in data["findings"] if e["code"] == "EAG304"]
    entry["note"] = "https://github.com/vllm-project/vllm/issues/1"
    (tree / "baseline.json").write_text(json.dumps(data, indent=1))
    fixed = (tree / RANK_LOCAL).read_text().replace(LOOP, LOOP[:-1] + ", start=self.start_layer)")
    (tree / RANK_LOCAL).write_text(fixed)

    code, report = check("--baseline", "baseline.json")
    assert code == 1
    [stale] = [f for t in report["targets"] for f in t["findings"]]
    assert (stale["code"], stale["rule"], stale["severity"]) == ("EAG906", "baseline", "error")
    assert stale["path"] == "baseline.json"
    lines = (tree / "baseline.json").read_text().splitlines()
    assert entry["fingerprint"] in lines[stale["line"] - 1]  # located at the entry itself
    assert "RankLocalForCausalLM" in stale["message"] and "issues/1" in stale["message"]
    assert check("--baseline", "baseline.json", "--ignore", "EAG906")[0] == 0

    # File arguments judge only the entries those files decide.
    other = CliRunner().invoke(
        app, ["check", str(MODELS / "no_tap.py"), "--require", "*", "--baseline", "baseline.json"]
    )
    assert other.exit_code == 0, other.output
    mine = CliRunner().invoke(
        app, ["check", str(RANK_LOCAL), "--require", "*", "--baseline", "baseline.json"]
    )
    assert mine.exit_code == 1 and "EAG906" in mine.stdout
    assert "outside the files checked" not in mine.stdout

    # Rewriting prunes the stale entry and keeps the notes of the others.
    [kept] = [e for e in data["findings"] if e["code"] == "EAG303"]
    kept["note"] = "accepted until the upstream fix"
    (tree / "baseline.json").write_text(json.dumps(data, indent=1))
    rewritten = write("vllm")
    assert rewritten.exit_code == 0 and "dropped 1 that no longer occur" in rewritten.stderr
    assert "EAG304" not in {e["code"] for e in entries(tree)}
    assert {e.get("note") for e in entries(tree) if e["code"] == "EAG303"} == {kept["note"]}
    assert check("--baseline", "baseline.json")[0] == 0


def test_writing_for_some_files_keeps_the_entries_of_the_others(tree: Path) -> None:
    assert write("vllm").exit_code == 0
    everything = entries(tree)
    assert write(str(MODELS / "no_tap.py")).exit_code == 0
    assert entries(tree) == everything
    (tree / RANK_LOCAL).write_text(
        (tree / RANK_LOCAL).read_text().replace(LOOP, LOOP[:-1] + ", start=self.start_layer)")
    )
    assert write(str(RANK_LOCAL)).exit_code == 0
    assert entries(tree) == [e for e in everything if e["code"] != "EAG304"]


def test_the_recipe_says_how_to_use_the_baseline_written(tree: Path) -> None:
    result = write("vllm")
    assert (
        "add to pyproject.toml (or pass --baseline):\n\n[tool.eagle3lint]\n"
        'baseline = "baseline.json"\n' in result.stderr
    )
    (tree / "pyproject.toml").write_text('[tool.eagle3lint]\nbaseline = "baseline.json"\n')
    assert "add to pyproject.toml" not in write("vllm").stderr


def test_a_model_ready_when_the_baseline_was_written_is_required(tree: Path) -> None:
    """A model the baseline recorded as ready is asked about (as `require` names it): if a change
    leaves it with no claim of EAGLE-3 support, its blockers are still errors (the release
    test shows it on Qwen3 in vLLM 0.33.0)."""
    args = ["check", "vllm", "--model-type", "llama", "--format", "json"]
    written = CliRunner().invoke(app, [*args, "--write-baseline", "baseline.json"])
    assert written.exit_code == 0, written.output
    ready = json.loads((tree / "baseline.json").read_text())["ready"]
    assert "GoodLlamaForCausalLM" in ready

    def required(*extra: str) -> dict[str, bool]:
        report = json.loads(CliRunner().invoke(app, [*args, *extra]).stdout)
        return {t["arch"]: t["required"] for t in report["targets"] if t["required"]}

    assert required() == {}
    assert set(required("--baseline", "baseline.json")) == set(ready)
