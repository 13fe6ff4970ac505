"""Acceptance on real vLLM releases, fetched once through the `--vllm` download path."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from eagle3lint.cli import app

REPO = Path(__file__).resolve().parent.parent
KIMI_CONFIG = REPO / "examples" / "kimi-k2.5" / "config.json"
KIMI = "KimiK25ForConditionalGeneration"
runner = CliRunner()


def check_json(*args: str) -> tuple[int, dict]:
    result = runner.invoke(app, ["check", *args, "--format", "json"])
    assert result.exit_code in (0, 1, 2), result.output
    return result.exit_code, json.loads(result.stdout)


def by_arch(report: dict) -> dict[str, dict]:
    return {t["arch"]: t for t in report["targets"]}


def rules_of(target: dict) -> set[str]:
    return {f["rule"] for f in target["findings"] if f["severity"] == "error"}


@pytest.mark.parametrize("version", ["0.16.0", "0.17.0"])
def test_kimi_blocked_by_all_three_crashes(version: str, vllm_release: Callable) -> None:
    vllm_release(version)
    code, report = check_json("--vllm", version, "--arch", KIMI, "--hf-config", str(KIMI_CONFIG))
    kimi = by_arch(report)[KIMI]
    assert code == 1
    assert report["vllm"]["version"] == version
    assert not kimi["implements_eagle3"] and not kimi["eagle3_ready"]
    assert {"target-gate", "config-attr-names", "protocol-inheritance"} <= rules_of(kimi)
    assert "forward-taps" in rules_of(kimi)


def test_kimi_ready_on_0_18(vllm_release: Callable) -> None:
    vllm_release("0.18.0")
    code, report = check_json("--vllm", "0.18.0", "--arch", KIMI, "--hf-config", str(KIMI_CONFIG))
    kimi = by_arch(report)[KIMI]
    assert kimi["implements_eagle3"] and kimi["eagle3_ready"]
    assert not {"target-gate", "config-attr-names", "protocol-inheritance"} & {
        f["rule"] for f in kimi["findings"]
    }
    assert code == 0


@pytest.mark.parametrize(
    ("version", "deepseek_implements"),
    [("0.11.0", False), ("0.16.0", False), ("0.17.0", False), ("0.18.0", True), ("0.33.0", True)],
)
def test_llama_and_deepseek_across_releases(
    version: str, deepseek_implements: bool, vllm_release: Callable
) -> None:
    root = vllm_release(version)
    _, report = check_json(
        str(root), "--arch", "LlamaForCausalLM", "--arch", "DeepseekV3ForCausalLM"
    )
    targets = by_arch(report)
    assert targets["LlamaForCausalLM"]["eagle3_ready"], targets["LlamaForCausalLM"]["findings"]
    assert targets["LlamaForCausalLM"]["implements_eagle3"]
    deepseek = targets["DeepseekV3ForCausalLM"]
    assert deepseek["implements_eagle3"] is deepseek_implements
    assert deepseek["eagle3_ready"] is deepseek_implements


def test_full_check_of_0_33_gives_every_arch_a_verdict(vllm_release: Callable) -> None:
    root = vllm_release("0.33.0")
    code, report = check_json(str(root))
    assert code == 1
    assert report["errors"] == []
    assert len(report["targets"]) > 300
    assert all(isinstance(t["eagle3_ready"], bool) for t in report["targets"])
    assert not [f for t in report["targets"] for f in t["findings"] if f["code"] == "EAG903"]
    implementing = {t["arch"] for t in report["targets"] if t["implements_eagle3"]}
    assert {"LlamaForCausalLM", "Qwen2ForCausalLM", "DeepseekV3ForCausalLM", KIMI} <= implementing


@pytest.mark.parametrize("version", ["0.16.0", "0.17.0"])
@pytest.mark.parametrize("arch", [KIMI, "DeepseekV3ForCausalLM"])
def test_fix_makes_target_ready(version: str, arch: str, release_copy: Callable) -> None:
    root = release_copy(version)
    args = [str(root), "--arch", arch, "--hf-config", str(KIMI_CONFIG), "--no-cache"]
    before = {p: p.read_bytes() for p in root.rglob("*.py")}
    result = runner.invoke(app, ["fix", *args])
    assert result.exit_code == 0, result.output
    _, report = check_json(*args)
    assert by_arch(report)[arch]["eagle3_ready"]
    changed = [p for p, data in before.items() if p.read_bytes() != data]
    assert changed
    for path in changed:
        compile(path.read_bytes(), str(path), "exec")
    snapshot = {p: p.read_bytes() for p in changed}
    again = runner.invoke(app, ["fix", *args])
    assert again.exit_code == 0, again.output
    assert all(p.read_bytes() == data for p, data in snapshot.items())
    diff = runner.invoke(app, ["fix", *args, "--diff"])
    assert diff.exit_code == 0 and "0 file(s) would change" in diff.output


def test_fix_refuses_to_edit_a_cached_release(vllm_release: Callable) -> None:
    vllm_release("0.16.0")
    result = runner.invoke(app, ["fix", "--vllm", "0.16.0", "--arch", KIMI])
    assert result.exit_code == 2
    assert "--diff" in result.output


# Classes with SupportsEagle3 in their MRO, counted over model_executor/models and models/ by
# the contract notes (../shared/vllm-eagle3-contract.md §D.1) with two methods of their own.
EAGLE3_CLASS_COUNTS = {"0.11.0": 20, "0.16.0": 52, "0.18.0": 70}


@pytest.mark.parametrize(("version", "expected"), sorted(EAGLE3_CLASS_COUNTS.items()))
def test_protocol_classes_match_independent_count(
    version: str, expected: int, vllm_release: Callable
) -> None:
    from eagle3lint.contract.reader import read_contract
    from eagle3lint.index.cache import SummaryCache, default_cache_dir
    from eagle3lint.index.project import ClassRef, ProjectIndex

    root = vllm_release(version)
    index = ProjectIndex([root.parent], cache=SummaryCache(default_cache_dir()))
    contract = read_contract(index, root, "tree")
    files = [p for d in ("model_executor/models", "models") for p in (root / d).rglob("*.py")]
    modules = [m for p in files if (m := index.module_of(p)) and not m.endswith(".interfaces")]
    index.preload(modules)
    count = 0
    for module in modules:
        summary = index.summary(module)
        for cls in summary.classes.values() if summary else ():
            mro = index.mro(ClassRef(summary, cls))
            count += any(isinstance(e, ClassRef) and e.qualname == contract.protocol for e in mro)
    assert count == expected


@pytest.mark.parametrize("version", ["0.16.0", "0.33.0"])
def test_fix_everything_in_a_release(version: str, release_copy: Callable) -> None:
    """Every fixable finding of every architecture: no crash, every written file compiles, and
    a second run has nothing left to change."""
    root = release_copy(version)
    before = {p: p.read_bytes() for p in root.rglob("*.py")}
    # Every architecture as asked: by default fix leaves models that never claimed support.
    result = runner.invoke(app, ["fix", str(root), "--model-type", "kimi_k2", "--require", "*"])
    assert result.exit_code in (0, 1), result.output
    assert "internal error" not in result.output
    changed = [p for p, data in before.items() if p.read_bytes() != data]
    assert len(changed) > 10
    for path in changed:
        compile(path.read_bytes(), str(path), "exec")
    diff = runner.invoke(
        app, ["fix", str(root), "--model-type", "kimi_k2", "--require", "*", "--diff"]
    )
    assert "0 file(s) would change" in diff.output, diff.output[-2000:]


def test_bundled_newest_contract_is_what_the_reader_extracts(vllm_release: Callable) -> None:
    """`newest.json` (used for model files with no vLLM tree in reach) is never hand-written:
    it must equal what the reader extracts from the newest release we test."""
    from eagle3lint.contract.known import contract_to_json
    from eagle3lint.contract.reader import read_contract
    from eagle3lint.index.project import ProjectIndex

    root = vllm_release("0.33.0")
    extracted = contract_to_json(
        read_contract(ProjectIndex([root.parent]), root, "tree"), str(root)
    )
    bundled = json.loads((REPO / "eagle3lint" / "contract" / "newest.json").read_text())
    assert extracted == bundled
