"""Severity follows intent: a target whose code claims no EAGLE-3 support is not an error unless
the user asked about it (--arch, --hf-config's architectures, --require / `require = [...]`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from eagle3lint.cli import app

ERA = Path(__file__).resolve().parent.parent / "fixtures" / "eras" / "e2_stub"
UNCLAIMED = "KimiLikeForConditionalGeneration"
CLAIMED_BROKEN = "NoTapForCausalLM"


def check(*args: str) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(app, ["check", *args, "--format", "json", "--no-cache"])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)


def target(report: dict[str, Any], arch: str) -> dict[str, Any]:
    [found] = [t for t in report["targets"] if t["arch"] == arch]
    return found


def severities(found: dict[str, Any]) -> dict[str, str]:
    return {f["code"]: f["severity"] for f in found["findings"] if f["code"] != "EAG502"}


def test_an_unclaimed_target_gets_one_info_finding_and_stays_not_ready() -> None:
    code, report = check(str(ERA), "--arch", UNCLAIMED, "--arch", CLAIMED_BROKEN)
    assert code == 1
    asked = target(report, UNCLAIMED)
    assert asked["required"] and not asked["claims_eagle3"]
    assert len([f for f in asked["findings"] if f["severity"] == "error"]) > 1

    _, report = check(str(ERA))
    quiet = target(report, UNCLAIMED)
    assert severities(quiet) == {"EAG102": "info"}
    [note] = [f for f in quiet["findings"] if f["code"] == "EAG102"]
    assert "not EAGLE-3 capable" in note["message"]
    # Not planned (fix repairs no target nobody asked about): the note promises no repair.
    assert f"eagle3lint check --arch {UNCLAIMED}` says whether `fix`" in note["message"]
    assert not note["fixable"]
    # The verdicts stay the plain truth: only severities follow intent.
    assert (quiet["eagle3_ready"], quiet["implements_eagle3"]) == (False, False)
    assert (quiet["claims_eagle3"], quiet["required"]) == (False, False)
    # A target that claims support and breaks the contract is an error everywhere.
    assert severities(target(report, CLAIMED_BROKEN))["EAG301"] == "error"


@pytest.mark.parametrize(
    "how",
    [
        ("--arch", UNCLAIMED),
        ("--require", UNCLAIMED),
        ("--require", "*"),
        ("--hf-config", str(ERA / "hf" / "kimi_like_config.json")),
    ],
)
def test_asking_about_a_target_makes_its_blockers_errors(how: tuple[str, str]) -> None:
    _, report = check(str(ERA), *how)
    found = severities(target(report, UNCLAIMED))
    assert found["EAG102"] == "error" and found["EAG103"] == "error"


def test_require_in_the_configuration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pyproject.toml").write_text(f'[tool.eagle3lint]\nrequire = ["{UNCLAIMED}"]\n')
    monkeypatch.chdir(tmp_path)
    code, report = check(str(ERA), "--select", "EAG1")
    assert code == 1
    assert severities(target(report, UNCLAIMED))["EAG102"] == "error"


def test_exit_code_follows_intent_only() -> None:
    # Only the unclaimed target: no error finding, exit 0, and it is still not ready.
    code, report = check(str(ERA), "--select", "EAG1", "--require", CLAIMED_BROKEN)
    assert code == 1  # HalfImplForCausalLM claims support and lacks SupportsEagle3
    code, report = check(str(ERA), "--select", "EAG102")
    assert code == 0
    assert not target(report, UNCLAIMED)["eagle3_ready"]


def test_without_its_protocol_finding_the_note_stands_on_the_class() -> None:
    """--select EAG3: no EAG102 to carry the note, so the first blocker's code carries it."""
    _, report = check(str(ERA), "--select", "EAG3")
    found = target(report, UNCLAIMED)
    assert severities(found) == {"EAG301": "info"}
    [note] = found["findings"]
    assert Path(note["path"]).name == "mm_wrapper.py" and note["line"] == found["line"]
    assert "not EAGLE-3 capable" in note["message"]
