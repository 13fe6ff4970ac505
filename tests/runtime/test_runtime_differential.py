"""eagle3lint's verdicts against real vLLM's own answers, arch by arch, on installed releases.

For each release of `venvs.RELEASES` (installed once into the user cache, see `venvs.py`),
eagle3lint checks the installed `vllm` package statically and the release's own interpreter
imports every registered class (`oracle.py`). Compared, for every arch that imports:

- `implements_eagle3` against vLLM's `supports_eagle3()`;
- `role` against the registry (speculative-decoding section, `is_pooling_model`,
  `is_text_generation_model`);
- readiness, where vLLM can decide it without weights: a target eagle3lint calls ready must
  pass `supports_eagle3()` and have real bodies for the methods the runner calls; a target it
  blocks for a class-level reason (EAG101/EAG102/EAG201) must fail one of those.

vLLM on this machine resolves the CPU platform, while eagle3lint's verdict is for CUDA. Where a
`vllm/models/<family>` package picks another class for CPU, the runtime's answer is compared
with eagle3lint's verdict on that same variant; where eagle3lint has no such variant, the pair
is reported as not compared, naming both platforms, never counted either way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from runtime import Comparison, ask_vllm, installed_tree
from venvs import RELEASES

from eagle3lint.engine import CheckOptions, run_check
from eagle3lint.engines import Role
from eagle3lint.engines.vllm.contract.draft_archs import is_draft_architecture
from eagle3lint.engines.vllm.targets import Target
from eagle3lint.findings import Severity
from eagle3lint.index.refs import ClassRef

CLASS_LEVEL_BLOCKERS = frozenset({"EAG101", "EAG102", "EAG201"})
"""Blockers vLLM shows on the class itself, before any weight is loaded."""


@dataclass
class Release:
    version: str
    answers: dict[str, dict[str, Any]]
    targets: dict[str, Target]
    errors: dict[str, set[str]]
    """Error-severity codes per arch, as eagle3lint reports them."""


@pytest.fixture(scope="module", params=RELEASES)
def release(request: pytest.FixtureRequest) -> Release:
    version = request.param
    answers = ask_vllm(version)
    # Every architecture is asked about, so each keeps its full list of blockers.
    run = run_check(CheckOptions(paths=[installed_tree(version)], require=["*"]))
    targets = {t.arch: t for t in run.targets}
    errors = {
        t.arch: {f.code for f in t.findings if f.severity is Severity.ERROR}
        for t in run.report.targets
    }
    return Release(version, answers, targets, errors)


def _same_class(ref: ClassRef, module: str, qualname: str) -> bool:
    if "<locals>" in qualname:  # built by a class factory: eagle3lint names it factory[arg]
        return ref.file.module == module and ref.name.split("[")[0] == qualname.split(".")[-1]
    return ref.qualname == f"{module}.{qualname}"


def _judged(release: Release, arch: str, answer: dict[str, Any]) -> Target | str:
    """eagle3lint's target for the class vLLM imported, or why there is none to compare."""
    target = release.targets.get(arch)
    if target is None:
        return "missing: eagle3lint found no such registered architecture"
    module, qualname = answer["module"], answer["qualname"]
    if _same_class(target.ref, module, qualname):
        return target
    for platform, ref in target.variants.items():
        if _same_class(ref, module, qualname):
            index, contract = target.index, target.contract
            return Target(arch, ref, index, contract, variant=platform, section=target.section)
    if target.variants:
        return (
            f"platform: vLLM answered for {answer['platform']} ({module}.{qualname}), "
            f"eagle3lint for CUDA ({target.ref.qualname}) and has no variant for that class"
        )
    return f"class: vLLM imported {module}.{qualname}, eagle3lint analysed {target.ref.qualname}"


def _compare(release: Release, name: str, judge: Any) -> Comparison:
    """Run `judge(target, answer) -> (agrees, why) | str-to-skip` over every imported arch."""
    comparison = Comparison(f"{release.version} {name}")
    for arch, answer in sorted(release.answers.items()):
        if not answer["ok"]:
            comparison.skipped[arch] = f"import: {answer['error'][:160]}"
            continue
        target = _judged(release, arch, answer)
        if isinstance(target, str):
            bucket = comparison.disagree if target.startswith("class") else comparison.skipped
            bucket[arch] = target
            continue
        outcome = judge(target, answer)
        if isinstance(outcome, str):
            comparison.skipped[arch] = outcome
        elif outcome[0]:
            comparison.agree.append(arch)
        else:
            comparison.disagree[arch] = outcome[1]
    print(comparison.summary())
    return comparison


def _report(comparison: Comparison) -> str:
    lines = [comparison.summary()]
    lines += [f"  {arch}: {why}" for arch, why in sorted(comparison.disagree.items())]
    return "\n".join(lines)


def test_every_registered_arch_is_answered(release: Release) -> None:
    imported = [a for a, r in release.answers.items() if r["ok"]]
    assert len(imported) >= 0.9 * len(release.answers), [
        (a, r["error"][:200]) for a, r in release.answers.items() if not r["ok"]
    ]
    assert set(release.answers) <= set(release.targets) | {
        a for a, r in release.answers.items() if not r["ok"]
    }


def test_implements_eagle3_equals_supports_eagle3(release: Release) -> None:
    def judge(target: Target, answer: dict[str, Any]) -> tuple[bool, str]:
        ours, theirs = target.implements_eagle3, answer["supports_eagle3"]
        return ours == theirs, f"implements_eagle3={ours}, supports_eagle3()={theirs}"

    comparison = _compare(release, "implements_eagle3", judge)
    assert not comparison.disagree, _report(comparison)


def _runtime_role(answer: dict[str, Any]) -> str:
    """The registry's speculative section, else the runner vLLM picks by default."""
    if answer["draft_section"]:
        return Role.DRAFT
    return {"pooling": Role.POOLING, "generate": Role.TARGET}.get(
        answer["runner"], f"runner {answer['runner']}"
    )


def test_role_equals_the_registry(release: Release) -> None:
    def judge(target: Target, answer: dict[str, Any]) -> tuple[bool, str] | str:
        theirs = _runtime_role(answer)
        drafted = is_draft_architecture(target.arch, target.contract.draft_architectures)
        if target.role is Role.DRAFT and not answer["draft_section"] and drafted:
            # vLLM loads it only as a draft: its speculative config writes this architecture
            # into the draft's config (0.33+'s Transformers MTP), while its registry lists it
            # as a generation model. Neither side's word settles it here: not counted.
            return "role: a draft by vLLM's speculative config, a generation model by its registry"
        return target.role == theirs, f"role={target.role}, vLLM: {theirs}"

    comparison = _compare(release, "role", judge)
    assert not comparison.disagree, _report(comparison)


def _runtime_blocker(target: Target, answer: dict[str, Any]) -> str:
    """Why vLLM refuses the class before loading weights ("" when it cannot tell)."""
    if not answer["supports_eagle3"]:
        return "supports_eagle3() is False"
    contract = target.contract
    called = [contract.setter, contract.getter]
    members = answer["members"]
    broken = [m for m in called if members.get(m) in ("missing", "stub")]
    if broken:
        return f"{', '.join(f'{m} is {members[m]}' for m in broken)}"
    return ""


def test_readiness_agrees_where_vllm_decides_without_weights(release: Release) -> None:
    def judge(target: Target, answer: dict[str, Any]) -> tuple[bool, str] | str:
        if target.role is not Role.TARGET:
            return "role: not a target"
        if release.targets[target.arch].ref.qualname != target.ref.qualname:
            return "platform: eagle3lint's readiness verdict is on the CUDA class"
        errors = release.errors.get(target.arch, set())
        blocker = _runtime_blocker(target, answer)
        if not errors:
            return blocker == "", f"eagle3lint: ready; vLLM: {blocker}"
        class_level = errors & CLASS_LEVEL_BLOCKERS
        if blocker:
            return True, ""
        if class_level:
            return False, f"eagle3lint: {sorted(class_level)}; vLLM accepts the class"
        return "weights: the remaining blockers show only with a loaded model"

    comparison = _compare(release, "readiness", judge)
    assert not comparison.disagree, _report(comparison)
