"""Plugins that fail to load, to validate or to run are reported and skipped, never fatal: the
built-in rules and codemods go on working (rule packs under `eagle3lint.rules`, codemods under
`eagle3lint.repairs`)."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path

import libcst as cst
import pytest
from vllm_tree import write_vllm_tree

from eagle3lint import rule as rule_module
from eagle3lint.codemod import registry
from eagle3lint.engine import CheckOptions, run_check
from eagle3lint.errors import CodemodRefused
from eagle3lint.repairs import AddProtocolBase
from eagle3lint.rule import load_plugins

HEADER = """\
from dataclasses import dataclass
from typing import ClassVar
from eagle3lint.api import Code, Example, Expected, Repair, Rule, Severity

WARN = Severity.WARNING
"""


@pytest.fixture
def plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder on sys.path for plugin modules; the plugin caches are cleared around the test."""
    monkeypatch.syspath_prepend(str(tmp_path))
    load_plugins.cache_clear()
    registry.load_codemods.cache_clear()
    yield tmp_path
    load_plugins.cache_clear()
    registry.load_codemods.cache_clear()


def install(
    monkeypatch: pytest.MonkeyPatch, folder: Path, group: str, module: str, source: str
) -> None:
    """Write `module` and declare it under `group` beside the installed entry points."""
    (folder / f"{module}.py").write_text(HEADER + textwrap.dedent(source), encoding="utf-8")
    point = EntryPoint(module, module, group)
    installed = entry_points(group=group)
    target = rule_module if group == rule_module.ENTRY_POINT_GROUP else registry
    monkeypatch.setattr(target, "entry_points", lambda group: [*installed, point])


BROKEN_RULES = {
    "raises on import": ("raise RuntimeError('boom')\n", "failed to load: RuntimeError('boom')"),
    "no slug": (
        """
        class NoSlug(Rule):
            codes = (Code("ACME1", "a", "b", WARN),)
            def check(self, target, ctx):
                return iter(())
        RULES = [NoSlug]
        """,
        "rule class NoSlug has no valid slug",
    ),
    "no codes": (
        """
        class NoCodes(Rule):
            slug = "no-codes"
            def check(self, target, ctx):
                return iter(())
        RULES = [NoCodes]
        """,
        "rule no-codes declares no codes",
    ),
    "a code twice": (
        """
        class Twice(Rule):
            slug = "twice"
            codes = (Code("ACME1", "a", "b", WARN), Code("ACME1", "c", "d", WARN))
            def check(self, target, ctx):
                return iter(())
        RULES = [Twice]
        """,
        "rule twice declares a code twice",
    ),
    "a built-in code": (
        """
        class Clash(Rule):
            slug = "clash"
            codes = (Code("EAG101", "a", "b", WARN),)
            def check(self, target, ctx):
                return iter(())
        RULES = [Clash]
        """,
        "code EAG101 is already reported by rule protocol-inheritance",
    ),
    "an example of an undeclared code": (
        """
        class Undeclared(Rule):
            slug = "undeclared"
            codes = (Code("ACME1", "a", "b", WARN),)
            invalid = (Example("class A: pass\\n", "e2_stub", expect=(Expected("ACME2"),)),)
            def check(self, target, ctx):
                return iter(())
        RULES = [Undeclared]
        """,
        "invalid example 0 expects 'ACME2', which the rule does not declare",
    ),
    "a valid example with findings": (
        """
        class Valid(Rule):
            slug = "valid-with-findings"
            codes = (Code("ACME1", "a", "b", WARN),)
            valid = (Example("class A: pass\\n", "e2_stub", expect=("ACME1",)),)
            def check(self, target, ctx):
                return iter(())
        RULES = [Valid]
        """,
        "valid example 0 is valid but expects findings",
    ),
    "an example that is not one": (
        """
        class NotAnExample(Rule):
            slug = "not-an-example"
            codes = (Code("ACME1", "a", "b", WARN),)
            invalid = ("class A: pass",)
            def check(self, target, ctx):
                return iter(())
        RULES = [NotAnExample]
        """,
        "invalid example 0 is 'class A: pass', not an Example",
    ),
    "an explanation that is a dict": (
        """
        class DictExplain(Rule):
            slug = "dict-explain"
            codes = (Code("ACME1", "a", "b", WARN, explain={"runtime": "x"}),)
            def check(self, target, ctx):
                return iter(())
        RULES = [DictExplain]
        """,
        "gives ACME1 an explanation that is {'runtime': 'x'}, not an Explanation",
    ),
    "an explanation with a field that is not text": (
        """
        from eagle3lint.api import Explanation
        class BadField(Rule):
            slug = "bad-field"
            codes = (
                Code("ACME1", "a", "b", WARN, explain=Explanation("r", None, "all", "e", "f")),
            )
            def check(self, target, ctx):
                return iter(())
        RULES = [BadField]
        """,
        "gives ACME1 an explanation that gives error as None, not text",
    ),
    "a newer rule API": (
        """
        class Future(Rule):
            slug = "future"
            api_version = (1, 99)
            codes = (Code("ACME1", "a", "b", WARN),)
            def check(self, target, ctx):
                return iter(())
        RULES = [Future]
        """,
        "rule future was written for rule API 1.99; this eagle3lint offers 1.3",
    ),
    "another major rule API": (
        """
        class Old(Rule):
            slug = "old-major"
            api_version = (0, 3)
            codes = (Code("ACME1", "a", "b", WARN),)
            def check(self, target, ctx):
                return iter(())
        RULES = [Old]
        """,
        "rule old-major was written for rule API 0.3",
    ),
    "engines that are not names": (
        """
        class NoEngine(Rule):
            slug = "no-engine"
            engines = "vllm"
            codes = (Code("ACME1", "a", "b", WARN),)
            def check(self, target, ctx):
                return iter(())
        RULES = [NoEngine]
        """,
        "rule no-engine gives engines 'vllm', not a tuple of engine names",
    ),
}


@pytest.mark.parametrize("case", list(BROKEN_RULES))
def test_a_broken_rule_plugin_is_reported_and_skipped(
    case: str, plugins: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source, message = BROKEN_RULES[case]
    module = f"acme_broken_{list(BROKEN_RULES).index(case)}"  # a fresh import for each case
    install(monkeypatch, plugins, rule_module.ENTRY_POINT_GROUP, module, source)
    rules, broken = load_plugins()
    assert [m for m in broken if message in m], broken
    assert all(r.plugin == "eagle3lint" for r in rules)  # nothing of the pack, every built-in
    assert {r.slug for r in rules} >= {"protocol-inheritance", "forward-taps"}
    run = run_check(CheckOptions(paths=[write_vllm_tree(plugins / "tree")], use_cache=False))
    assert [e for e in run.report.errors if e.code == "EAG903" and message in e.message]
    assert [f for t in run.report.targets for f in t.findings if f.rule == "aux-layer-methods"]


def test_a_malformed_explanation_never_crashes_explain_or_sarif(
    plugins: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from eagle3lint.cli import app

    source = """
    class DictExplain(Rule):
        slug = "dict-explain"
        codes = (Code("ACME7", "a", "b", WARN, explain={"runtime": 3}),)
        def check(self, target, ctx):
            return iter(())
    RULES = [DictExplain]
    """
    install(monkeypatch, plugins, rule_module.ENTRY_POINT_GROUP, "acme_dict_explain", source)
    tree = write_vllm_tree(plugins / "tree")
    runner = CliRunner()
    sarif = runner.invoke(app, ["check", str(tree), "--format", "sarif", "--no-cache"])
    assert sarif.exception is None or isinstance(sarif.exception, SystemExit), sarif.output
    assert "EAG903" in sarif.output and "not an Explanation" in sarif.output
    explained = runner.invoke(app, ["explain", "ACME7"])
    assert explained.exit_code == 2
    assert "Traceback" not in explained.output
    assert runner.invoke(app, ["explain", "EAG101"]).exit_code == 0


def test_a_rule_plugin_that_fails_to_run_costs_only_its_own_findings(
    plugins: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = """
    class Crashes(Rule):
        slug = "crashes"
        codes = (Code("ACME1", "a", "b", WARN),)
        def check(self, target, ctx):
            raise ZeroDivisionError("oops")
    RULES = [Crashes]
    """
    install(monkeypatch, plugins, rule_module.ENTRY_POINT_GROUP, "acme_crashes", source)
    run = run_check(CheckOptions(paths=[write_vllm_tree(plugins / "tree")], use_cache=False))
    findings = [f for t in run.report.targets for f in t.findings]
    assert [f for f in findings if f.code == "EAG903" and "crashes" in f.message]
    assert [f for f in findings if f.rule == "aux-layer-methods"]


CODEMOD_PLUGIN = """
import libcst as cst
from eagle3lint.api import CodemodRefused

@dataclass(frozen=True, slots=True)
class AddMarker(Repair):
    cls: str
    kind: ClassVar[str] = "acme-add-marker"

@dataclass(frozen=True, slots=True)
class Explodes(Repair):
    kind: ClassVar[str] = "acme-explodes"

@dataclass(frozen=True, slots=True)
class AlsoProtocolBase(Repair):
    kind: ClassVar[str] = "add-protocol-base"

def add_marker(module, repair, relative):
    return module.with_changes(body=[*module.body, cst.parse_statement("MARKER = 1\\n")])

def explode(module, repair, relative):
    raise KeyError("no such node")

CODEMODS = {AddMarker: add_marker, Explodes: explode, AlsoProtocolBase: add_marker}
"""


def test_a_plugin_codemod_applies_its_repair_and_a_crash_refuses_only_its_own(
    plugins: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install(monkeypatch, plugins, registry.ENTRY_POINT_GROUP, "acme_codemods", CODEMOD_PLUGIN)
    codemods, broken = registry.load_codemods()
    assert [m for m in broken if "repair kind add-protocol-base is already applied" in m], broken
    by_kind = {repair.kind: repair for repair in codemods}
    module = cst.parse_module("class A:\n    pass\n")
    marked = registry.apply_repair(module, by_kind["acme-add-marker"]("m.py", cls="A"), False)
    assert marked.code.endswith("MARKER = 1\n")
    with pytest.raises(CodemodRefused, match="the codemod of acme-explodes failed: KeyError"):
        registry.apply_repair(module, by_kind["acme-explodes"]("m.py"), False)
    # The built-in codemod of the kind the plugin tried to take is the one applied.
    based = registry.apply_repair(module, AddProtocolBase("m.py", cls="A"), False)
    assert "SupportsEagle3" in based.code


def test_a_codemod_plugin_that_fails_to_load_is_named_when_a_repair_has_no_codemod(
    plugins: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install(monkeypatch, plugins, registry.ENTRY_POINT_GROUP, "acme_gone", "import nowhere_\n")
    codemods, broken = registry.load_codemods()
    assert set(codemods) == set(registry.BUILTIN)
    assert [m for m in broken if "acme_gone" in m and "failed to load" in m], broken

    from eagle3lint.repairs import Repair

    class Orphan(Repair):
        kind = "acme-orphan"

    with pytest.raises(CodemodRefused, match=r"no codemod for acme-orphan .*acme_gone"):
        registry.apply_repair(cst.parse_module(""), Orphan("m.py"), False)
