"""EAG646 on real releases: a head written by speculators before 0.7.0 that keeps a partial
rotary factor below 1, warned where the release applies the factor from where the config holds
it (0.11: a top-level factor only; 0.16 and later: either place); a head of 0.7.0 or with full
rotary is silent everywhere. Issue 54, speculators#613."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from eagle3lint.cli import app
from eagle3lint.drafts.rotary import untrained_partial_rotary
from eagle3lint.engines.vllm.contract.draft_rotary import (
    CONFIG_PATCH,
    LLAMA,
    NESTED,
    ROTARY_FILES,
    TOP,
    read_draft_rotary,
)

PAIRING = Path(__file__).resolve().parent.parent / "fixtures" / "pairing"
TARGET = PAIRING / "context" / "llama-3.1-8b-target"
ROTARY = PAIRING / "rotary"
NESTED_HEAD = ROTARY / "head-0.6.0-nested-0.25"
TOP_HEAD = ROTARY / "head-0.6.0-top-0.25"
FIXED_HEAD = ROTARY / "head-0.7.0-nested-0.25"
FULL_HEAD = ROTARY / "head-0.6.0-full"
RELEASES = ("0.11.0", "0.16.0", "0.22.0", "0.34.0")


def rotary_findings(
    vllm_release: Callable[[str], Path], version: str, draft: Path
) -> list[dict[str, Any]]:
    vllm_release(version)
    args = ["pair", "--vllm", version, "--target", str(TARGET), "--draft", str(draft)]
    result = CliRunner().invoke(app, [*args, "--format", "json"])
    assert result.exit_code in (0, 1), result.output
    report = json.loads(result.stdout)
    return [f for t in report["targets"] for f in t["findings"] if f["code"] == "EAG646"]


@pytest.mark.parametrize(
    ("version", "draft", "applied_in"),
    [
        # 0.11's get_rope takes the factor as an argument, which Llama's attention fills from
        # the top-level key only.
        ("0.11.0", NESTED_HEAD, None),
        ("0.11.0", TOP_HEAD, "model_executor/models/llama.py:"),
        ("0.16.0", NESTED_HEAD, "rotary_embedding/__init__.py:61"),
        ("0.16.0", TOP_HEAD, "transformers_utils/config.py:"),
        ("0.34.0", NESTED_HEAD, "rotary_embedding/__init__.py:69"),
        ("0.34.0", TOP_HEAD, "transformers_utils/config.py:"),
    ],
)
def test_an_old_speculators_head_with_partial_rotary(
    vllm_release: Callable[[str], Path], version: str, draft: Path, applied_in: str | None
) -> None:
    found = rotary_findings(vllm_release, version, draft)
    assert [f["severity"] for f in found] == (["warning"] if applied_in else []), found
    if found:
        assert applied_in in found[0]["message"]
        assert "partial_rotary_factor 0.25" in found[0]["message"]
        assert "partial_rotary_factor to 1.0" in found[0]["hint"]


@pytest.mark.parametrize("version", RELEASES)
@pytest.mark.parametrize("draft", [FIXED_HEAD, FULL_HEAD])
def test_a_head_trained_as_served_is_silent(
    vllm_release: Callable[[str], Path], version: str, draft: Path
) -> None:
    assert rotary_findings(vllm_release, version, draft) == []


@pytest.mark.parametrize(
    ("version", "nested", "top"),
    [
        ("0.10.0", False, "llama.py"),
        ("0.11.0", False, "llama.py"),
        ("0.16.0", True, "config.py"),
        ("0.34.0", True, "config.py"),
    ],
)
def test_facts_read_from_each_release(
    vllm_release: Callable[[str], Path], version: str, nested: bool, top: str
) -> None:
    root = vllm_release(version)
    texts = {
        rel: (root / rel).read_text() for rel in (*ROTARY_FILES, CONFIG_PATCH, LLAMA)
        if (root / rel).is_file()
    }  # fmt: skip
    facts = read_draft_rotary(texts, str(root))
    assert (facts.reads(NESTED) is not None) is nested
    applied = facts.reads(TOP)
    assert applied is not None and applied[0].endswith(top)


@pytest.mark.parametrize(
    ("changes", "found"),
    [
        ({}, (0.25, NESTED)),
        ({"speculators_version": "0.7.0"}, None),
        ({"speculators_version": "0.10.1"}, None),
        ({"speculators_version": "0.6"}, (0.25, NESTED)),
        ({"speculators_version": None}, None),
        ({"speculators_version": "dev"}, None),
        ({"transformer_layer_config": {"partial_rotary_factor": 0.5}}, (0.5, TOP)),
        ({"transformer_layer_config": {"partial_rotary_factor": 1.0}}, None),
        ({"transformer_layer_config": {"partial_rotary_factor": True}}, None),
        ({"transformer_layer_config": "x"}, None),
    ],
)
def test_the_head_side(changes: dict[str, Any], found: tuple[float, str] | None) -> None:
    data = {**json.loads((NESTED_HEAD / "config.json").read_text()), **changes}
    head = untrained_partial_rotary(data)
    assert (None if head is None else (head.factor, head.place)) == found
