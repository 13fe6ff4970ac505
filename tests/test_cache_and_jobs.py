"""Findings do not depend on the cache or on the number of parser processes (issue 5)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from eagle3lint.cli import app

runner = CliRunner()


def targets(root: Path, *args: str) -> list[dict]:
    result = runner.invoke(app, ["check", str(root), "--format", "json", "--exit-zero", *args])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["errors"] == []
    return report["targets"]


def test_same_findings_with_and_without_cache_and_jobs(
    vllm_release: Callable, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = vllm_release("0.16.0")
    reference = targets(root, "--no-cache", "--jobs", "1")
    monkeypatch.setenv("EAGLE3LINT_CACHE_DIR", str(tmp_path / "cache"))
    cold = targets(root, "--jobs", "2")
    assert any((tmp_path / "cache" / "summaries").rglob("*.json"))
    warm = targets(root, "--jobs", "2")
    assert cold == reference
    assert warm == reference
    assert len(reference) > 250


def test_a_corrupt_cache_entry_is_rebuilt(
    vllm_release: Callable, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = vllm_release("0.16.0")
    monkeypatch.setenv("EAGLE3LINT_CACHE_DIR", str(tmp_path / "cache"))
    args = ("--arch", "LlamaForCausalLM")
    first = targets(root, *args)
    entries = sorted((tmp_path / "cache" / "summaries").rglob("*.json"))
    assert entries
    entries[0].write_text("{not json")
    entries[-1].write_text(json.dumps({"key": "someone else's", "summary": {}}))
    for entry in entries[1:-1]:
        data = json.loads(entry.read_text())
        data["summary"]["classes"] = "not a mapping"
        entry.write_text(json.dumps(data))
    assert targets(root, *args) == first
