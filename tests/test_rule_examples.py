"""Every rule's own valid and invalid examples (Fixit-style), run in a fixture tree of its era:
the findings each one pins (code, line, message) and, for a fixable one, what `fix` makes of it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from eagle3lint.engine import CheckOptions, run_check
from eagle3lint.engines import wings
from eagle3lint.findings import Finding
from eagle3lint.fixer import run_fix
from eagle3lint.rule import Example, Expected, Rule, load_rules

ERAS = Path(__file__).resolve().parent.parent / "fixtures" / "eras"

CASES = [
    pytest.param(rule, example, id=f"{rule.slug}-{kind}{i}")
    for rule in load_rules()
    for kind, examples in (("valid", rule.valid), ("invalid", rule.invalid))
    for i, example in enumerate(examples)
]
INVALID = [
    pytest.param(
        rule,
        example,
        id=f"{rule.slug}-invalid{i}",
        # `fix` on a rule none of whose codes is fixable can only leave the file as it is: a
        # whole fix run per example, kept for the full suite.
        marks=() if any(code.fixable for code in rule.codes) else (pytest.mark.slow,),
    )
    for rule in load_rules()
    for i, example in enumerate(rule.invalid)
]


def example_tree(example: Example, tmp_path: Path, select: list[str]) -> tuple[Path, CheckOptions]:
    """The example as a model file of a copy of its era's tree, and the options to check it
    with: every class asked about (an example shows what the rule reports once support is
    wanted)."""
    tree = tmp_path / example.era
    shutil.copytree(ERAS / example.era, tree)
    [wing] = [w for w in wings() if (tree / w.package).is_dir()]
    model = tree.joinpath(*wing.models_package.split("."), "rule_example.py")
    model.write_text(example.source.lstrip(), encoding="utf-8")
    options = CheckOptions(
        paths=[model], model_type=example.model_type, use_cache=False, require=["*"], select=select
    )
    return model, options


def rule_findings(options: CheckOptions, rule: type[Rule], example: Example) -> list[Finding]:
    run = run_check(options)
    assert run.report.errors == []
    # Info findings are remarks, not verdicts: an example lists them only when it is about them.
    codes = {e.code for e in example.expected}
    return [
        f
        for t in run.report.targets
        for f in t.findings
        if f.rule == rule.slug and (f.severity != "info" or f.code in codes)
    ]


def matches(finding: Finding, expected: Expected, model: Path) -> bool:
    return (
        finding.code == expected.code
        and (
            expected.line is None or (Path(finding.path) == model and finding.line == expected.line)
        )
        and expected.message in finding.message
    )


@pytest.mark.parametrize(("rule", "example"), CASES)
def test_rule_example(rule: type[Rule], example: Example, tmp_path: Path) -> None:
    model, options = example_tree(example, tmp_path, select=[])
    found = rule_findings(options, rule, example)
    assert sorted(f.code for f in found) == sorted(e.code for e in example.expected)
    unmatched = list(found)
    for expected in example.expected:
        match = next((f for f in unmatched if matches(f, expected, model)), None)
        assert match is not None, f"no finding {expected} among {unmatched}"
        unmatched.remove(match)


@pytest.mark.parametrize(("rule", "example"), INVALID)
def test_fix_rewrites_an_invalid_example_as_expected(
    rule: type[Rule], example: Example, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`fix`, with only this rule's codes selected, leaves the example file as its
    `expected_replacement` says (unchanged when it has none) and no fixable finding behind."""
    model, options = example_tree(example, tmp_path, select=[c.code for c in rule.codes])
    fixable = [f for f in rule_findings(options, rule, example) if f.fixable]
    run_fix(options)
    output = capsys.readouterr().out
    assert (
        model.read_text(encoding="utf-8")
        == (example.expected_replacement or example.source).lstrip()
    ), output
    if fixable:
        assert "0 file(s) changed" not in output, output
    assert [f for f in rule_findings(options, rule, example) if f.fixable] == [], output


def test_every_rule_has_examples() -> None:
    for rule in load_rules():
        if rule.plugin == "eagle3lint":
            assert rule.valid or rule.invalid, rule.slug
