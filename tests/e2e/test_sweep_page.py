"""The sweep's page counts what its JSON files hold (`sweep.render`), and the sweep tells a
killed plain run from other runs that gave no result, a limit of the CPU build from a target's
failure, and a run with EAGLE-3 that decides a target whose plain run fails."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
import sweep
from judge import cpu_limited
from runs import ENVIRONMENT, Outcome, clear_evidence, evidence_dir, kept_outcome, no_result
from sweep import (
    CANNOT_BUILD,
    CANNOT_RUN,
    KILLED,
    OUT,
    PLAIN_FAILS,
    TRANSFORMERS,
    _decided,
    _part,
    _record,
    _with_head,
    render,
)
from tiny import text_sizes


def test_the_page_counts_each_status_and_escapes_cells(tmp_path: Path) -> None:
    cases = [
        {"arch": "B", "status": "agree", "eagle3lint": "ready", "vllm": "ran"},
        {"arch": "A", "status": "disagree", "eagle3lint": "ready", "vllm": "x | y"},
        {"arch": "C", "status": PLAIN_FAILS, "eagle3lint": "-", "vllm": "plain run: E"},
        {"arch": "D", "status": CANNOT_BUILD, "eagle3lint": "-", "vllm": "LookupError"},
        {"arch": "E", "status": CANNOT_RUN, "eagle3lint": "ready", "vllm": "TypeError"},
    ]
    data = {"release": "0.32.0", "targets": 9, "cases": cases}
    (tmp_path / "0.32.0.json").write_text(json.dumps(data))
    page = render(tmp_path).splitlines()
    assert "| 0.32.0 | 9 | 5 | 2 | 1 | 1 | 1 | 1 | 1 | not recorded (5) |" in page
    cases_in_order = [line.split(" | ")[0] for line in page if line[:4] in ("| A ", "| B ")]
    assert cases_in_order == ["| A", "| B"]
    assert "| A | disagree | ready | x \\| y |" in page


def test_the_page_counts_repairs_per_release(tmp_path: Path) -> None:
    case = {"arch": "G", "status": "agree", "eagle3lint": "blocked: EAG101", "vllm": "E"}
    repairs = [
        {"arch": "G", "status": "agree", "eagle3lint": "fix changed m; then ready", "vllm": "ran"},
        {"arch": "H", "status": "disagree", "eagle3lint": "fix changed m; then ready", "vllm": "E"},
        {"arch": "I", "status": CANNOT_RUN, "eagle3lint": "fix changed m; then ready", "vllm": "T"},
    ]
    data = {"release": "0.25.0", "targets": 9, "cases": [case], "repairs": repairs}
    (tmp_path / "0.25.0.json").write_text(json.dumps(data))
    (tmp_path / "0.32.0.json").write_text(json.dumps({**data, "release": "0.32.0", "repairs": []}))
    page = render(tmp_path).splitlines()
    assert "| 0.25.0 | 3 | 2 | 1 | 1 | 1 |" in page
    assert "### Repairs on vLLM 0.25.0" in page
    assert "### Repairs on vLLM 0.32.0" not in page
    assert "| H | disagree | fix changed m; then ready | E |" in page


def test_the_committed_page_is_what_the_committed_json_holds() -> None:
    """A sweep stopped midway once left a JSON file with 39 decided cases fewer than its page
    showed: the page is rendered from the files as they are."""
    assert (OUT / "README.md").read_text() == render(OUT)


def test_sweeps_side_by_side_keep_what_each_other_decided(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two sweeps of one release (`--part 1/2`, `--part 2/2`) write one file: each record reads
    it again, so neither drops the other's cases, and a case decided again replaces its own."""
    monkeypatch.setattr(sweep, "OUT", tmp_path)
    out = tmp_path / "0.16.0.json"
    case = {"arch": "A", "status": "agree", "eagle3lint": "ready", "vllm": "ran"}
    _record(out, "0.16.0", 3, "cases", case)
    _record(out, "0.16.0", 3, "cases", {**case, "arch": "B"})
    _record(out, "0.16.0", 3, "repairs", {**case, "arch": "B"})
    _record(out, "0.16.0", 3, "cases", {**case, "status": PLAIN_FAILS})
    data = json.loads(out.read_text())
    assert [(c["arch"], c["status"]) for c in data["cases"]] == [("B", "agree"), ("A", PLAIN_FAILS)]
    assert [r["arch"] for r in data["repairs"]] == ["B"]
    assert "| 0.16.0 | 3 | 2 | 1 | 1 |" in (tmp_path / "README.md").read_text()


def test_a_case_decided_with_another_transformers_is_decided_again() -> None:
    """vLLM 0.25.0's CPU build ran with transformers 5.25 until it was held to 5.14: a sweep
    decides again what ran with another version, keeps what was swept before versions were
    recorded unless `--again` asks for those too, and always decides `--again --arch` ones."""
    cases = [
        {"arch": "Old"},
        {"arch": "Stale", TRANSFORMERS: "5.25.0"},
        {"arch": "Now", TRANSFORMERS: "5.14.4"},
    ]
    now = {"Now": "5.14.4", "Stale": "5.14.4", "Old": "5.14.4"}.get
    assert _decided(cases, now, set(), unrecorded=True) == {"Old", "Now"}
    assert _decided(cases, now, set(), unrecorded=False) == {"Now"}
    assert _decided(cases, now, {"Now", "Old"}, unrecorded=True) == set()


def test_a_case_is_stale_by_the_transformers_its_own_runs_use() -> None:
    """vLLM 0.16.0 pins transformers<5, and its Jais 2 runs with transformers 5.0 in front
    (`venvs.MODEL_OVERLAYS`): a Jais 2 case decided with the venv's 4.57 is stale, the others
    are not."""
    cases = [
        {"arch": "Jais2ForCausalLM", TRANSFORMERS: "4.57.6"},
        {"arch": "LlamaForCausalLM", TRANSFORMERS: "4.57.6"},
    ]
    uses = {"Jais2ForCausalLM": "5.0.0", "LlamaForCausalLM": "4.57.6"}.get
    assert _decided(cases, uses, set(), unrecorded=True) == {"LlamaForCausalLM"}


def test_the_page_says_which_transformers_the_cases_ran_with(tmp_path: Path) -> None:
    case = {"arch": "A", "status": "agree", "eagle3lint": "ready", "vllm": "ran"}
    cases = [case, {**case, TRANSFORMERS: "5.14.4"}, {**case, TRANSFORMERS: "5.14.4"}]
    (tmp_path / "0.25.0.json").write_text(
        json.dumps({"release": "0.25.0", "targets": 3, "cases": cases})
    )
    assert "| 5.14.4 (2), not recorded (1) |" in render(tmp_path)


def test_a_part_is_one_of_n() -> None:
    assert _part("2/3") == (2, 3)
    for wrong in ("0/2", "3/2", "1", "a/b"):
        with pytest.raises(argparse.ArgumentTypeError):
            _part(wrong)


def test_a_killed_plain_run_is_told_from_other_runs_without_a_result() -> None:
    plain = ["generate", "/s/target-HfMoondream-8"]
    speculative = [*plain, "--head", "/s/head-target-HfMoondream-8-default-full-plain"]
    assert KILLED.search(no_result(plain, -9, 89.4, "Killed"))[1] == "89"
    assert KILLED.search(no_result(plain, 1, 12, "Traceback")) is None
    assert KILLED.search(no_result(speculative, -9, 89, "Killed")) is None


def stopped(kind: str, message: str) -> Outcome:
    return Outcome(None, {"type": kind, "message": message, "where": "f.py:1"}, "v1")


def test_the_cpu_builds_limits_are_told_from_a_targets_failure() -> None:
    """0.16.0's CPU runner refuses every speculative config: BaiChuan, which eagle3lint blocks
    (EAG101), was once swept as a disagreement because vLLM raised that refusal instead."""
    assert cpu_limited(stopped("AssertionError", "spec decode is not supported."))
    assert cpu_limited(stopped("TypeError", "'function' object is not subscriptable"))
    assert not cpu_limited(stopped("AssertionError", ""))
    assert not cpu_limited(stopped("RuntimeError", "Model does not support EAGLE3 interface"))
    assert not cpu_limited(Outcome([[1]], None, "v1"))


class Bench:
    """A workbench whose run with a head gives `speculative` (raises it, if an exception)."""

    def __init__(self, speculative: Outcome | AssertionError) -> None:
        self.speculative = speculative

    def head(self, target: Path) -> Path:
        return target / "head"

    def generate(self, target: Path, head: Path | None = None) -> Outcome:
        if isinstance(self.speculative, AssertionError):
            raise self.speculative
        return self.speculative


def test_a_run_with_eagle3_that_stops_elsewhere_decides_a_target_whose_plain_run_fails() -> None:
    """0.16.0 builds no tiny DeepSeek-V3 on CPU (MLA), but refuses its model type at the
    speculative config's gate first: that decides EAG501 end to end."""
    mla = stopped("NotImplementedError", "MLA is not supported on CPU.")
    gate = stopped("ValidationError", "Value error, Eagle3 is only supported for ...")
    target = Path("/s/target-DeepseekV3ForCausalLM-8")
    assert _with_head(Bench(gate), target, mla) == gate  # type: ignore[arg-type]
    for says_no_more in (mla, Outcome([[1]], None, "v1"), AssertionError("no result")):
        assert _with_head(Bench(says_no_more), target, mla) is None  # type: ignore[arg-type]
    ran = Outcome([[1]], None, "v1")
    assert _with_head(Bench(gate), target, ran) == gate  # type: ignore[arg-type]
    with pytest.raises(AssertionError):  # a run that gives no result is left for the next sweep
        _with_head(Bench(AssertionError("no result")), target, ran)  # type: ignore[arg-type]


def test_the_head_takes_the_sizes_of_the_targets_language_model() -> None:
    """Dbrx's config file names its hidden size `d_model` (transformers maps it only once
    loaded): the 0.16.0 sweep once could not write its head."""
    assert text_sizes({"d_model": 128, "vocab_size": 1024, "attn_config": {}}) == (128, 1024)
    nested = {"vision_config": {"hidden_size": 64}, "text_config": {"hidden_size": 96}}
    assert text_sizes({**nested, "vocab_size": 1000}) == (96, 1000)
    assert text_sizes({"llm_config": {"n_embd": 32, "vocab_size": 50}}) == (32, 50)
    with pytest.raises(LookupError):
        text_sizes({"thinker_config": {"text_config": {"hidden_size": 8}}})


def test_a_kept_outcome_counts_only_with_the_packages_it_ran_with(tmp_path: Path) -> None:
    """The cache key holds a venv's constraints; what they resolved to is recorded beside the
    outcome, so a venv installed again with another transformers runs the models again."""
    cached = tmp_path / "run.json"
    assert kept_outcome(cached, "env-a", 0.0) is None
    ran = {"tokens": [[1, 2]], "error": None, "runner": "v1"}
    cached.write_text(json.dumps({**ran, ENVIRONMENT: "env-a"}))
    assert kept_outcome(cached, "env-a", 0.0) == Outcome([[1, 2]], None, "v1")
    assert kept_outcome(cached, "env-b", 0.0) is None
    # Kept before packages were recorded: it counts if the venv has not changed since.
    cached.write_text(json.dumps(ran))
    made = cached.stat().st_mtime
    assert kept_outcome(cached, "env-b", made - 1) == Outcome([[1, 2]], None, "v1")
    assert kept_outcome(cached, "env-b", made + 1) is None


def test_a_runs_workers_clear_a_releases_evidence_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under xdist each worker starts the release itself: the second must keep what the first
    recorded, and the next run starts afresh."""
    monkeypatch.setattr("runs.results_dir", lambda: tmp_path)
    clear_evidence("0.32.0", "run-1")
    case = evidence_dir("0.32.0") / "pairing-default-ids.json"
    case.write_text("{}")
    clear_evidence("0.32.0", "run-1")
    assert case.is_file()
    clear_evidence("0.32.0", "run-2")
    assert not case.exists()
