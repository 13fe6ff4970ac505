"""eagle3lint's SGLang facts against real SGLang, class by class, on installed releases.

For each release of `venvs.SGLANG_RELEASES` (installed once into the user cache), eagle3lint
checks the installed `sglang` package statically and the release's own interpreter imports
every model module as SGLang's registry does (`sglang_oracle.py`). Compared, for every class of
an `EntryClass` that imports:

- the registry: the architectures of the imported modules, both ways;
- the capture method: present or not, the class of the MRO it comes from, a stub or not, and
  the arguments it requires;
- the embedding/head accessor the release's draft workers call;
- the role: pooling where `is_generation_model` says so, or where SGLang serves the class only
  for a checkpoint its loader routes to it and `ModelConfig` then calls non-generative
  (`sglang_routing.py` on `ROUTED_CHECKPOINTS`; drafts are a naming convention SGLang's server
  options choose, not something a class says);
- the findings: SGL101 exactly where the class has no capture method, SGL102 where it has none
  of the accessors, SGL103 where the method is a stub, SGL104 where it requires an argument the
  release's bare calls do not pass.

Modules that do not import on CPU are listed, never counted either way.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from runtime import in_venv
from venvs import SGLANG, SGLANG_RELEASES, copy_python_files, install, installed_package

from eagle3lint.engine import CheckOptions, run_check
from eagle3lint.engines import Role
from eagle3lint.engines.sglang.contract import SglangContract
from eagle3lint.engines.sglang.targets import SglangTarget
from eagle3lint.fixer import run_fix

ORACLE = Path(__file__).resolve().parent / "sglang_oracle.py"
PROOF = ORACLE.parent / "sglang_accessor_proof.py"
ROUTING = ORACLE.parent / "sglang_routing.py"

ROUTED_CHECKPOINTS: dict[str, dict[str, Any]] = {
    # Google's EmbeddingGemma: a Gemma-3 text model with bidirectional attention, saved under the
    # generative backbone's name.
    "embedding-gemma": {
        "architectures": ["Gemma3TextModel"],
        "model_type": "gemma3_text",
        "use_bidirectional_attention": True,
        "hidden_size": 128,
        "intermediate_size": 256,
        "num_hidden_layers": 4,
        "num_attention_heads": 4,
        "num_key_value_heads": 1,
        "head_dim": 32,
        "vocab_size": 1024,
        "max_position_embeddings": 512,
        "torch_dtype": "float32",
    },
}
"""Checkpoints whose architecture SGLang's loader may replace by another class (configs only)."""


@dataclass
class Release:
    version: str
    contract: SglangContract
    targets: dict[str, SglangTarget]
    codes: dict[str, set[str]]
    answers: dict[str, dict[str, Any]]
    """The oracle's record of every class that imported, by architecture."""
    registry: dict[str, str]
    """eagle3lint's registry: architecture → the models module whose EntryClass lists it."""
    not_imported: dict[str, str] = field(default_factory=dict)
    """Module → why it did not import."""
    routed: dict[str, bool] = field(default_factory=dict)
    """Architecture SGLang builds for a `ROUTED_CHECKPOINTS` checkpoint → `is_generation`."""


@pytest.fixture(scope="module", params=SGLANG_RELEASES)
def release(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Release:
    version = request.param
    python = install(version, SGLANG)
    tree = installed_package(version, SGLANG)
    run = run_check(CheckOptions(paths=[tree], require=["*"]))
    assert run.report.errors == []
    records = in_venv(python, ORACLE, {}, timeout=1800, cwd=ORACLE.parent)
    answers = {
        c["arch"]: {**c, "module": r["module"], "stubs": r["stubs"]}
        for r in records
        for c in r.get("classes", ())
    }
    not_imported = {r["module"]: r["error"] for r in records if "error" in r}
    folders = tmp_path_factory.mktemp("routed")
    for name, config in ROUTED_CHECKPOINTS.items():
        (folders / name).mkdir()
        (folders / name / "config.json").write_text(json.dumps(config))
    request_ = {"configs": list(ROUTED_CHECKPOINTS)}
    routes = in_venv(python, ROUTING, request_, timeout=600, cwd=folders)
    routed = {r["arch"]: r["is_generation"] for r in routes if "arch" in r}
    codes = {t.arch: {f.code for f in t.findings} for t in run.report.targets}
    registry = {e.arch: e.module for e in run.workspace.wing.registry(run.index)}
    return Release(
        version,
        run.targets[0].contract,
        {t.arch: t for t in run.targets},
        codes,
        answers,
        registry,
        not_imported,
        routed,
    )


def _disagreements(release: Release, judge: Any) -> list[str]:
    found = []
    for arch, answer in sorted(release.answers.items()):
        target = release.targets.get(arch)
        if target is None:
            continue  # the registry test reports it
        problem = judge(target, answer)
        if problem:
            found.append(f"{arch}: {problem}")
    return found


def test_the_registry_equals_the_imported_entry_classes(release: Release) -> None:
    imported = {a["module"] for a in release.answers.values()}
    ours = {arch for arch, module in release.registry.items() if module in imported}
    assert ours == set(release.answers), (
        f"only eagle3lint: {sorted(ours - set(release.answers))}; "
        f"only SGLang: {sorted(set(release.answers) - ours)}"
    )
    # Most of the release imports on CPU; what does not is named in the evidence.
    assert len(release.not_imported) <= 5, release.not_imported


def test_the_capture_method_is_the_one_python_finds(release: Release) -> None:
    def judge(target: SglangTarget, answer: dict[str, Any]) -> str:
        found = target.capture
        owner = found.owner.qualname if found else None
        if owner != answer["capture_owner"]:
            return f"eagle3lint finds it in {owner}, Python in {answer['capture_owner']}"
        if found and found.is_stub != answer["capture_stub"]:
            return f"stub: eagle3lint {found.is_stub}, Python {answer['capture_stub']}"
        required = found.method.required_args if found and found.method else None
        if found and found.method and required != answer["capture_required"]:
            return f"required arguments: eagle3lint {required}, Python {answer['capture_required']}"
        return ""

    assert _disagreements(release, judge) == []


def test_the_accessor_and_the_role_agree(release: Release) -> None:
    def judge(target: SglangTarget, answer: dict[str, Any]) -> str:
        has = bool(set(answer["accessors"]) & set(release.contract.embed_head))
        if (target.embed_head is not None) != has:
            return f"accessor: eagle3lint {target.embed_head}, Python {answer['accessors']}"
        if answer["pooling"] is None:
            return ""
        pooling = answer["pooling"] or release.routed.get(target.arch) is False
        if (target.role is Role.POOLING) != pooling:
            return f"role {target.role}, SGLang serves it with pooling={pooling}"
        return ""

    assert _disagreements(release, judge) == []


def test_a_routed_checkpoint_is_served_as_eagle3lint_says(release: Release) -> None:
    """The class SGLang builds for each `ROUTED_CHECKPOINTS` checkpoint is a pooling model in
    eagle3lint exactly when SGLang's `ModelConfig` calls that checkpoint non-generative
    (0.5.23: EmbeddingGemma → `EmbeddingGemmaModel`, never an EAGLE-3 target)."""
    assert len(release.routed) == len(ROUTED_CHECKPOINTS), release.routed
    found = {
        arch: (release.targets[arch].role, generation)
        for arch, generation in release.routed.items()
        if arch in release.targets
    }
    wrong = {a: r for a, (r, g) in found.items() if (r is Role.POOLING) == g}
    assert wrong == {}, found


def test_the_findings_follow_from_what_the_classes_expose(release: Release) -> None:
    bare = any(c.bare for c in release.contract.capture_calls)

    def judge(target: SglangTarget, answer: dict[str, Any]) -> str:
        if target.role is not Role.TARGET:
            return ""
        required = answer["capture_required"] or 0
        capture = answer["capture_owner"] is not None
        expected = set()
        if not capture:
            expected.add("SGL101")
        elif answer["capture_stub"]:
            expected.add("SGL103")
        elif required and bare:
            expected.add("SGL104")
        if not set(answer["accessors"]) & set(release.contract.embed_head):
            expected.add("SGL102")
        got = release.codes.get(target.arch, set()) & {"SGL101", "SGL102", "SGL103", "SGL104"}
        return (
            ""
            if got == expected
            else f"eagle3lint {sorted(got)}, from the class {sorted(expected)}"
        )

    assert _disagreements(release, judge) == []


@pytest.mark.parametrize("version", SGLANG_RELEASES)
def test_fix_gives_qwen2_moe_the_accessor_sglang_calls(version: str, tmp_path: Path) -> None:
    """The latent bug of every release read, repaired: before `fix`, SGLang's own accessor
    lookup fails on Qwen2MoeForCausalLM with AttributeError; after, it returns the class's
    embedding and head weights."""
    python = install(version, SGLANG)
    tree = tmp_path / "sglang"
    copy_python_files(installed_package(version, SGLANG), tree)
    model = tree / "srt" / "models" / "qwen2_moe.py"
    request = {
        "file": str(model),
        "module": "sglang.srt.models.qwen2_moe",
        "class": "Qwen2MoeForCausalLM",
    }
    [before] = in_venv(python, PROOF, request, timeout=600, cwd=ORACLE.parent)
    assert before == {
        "ok": False,
        "error": "AttributeError: 'Qwen2MoeForCausalLM' object has no attribute "
        "'get_embed_and_head'",
    }
    options = CheckOptions(paths=[tree], archs=["Qwen2MoeForCausalLM"])
    run_fix(options)
    [after] = in_venv(python, PROOF, request, timeout=600, cwd=ORACLE.parent)
    assert after == {"ok": True, "shapes": [[8, 4], [8, 4]]}
    report = run_check(options).report
    assert [t.eagle3_ready for t in report.targets] == [True]
