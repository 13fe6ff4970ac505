"""No repair breaks a caller, at run time (issue 24, item 2).

On a copy of each release of `AUX_RELEASES` fixed with `eagle3lint fix --require '*'`, the aux-layer
methods the release's model runner calls (read from its runners: `runner_calls.runner_methods`)
are called as the runner calls them, on every target whose classes include one `fix` changed
(or that `fix` repaired), through the real MRO with the release's own protocol defaults, and a
wrapper's delegation to its language model (`self.language_model.<name>()`) reaches that
model's real class (`aux_calls.py` says how instances are built, and why bare ones).

And the seed command on 0.18.0, where Kimi-K2.5 already runs, changes nothing that worked.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fixed import FixedRelease, fixed_copy
from runner_calls import MODEL_PACKAGES, RunnerCalls, cuda_only, make_runner_calls

AUX_RELEASES: tuple[str, ...] = tuple(
    os.environ.get("EAGLE3LINT_FIX_RELEASES", "0.16.0,0.18.0,0.25.0,0.33.0").split(",")
)
"""The seed release, 0.18.0 (the runner's getter renamed; the seed command's release), the
0.22-0.29 era and the newest release the suite installs."""

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SEED_RELEASE = "0.18.0"
SEED_ARCH = "KimiK25ForConditionalGeneration"
SEED_COMMAND = ("--arch", SEED_ARCH, "--hf-config", str(EXAMPLES / "kimi-k2.5" / "config.json"))
"""`eagle3lint fix <tree> --arch KimiK25ForConditionalGeneration --hf-config ...` (the seed's)."""
SEED_LANGUAGE_MODEL = "vllm.model_executor.models.deepseek_v2.DeepseekV2ForCausalLM"

_CALLS: dict[str, RunnerCalls] = {}


@pytest.fixture(scope="module", params=AUX_RELEASES)
def calls(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> RunnerCalls:
    version = request.param
    if version not in _CALLS:
        release = fixed_copy(version, tmp_path_factory.mktemp("fixed"))
        _CALLS[version] = make_runner_calls(release)
        print(_CALLS[version].summary())
    return _CALLS[version]


def test_runner_calls_run_on_every_changed_class(calls: RunnerCalls) -> None:
    """Every target touching a changed class runs the runner's calls, or did not run them
    before `fix` either and is still reported not ready (a wrapper tried with a language model
    the checkpoint chooses: ran before, runs after)."""
    assert calls.scoped(), "no target touches a class fix changed"
    problems = calls.breakages()
    assert not problems, "\n".join(problems)


def test_every_repaired_target_runs_the_runner_calls(calls: RunnerCalls) -> None:
    """(A wrapper whose language model the checkpoint chooses: with some text model.) But a
    model vLLM cannot import without CUDA, listed in the summary."""
    ran = {r["label"] for r in calls.after if r["status"] == "ran" or cuda_only(r)}
    missing = sorted(set(calls.release.repaired) - ran)
    assert not missing, missing


def test_every_changed_model_class_is_built(calls: RunnerCalls) -> None:
    """Every model class `fix` changed is part of some target the calls were made on (so none
    escapes the check above), but those of a model vLLM cannot import without CUDA."""
    models = {c for c in calls.changed if c.startswith(MODEL_PACKAGES)}
    missing = models - calls.reached() - set(calls.cuda_only())
    assert not missing, sorted(missing)


def test_the_seed_command_on_0_18_0_changes_nothing_that_worked(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Issue 24: every target whose runner calls ran on 0.18.0 still runs them after the seed
    command, Kimi-K2.5 among them, through its language model's real class."""
    release: FixedRelease = fixed_copy(SEED_RELEASE, tmp_path_factory.mktemp("seed"), SEED_COMMAND)
    calls = make_runner_calls(release, every_before=True)
    print(calls.summary())
    assert release.changed
    broken = [
        f"{r['label']}: {r.get('why', '')[:300]}"
        for r in calls.after
        if calls.before.get((r["label"], r["candidate"]), {}).get("status") == "ran"
        and r["status"] != "ran"
    ]
    assert not broken, "\n".join(broken)
    kimi = next(r for r in calls.after if r["label"] == SEED_ARCH and r["candidate"] is None)
    assert kimi["status"] == "ran", kimi
    assert SEED_LANGUAGE_MODEL in kimi["classes"], kimi
    assert calls.before[SEED_ARCH, None]["status"] == "ran"
