"""EAG644 on real releases: a draft whose `max_position_embeddings` is below the served context,
judged per release and model runner from the facts read out of the release's sources; a head
within its positions is silent everywhere. Issue 54."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from eagle3lint.cli import app
from eagle3lint.drafts.context import derived_length, served
from eagle3lint.engines.vllm.contract.draft_context import (
    SELECTION,
    SPECULATIVE,
    V1_RUNNER,
    read_draft_context,
)

CONTEXT = Path(__file__).resolve().parent.parent / "fixtures" / "pairing" / "context"
TARGET = CONTEXT / "llama-3.1-8b-target"
SHORT = CONTEXT / "eagle3-head-2048"
LONG = CONTEXT / "eagle3-head-131072"
YARN = CONTEXT / "eagle3-head-yarn-4096"
RELEASES = ("0.18.0", "0.25.0", "0.32.0", "0.33.0", "0.34.0")


def context_findings(
    vllm_release: Callable[[str], Path], version: str, draft: Path, *extra: str
) -> list[dict[str, Any]]:
    vllm_release(version)
    args = ["pair", "--vllm", version, "--target", str(TARGET), "--draft", str(draft)]
    result = CliRunner().invoke(app, [*args, "--format", "json", *extra])
    assert result.exit_code in (0, 1), result.output
    report = json.loads(result.stdout)
    return [f for t in report["targets"] for f in t["findings"] if f["code"] == "EAG644"]


@pytest.mark.parametrize(
    ("version", "draft", "extra", "severity", "words"),
    [
        # V1 (the only default runner on 0.18): the drafter's max model len gates drafting.
        ("0.18.0", SHORT, (), "warning", "speculation is off past 2048 tokens"),
        # V2 for Llama on cuda, no raise of the draft's positions: vllm#48894.
        ("0.25.0", SHORT, (), "error", "reads past the cache's end"),
        ("0.25.0", SHORT, ("--platform", "cpu"), "warning", "stops drafting"),
        # Raised to the target's for every RoPE type, and V2 has no gate.
        ("0.32.0", SHORT, (), None, ""),
        ("0.32.0", SHORT, ("--platform", "cpu", "--max-model-len", "4096"), "warning", "2048"),
        ("0.33.0", SHORT, (), None, ""),
        # YaRN is not cache-only: not raised, the served context is lowered instead.
        ("0.33.0", YARN, ("--max-model-len", "32768"), "warning", "lowers the served context"),
        ("0.34.0", YARN, ("--max-model-len", "32768"), "warning", "to 4096"),
        ("0.34.0", SHORT, (), None, ""),
    ],
)
def test_short_draft_per_release_and_runner(
    vllm_release: Callable[[str], Path],
    version: str,
    draft: Path,
    extra: tuple[str, ...],
    severity: str | None,
    words: str,
) -> None:
    found = context_findings(vllm_release, version, draft, *extra)
    assert [f["severity"] for f in found] == ([severity] if severity else []), found
    if found:
        assert words in found[0]["message"]
        assert found[0]["hint"].startswith("Use a head trained at")


@pytest.mark.parametrize("version", RELEASES)
@pytest.mark.parametrize("platform", ["cuda", "cpu"])
def test_a_head_within_its_positions_is_silent(
    vllm_release: Callable[[str], Path], version: str, platform: str
) -> None:
    assert context_findings(vllm_release, version, LONG, "--platform", platform) == []
    # The short head, served within its positions, is silent too.
    within = ("--platform", platform, "--max-model-len", "2048")
    assert context_findings(vllm_release, version, SHORT, *within) == []


def test_hf_overrides_change_the_served_context(vllm_release: Callable[[str], Path]) -> None:
    shorter = json.dumps({"max_position_embeddings": 1024})
    assert context_findings(vllm_release, "0.18.0", SHORT, "--hf-overrides", shorter) == []
    found = context_findings(vllm_release, "0.18.0", LONG, "--max-model-len", "200000")
    assert "served at 200000 (--max-model-len)" in found[0]["message"]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--hf-overrides", "{bad"), "--hf-overrides: not JSON"),
        (("--hf-overrides", "[1]"), "must be a JSON object"),
        (("--max-model-len", "0"), "--max-model-len"),
        (("--max-model-len", "-5"), "--max-model-len"),
    ],
)
def test_bad_context_flags_exit_2(args: tuple[str, ...], words: str) -> None:
    base = ["pair", "--vllm", "0.18.0", "--target", str(TARGET), "--draft", str(SHORT)]
    result = CliRunner().invoke(app, [*base, *args])
    assert result.exit_code == 2
    assert words in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("version", "raises", "types", "gate", "limit", "v2_only"),
    [
        ("0.18.0", False, None, True, False, False),
        ("0.25.0", False, None, True, False, False),
        ("0.32.0", True, None, True, False, False),
        ("0.33.0", True, "llama3", True, True, True),
        ("0.34.0", True, "llama3", False, True, False),
    ],
)
def test_facts_read_from_each_release(
    vllm_release: Callable[[str], Path],
    version: str,
    raises: bool,
    types: str | None,
    gate: bool,
    limit: bool,
    v2_only: bool,
) -> None:
    root = vllm_release(version)
    texts = {
        rel: (root / rel).read_text() for rel in (SPECULATIVE, SELECTION, V1_RUNNER)
        if (root / rel).is_file()
    }  # fmt: skip
    facts = read_draft_context(texts, str(root))
    assert bool(facts.raise_path) is raises
    assert (facts.raised_rope_types is None) is (types is None)
    if types is not None:
        assert types in (facts.raised_rope_types or []) and "yarn" not in facts.raised_rope_types
    assert bool(facts.gate_path) is gate
    assert (bool(facts.limit_path), facts.limit_v2_only) == (limit, v2_only)


@pytest.mark.parametrize(
    ("config", "length"),
    [
        (
            {
                "max_position_embeddings": 131072,
                "rope_scaling": {"rope_type": "llama3", "factor": 8},
            },
            131072,
        ),
        (
            {"max_position_embeddings": 4096, "rope_scaling": {"type": "linear", "factor": 2.0}},
            8192,
        ),
        ({"max_position_embeddings": 4096, "seq_length": 2048}, 2048),
        ({"hidden_size": 8}, None),
    ],
)
def test_derived_length(config: dict[str, Any], length: int | None) -> None:
    assert derived_length(config) == length


def test_served_context_prefers_the_flag_then_the_overridden_config() -> None:
    target = {"max_position_embeddings": 8192}
    assert served(target, 100, {}).length == 100  # type: ignore[union-attr]
    assert served(target, None, {"max_position_embeddings": 512}).length == 512  # type: ignore[union-attr]
    assert served({}, None, {}) is None


def test_sglang_refuses_the_context_flags() -> None:
    """SGLang's wing has no context check: the flags are refused, not silently ignored."""
    base = ["pair", "--sglang", "0.5.23", "--target", str(TARGET), "--draft", str(SHORT)]
    result = CliRunner().invoke(app, [*base, "--max-model-len", "4096"])
    assert result.exit_code == 2
    assert "read for vLLM only" in result.output
