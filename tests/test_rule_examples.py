"""Every rule's own valid and invalid examples (Fixit-style), run in a fixture tree of its era."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from eagle3lint.engine import CheckOptions, run_check
from eagle3lint.rule import Example, Rule, load_rules

ERAS = Path(__file__).resolve().parent.parent / "fixtures" / "eras"

CASES = [
    pytest.param(rule, example, id=f"{rule.slug}-{kind}{i}")
    for rule in load_rules()
    for kind, examples in (("valid", rule.valid), ("invalid", rule.invalid))
    for i, example in enumerate(examples)
]


@pytest.mark.parametrize(("rule", "example"), CASES)
def test_rule_example(rule: type[Rule], example: Example, tmp_path: Path) -> None:
    tree = tmp_path / example.era
    shutil.copytree(ERAS / example.era, tree)
    model = tree / "vllm" / "model_executor" / "models" / "rule_example.py"
    model.write_text(example.source.lstrip(), encoding="utf-8")
    # Every class asked about: an example shows what the rule reports once support is wanted.
    options = CheckOptions(
        paths=[model], model_type=example.model_type, use_cache=False, require=["*"]
    )
    run = run_check(options)
    assert run.report.errors == []
    # Info findings are remarks, not verdicts: an example lists them only when it is about them.
    codes = sorted(
        f.code
        for t in run.report.targets
        for f in t.findings
        if f.rule == rule.slug and (f.severity != "info" or f.code in example.expect)
    )
    assert codes == sorted(example.expect)


def test_every_rule_has_examples() -> None:
    for rule in load_rules():
        if rule.plugin == "eagle3lint":
            assert rule.valid or rule.invalid, rule.slug
