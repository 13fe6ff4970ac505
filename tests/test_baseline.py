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


def test_a_baseline_works_in_every_clone(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 32: messages that quote a file of the tree (the proposer's, with its line) are
    recorded relative to the baseline's folder, so the baseline committed in one checkout
    holds in another one elsewhere (CI's)."""
    import shutil

    CliRunner().invoke(app, ["check", "vllm", "--require", "*", "--write-baseline", "b.json"])
    written = (tree / "b.json").read_text()
    assert str(tree) not in written and "vllm/v1/spec_decode/eagle.py" in written
    clone = tmp_path / "clone"
    shutil.copytree(tree, clone)
    monkeypatch.chdir(clone)
    code, report = check("--baseline", "b.json")
    assert (code, reported(report), report["summary"]["baselined"] > 0) == (0, set(), True)


def test_a_narrowed_run_judges_only_what_it_judged(tree: Path) -> None:
    """A baseline written for every target as asked about: a run asking about none (each
    target claiming no support becomes one note) or one (`--arch`) calls no entry stale, and
    writing from it keeps the entries it did not judge."""
    CliRunner().invoke(app, ["check", "vllm", "--require", "*", "--write-baseline", "b.json"])
    full = json.loads((tree / "b.json").read_text())["findings"]
    for args in ((), ("--arch", "NoTapForCausalLM")):
        result = CliRunner().invoke(
            app, ["check", "vllm", "--baseline", "b.json", "--format", "json", *args]
        )
        stale = [f for t in json.loads(result.stdout)["targets"] for f in t["findings"]]
        assert not [f for f in stale if f["code"] == "EAG906"], args
    CliRunner().invoke(app, ["check", "vllm", "--write-baseline", "b.json"])
    rewritten = json.loads((tree / "b.json").read_text())["findings"]
    assert {e["fingerprint"] for e in full} <= {e["fingerprint"] for e in rewritten}


def test_a_baseline_written_in_one_clone_of_a_release_holds_in_another(
    vllm_release: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 32, on vLLM 0.33.0: 125 of 406 entries quoted the checkout's absolute path, so the
    baseline committed in one clone failed in every other one with 125 EAG906 errors."""
    import shutil

    one, two = tmp_path / "one", tmp_path / "elsewhere" / "two"
    for clone in (one, two):
        shutil.copytree(vllm_release("0.33.0"), clone / "vllm")
    monkeypatch.chdir(one)
    written = CliRunner().invoke(app, ["check", "vllm", "--write-baseline", "baseline.json"])
    assert written.exit_code == 0, written.output
    text = (one / "baseline.json").read_text()
    assert str(tmp_path) not in text
    (two / "baseline.json").write_text(text)
    monkeypatch.chdir(two)
    result = CliRunner().invoke(
        app, ["check", "vllm", "--baseline", "baseline.json", "--format", "json"]
    )
    report = json.loads(result.stdout)
    stale = [f for t in report["targets"] for f in t["findings"] if f["code"] == "EAG906"]
    assert (result.exit_code, stale) == (0, []), result.stdout[-3000:]
    assert report["summary"]["baselined"] > 0
