"""The runtime proof of `fix` (issue 11, item 7): fixed models run, and tap the right states.

For each release of `FIX_RELEASES`, `eagle3lint fix --require '*'` (no `--arch`) rewrites a copy
of the installed tree; the release's own venv then imports every changed module in place of the
installed one, asks `supports_eagle3()` about every repaired class, and runs each repaired
model's `Model.forward` with its real decoder-layer code and stand-in sublayers (`proof.py`).

Every model ends proved or release-tap (fix added methods only, the forward and its tap are the
release's own, and the fix changed none of its outputs); never failed, nor cannot-construct (a
model the stand-ins cannot build proves nothing). The cases issue 11 names (`ISSUE_11_CASES`)
each get a test of their own: proved, or left alone by `fix` with its reason.
"""

from __future__ import annotations

import os

import pytest
from fixed import FixedRelease, fix_release

FIX_RELEASES: tuple[str, ...] = tuple(
    os.environ.get("EAGLE3LINT_FIX_RELEASES", "0.16.0,0.25.0").split(",")
)
"""The seed release and one with `EagleModelMixin` (≥ 0.18), where fix's taps differ."""

DOUBLE_COUNT = (
    "issue 11: the layer returns the full residual stream, and the tap `hidden_states + "
    "residual` adds the residual a second time"
)
NO_START = (
    "issue 11: the loop is tapped without `start=self.start_layer`: rank-local indices under "
    "pipeline parallelism"
)
ISSUE_11_CASES: dict[str, str] = {
    "chameleon.ChameleonModel[ChameleonSwinDecoderLayer]": DOUBLE_COUNT + " (swin_norm)",
    "commandr.CohereModel[CohereDecoderLayer]": DOUBLE_COUNT,
    "cohere2_moe.Cohere2MoeModel[Cohere2MoeDecoderLayer]": DOUBLE_COUNT,
    "exaone4.Exaone4Model[Exaone4DecoderLayer]": DOUBLE_COUNT,
    "phimoe.PhiMoEModel[PhiMoEDecoderLayer]": DOUBLE_COUNT,
    "stablelm.StableLMEpochModel[StablelmDecoderLayer]": (
        DOUBLE_COUNT + "; and the tap reads `residual`, which the forward never binds "
        "(from 0.18 every forward raises UnboundLocalError)"
    ),
    "solar.SolarModel[SolarDecoderLayer]": (
        "issue 11: the tap is placed first in the loop body, before Solar's pre-layer "
        "blending rebinds hidden_states and residual"
    ),
    "kimi_linear.KimiLinearModel[KimiDecoderLayer]": "issue 11: `_` as the tap index; " + NO_START,
    "mimo_v2_flash.MiMoV2Model[MiMoV2FlashDecoderLayer]": NO_START,
    "qwen3_omni_moe_thinker.Qwen3MoeLLMModel[Qwen3MoeDecoderLayer]": NO_START,
    "hy_v3.HYV3Model[HYV3DecoderLayer]": NO_START,
}
"""The models whose fixed forward is wrong today, with the issue's reason."""


@pytest.fixture(scope="module", params=FIX_RELEASES)
def fixed(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> FixedRelease:
    return _release(request.param, tmp_path_factory)


def _summary(release: FixedRelease) -> str:
    lines = [
        f"vLLM {release.version}: {len(release.changed)} files changed, "
        f"{len(release.repaired)} targets repaired, {len(release.refused)} refused"
    ]
    lines += [f"  refused {arch}: {why}" for arch, why in sorted(release.refused.items())]
    for name, record in sorted(release.models.items()):
        lines.append(f"  {record['status']:16} {name}  {record.get('why', '')[:300]}")
    return "\n".join(lines)


def test_fix_changed_files_and_repaired_targets(fixed: FixedRelease) -> None:
    assert fixed.changed and fixed.repaired
    assert not set(fixed.refused) & set(fixed.repaired)
    assert all(why.strip() for why in fixed.refused.values())


def test_every_repaired_class_supports_eagle3(fixed: FixedRelease) -> None:
    problems = []
    for arch in fixed.repaired:
        answer = fixed.supports_eagle3.get(arch, {"supports_eagle3": None, "why": "no answer"})
        if answer["supports_eagle3"] is not True:
            problems.append(f"{arch}: {answer.get('why', 'supports_eagle3() is False')}")
    assert not problems, "\n".join(problems)


def test_every_repaired_model_is_proved(fixed: FixedRelease) -> None:
    """Proved, or the release's own tap: nothing else."""
    problems = []
    for name, record in sorted(fixed.models.items()):
        status, why = record["status"], record.get("why", "")
        if status == "release-tap":
            assert record["own_tap"], name
        elif status != "proved":
            problems.append(f"{name} is {status}: {why}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("version", FIX_RELEASES)
@pytest.mark.parametrize("name", sorted(ISSUE_11_CASES))
def test_issue_11_case_is_proved_or_refused(
    version: str, name: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Each wrong repair issue 11 names is now right at run time, or `fix` leaves the model
    alone (a refusal with its reason, checked in test_fix_changed_files_and_repaired_targets)."""
    release = _release(version, tmp_path_factory)
    record = release.models.get(name)
    if record is not None:
        assert record["status"] == "proved", f"{ISSUE_11_CASES[name]}: {record.get('why')}"


_RELEASES: dict[str, FixedRelease] = {}


def _release(version: str, tmp_path_factory: pytest.TempPathFactory) -> FixedRelease:
    """One fix-and-prove run per release for the per-case tests as well."""
    if version not in _RELEASES:
        _RELEASES[version] = fix_release(version, tmp_path_factory.mktemp("fixed"))
        print(_summary(_RELEASES[version]))
    return _RELEASES[version]
