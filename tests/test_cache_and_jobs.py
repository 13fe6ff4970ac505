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


def test_a_cache_filled_by_a_narrower_check_gives_the_same_findings(
    vllm_release: Callable, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A single-architecture run summarises only the classes it reads; a full run after it
    reads the other classes of those cached files, and finds what a run from nothing does."""
    root = vllm_release("0.16.0")
    reference = targets(root, "--no-cache", "--jobs", "1")
    monkeypatch.setenv("EAGLE3LINT_CACHE_DIR", str(tmp_path / "cache"))
    targets(root, "--arch", "KimiK25ForConditionalGeneration", "--arch", "LlamaForCausalLM")
    assert targets(root, "--jobs", "1") == reference


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
        if "summary" in data:
            data["summary"]["classes"] = "not a mapping"
        else:  # a dependency record or a cached plan, kept beside the summaries: broken too
            data = {"key": data.get("key"), "targets": "not a mapping", "edits": 7}
        entry.write_text(json.dumps(data))
    assert targets(root, *args) == first


@pytest.mark.parametrize(
    ("change", "complaint"),
    [
        (lambda s: s.pop("module"), "FileSummary.module is missing"),
        (lambda s: s.update(path=7), "expected str, got int"),
        (lambda s: s.update(version=["0.16.0"]), "expected str, got list"),
        (lambda s: s.update(config_reads=["hidden_size", None]), "expected str, got NoneType"),
        (lambda s: s.update(config_reads="hidden_size"), "expected a list, got str"),
        (lambda s: s["classes"]["Model"].update(line=True), "expected int, got bool"),
        (lambda s: s["classes"]["Model"].update(bases={}), "expected a list, got dict"),
        (lambda s: s.update(classes=[]), "expected an object, got list"),
        (lambda s: s["classes"].update(Model="class"), "expected an object for ClassSummary"),
    ],
)
def test_a_summary_of_the_wrong_shape_is_refused_field_by_field(
    change: Callable[[dict], object], complaint: str
) -> None:
    """What the cache hands back is checked field by field, whatever shape it has taken."""
    from eagle3lint.errors import SummaryFormatError
    from eagle3lint.index.extract import summarize
    from eagle3lint.index.model import FileSummary, from_json, to_json

    source = (
        "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
    )
    data = to_json(summarize(source, "pkg/model.py"))
    assert to_json(from_json(FileSummary, data)) == data
    change(data)
    with pytest.raises(SummaryFormatError, match=complaint):
        from_json(FileSummary, data)


def test_a_check_leaves_garbage_collection_as_it_found_it(tmp_path: Path) -> None:
    """`check` pauses the cyclic collector for its own run only (it runs in-process here)."""
    import gc

    (tmp_path / "model.py").write_text("x = 1\n")
    assert gc.isenabled()
    runner.invoke(app, ["check", str(tmp_path), "--format", "json", "--exit-zero"])
    assert gc.isenabled()
