"""EAG626 on real releases: a head whose config names no layer ids runs on the target's fallback
layers. A note while the fallback is the speculators' default `[2, n // 2, n - 3]` (every release
0.10-0.34), a warning on a tree whose fallback differs; a head with ids is silent. Issue 54."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from eagle3lint.cli import app

PAIRING = Path(__file__).resolve().parent.parent / "fixtures" / "pairing"
TARGET = PAIRING / "context" / "llama-3.1-8b-target"
NO_IDS = PAIRING / "context" / "eagle3-head-131072"
WITH_IDS = PAIRING / "ids" / "eagle3-head-ids"
RELEASES = ("0.16.0", "0.18.0", "0.34.0")
INTERFACES = "model_executor/models/interfaces.py"
FALLBACK = "return (2, num_layers // 2, num_layers - 3)"


def findings(tree_args: list[str], draft: Path) -> list[dict[str, Any]]:
    args = ["pair", *tree_args, "--target", str(TARGET), "--draft", str(draft), "--format", "json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code in (0, 1), result.output
    report = json.loads(result.stdout)
    return [f for t in report["targets"] for f in t["findings"] if f["code"] == "EAG626"]


@pytest.mark.parametrize("version", RELEASES)
def test_a_head_without_ids_gets_a_note_naming_the_fallback(
    vllm_release: Callable[[str], Path], version: str
) -> None:
    vllm_release(version)
    found = findings(["--vllm", version], NO_IDS)
    assert [f["severity"] for f in found] == ["info"], found
    assert "fallback layers (2, 16, 29)" in found[0]["message"]
    assert "/vllm/model_executor/models/" in found[0]["message"]
    assert "eagle_aux_hidden_state_layer_ids ([2, 16, 29]" in found[0]["hint"]


@pytest.mark.parametrize("version", RELEASES)
def test_a_head_with_ids_is_silent(vllm_release: Callable[[str], Path], version: str) -> None:
    vllm_release(version)
    assert findings(["--vllm", version], WITH_IDS) == []


def test_a_fallback_unlike_the_trainers_default_warns(
    release_copy: Callable[[str], Path],
) -> None:
    tree = release_copy("0.34.0")
    interfaces = tree / INTERFACES
    text = interfaces.read_text()
    assert text.count(FALLBACK) == 1
    interfaces.write_text(text.replace(FALLBACK, "return (1, num_layers // 2, num_layers - 4)"))
    found = findings([str(tree)], NO_IDS)
    assert [f["severity"] for f in found] == ["warning"], found
    assert "(1, 16, 28)" in found[0]["message"]
    assert "differ from [2, 16, 29]" in found[0]["message"]
    assert findings([str(tree)], WITH_IDS) == []
