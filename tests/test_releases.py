"""Acceptance on real vLLM releases, fetched once through the `--vllm` download path."""

from __future__ import annotations

import json
import shutil
import subprocess
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


def test_a_key_an_init_parameter_consumes_is_no_attribute(release_copy: Callable) -> None:
    """Issue item 6: `KimiK25Config.__init__` takes `media_placeholder_token_id` as a parameter;
    stored under another name, the config.json key sets no attribute and the proposer's read
    fails, however the checkpoint spells it."""
    root = release_copy("0.18.0")
    config = root / "transformers_utils" / "configs" / "kimi_k25.py"
    stored = "self.media_placeholder_token_id = media_placeholder_token_id"
    assert stored in config.read_text()
    config.write_text(
        config.read_text().replace(stored, "self.media_token_id = media_placeholder_token_id")
    )
    code, report = check_json(str(root), "--arch", KIMI, "--hf-config", str(KIMI_CONFIG))
    kimi = by_arch(report)[KIMI]
    assert (code, kimi["eagle3_ready"]) == (1, False)
    [finding] = [f for f in kimi["findings"] if f["code"] == "EAG401"]
    assert (
        "KimiK25Config.__init__ takes media_placeholder_token_id as a parameter"
        in (finding["message"])
    )
    assert "The config calls it media_token_id" in finding["hint"]


@pytest.mark.parametrize(
    ("version", "deepseek_implements"),
    [("0.11.0", False), ("0.16.0", False), ("0.17.0", False), ("0.18.0", True), ("0.33.0", True)],
)
def test_llama_and_deepseek_across_releases(
    version: str, deepseek_implements: bool, vllm_release: Callable
) -> None:
    root = vllm_release(version)
    # A model_type both pass on releases with the allow-list (≤ 0.21): without one, whatever
    # has no error is unverified, not ready.
    _, report = check_json(
        str(root),
        "--arch",
        "LlamaForCausalLM",
        "--arch",
        "DeepseekV3ForCausalLM",
        "--model-type",
        "llama",
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
    for target in report["targets"]:
        if target["role"] != "target":
            assert (target["eagle3_ready"], target["unverified"]) == (None, []), target
        elif target["eagle3_ready"] is None:
            # Unverified: no error, and what leaves it open is listed.
            assert target["unverified"], target
            assert not [f for f in target["findings"] if f["severity"] == "error"], target
        elif target["eagle3_ready"]:
            assert target["unverified"] == [], target
    unverified = [t for t in report["targets"] if t["unverified"]]
    assert all(
        u["code"] in ("EAG402", "EAG403", "EAG413") for t in unverified for u in t["unverified"]
    )
    # Model runner V2 runs every target by default and reads no image token: what V1's image
    # token read leaves open (or blocks) is said per runner, not in the verdict.
    differing = [t for t in report["targets"] if t["ready_by_runner"]]
    assert differing and all(t["runner"] == "v2" and t["eagle3_ready"] for t in differing)
    drafts = [t for t in report["targets"] if t["role"] == "draft"]
    assert len(drafts) >= 60 and all(t["eagle3_ready"] is None for t in drafts)
    assert not [t["arch"] for t in drafts if t["findings"]]
    assert not [f for t in report["targets"] for f in t["findings"] if f["code"] == "EAG903"]
    implementing = {t["arch"] for t in report["targets"] if t["implements_eagle3"]}
    assert {"LlamaForCausalLM", "Qwen2ForCausalLM", "DeepseekV3ForCausalLM", KIMI} <= implementing


@pytest.mark.parametrize("version", ["0.16.0", "0.17.0"])
@pytest.mark.parametrize("arch", [KIMI, "DeepseekV3ForCausalLM"])
def test_fix_makes_target_ready(version: str, arch: str, release_copy: Callable) -> None:
    root = release_copy(version)
    # What decides the allow-list: Kimi's config.json, DeepSeek-V3's model_type (which 0.16 and
    # 0.17 reject: fix adds it to the allow-list).
    decided = ["--hf-config", str(KIMI_CONFIG)] if arch == KIMI else ["--model-type", "deepseek_v3"]
    args = [str(root), "--arch", arch, *decided, "--no-cache"]
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


def test_fix_diff_of_a_cached_release_is_a_patch_for_a_checkout(
    vllm_release: Callable, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the refusal above suggests: the diff shows the repair (not the refusal), with
    checkout paths, on stdout alone, and `git apply` takes it on a copy of the release."""
    release = vllm_release("0.16.0")
    monkeypatch.chdir(tmp_path)
    args = ["fix", "--vllm", "0.16.0", "--arch", KIMI, "--hf-config", str(KIMI_CONFIG), "--diff"]
    result = runner.invoke(app, args)
    assert result.exit_code == 1, result.output
    assert "would change" not in result.stdout and "4 file(s) would change" in result.stderr
    headers = {line[6:] for line in result.stdout.splitlines() if line.startswith("+++ b/")}
    assert headers == {
        "vllm/model_executor/models/kimi_k25.py",
        "vllm/model_executor/models/deepseek_v2.py",
        "vllm/config/speculative.py",
        "vllm/v1/spec_decode/eagle.py",
    }
    shutil.copytree(release, tmp_path / "vllm")
    (tmp_path / "fix.patch").write_text(result.stdout)
    subprocess.run(["git", "init", "-q", "."], check=True)
    subprocess.run(["git", "apply", "fix.patch"], check=True)
    _, report = check_json(str(tmp_path / "vllm"), "--hf-config", str(KIMI_CONFIG))
    assert by_arch(report)[KIMI]["eagle3_ready"]


# Classes with SupportsEagle3 in their MRO, counted over model_executor/models and models/ by
# the contract notes (../shared/vllm-eagle3-contract.md §D.1) with two methods of their own,
# plus the classes whose base is a class-factory call on a SupportsEagle3 class (the notes do
# not follow those): LlamaBidirectionalModel and LlamaBidirectionalForSequenceClassification,
# `as_embedding_model(LlamaForCausalLM)` / `as_seq_cls_model(...)`, from 0.14. vLLM 0.16.0's own
# `supports_eagle3()` agrees on both (tests/runtime).
EAGLE3_CLASS_COUNTS = {"0.11.0": 20, "0.16.0": 52 + 2, "0.18.0": 70 + 2}


@pytest.mark.parametrize(("version", "expected"), sorted(EAGLE3_CLASS_COUNTS.items()))
def test_protocol_classes_match_independent_count(
    version: str, expected: int, vllm_release: Callable
) -> None:
    from eagle3lint.engines.vllm.contract.reader import read_contract
    from eagle3lint.index.cache import SummaryCache, default_cache_dir
    from eagle3lint.index.project import ProjectIndex
    from eagle3lint.index.refs import ClassRef

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
    from eagle3lint.engines.vllm.contract.known import contract_to_json
    from eagle3lint.engines.vllm.contract.reader import read_contract
    from eagle3lint.index.project import ProjectIndex

    root = vllm_release("0.34.0")
    extracted = contract_to_json(
        read_contract(ProjectIndex([root.parent]), root, "tree"), str(root)
    )
    bundled = json.loads(
        (REPO / "eagle3lint" / "engines" / "vllm" / "contract" / "newest.json").read_text()
    )
    assert extracted == bundled
