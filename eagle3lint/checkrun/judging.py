"""Running the rules: each rule plugin started once, then run on every target, bounded by
`sandbox.py`; a rule that fails or forges a finding is an EAG903 finding, never a stop."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from eagle3lint.codes import NOT_A_TARGET, ROLES
from eagle3lint.engines import Role, Target, role_note
from eagle3lint.findings import Finding, InputError, Severity
from eagle3lint.rule import Rule, RuleContext, finding_problem, load_plugins, selected
from eagle3lint.sandbox import RuleTimeout, plugin_call

if TYPE_CHECKING:
    from eagle3lint.engine import CheckOptions


def instantiate(
    rules: Iterable[type[Rule]] | None,
    options: CheckOptions,
    errors: list[InputError],
    engine: str,
) -> list[Rule]:
    """The rules of this run, those judging the checked engine's targets; a plugin that fails
    to load or to start is an error, not a stop."""
    if rules is None:
        rules, broken = load_plugins()
        errors += [InputError("<plugins>", message, code="EAG903") for message in broken]
    objects = []
    for cls in (each for each in rules if engine in each.engines):
        try:
            with plugin_call(options.rule_timeout):
                objects.append(cls(options.rule_options.get(cls.slug)))
        except (Exception, SystemExit, RuleTimeout) as exc:  # third-party constructor
            message = f"rule {cls.slug} failed to start: {exc!r}"
            errors.append(InputError(f"<plugin {cls.plugin}>", message, code="EAG903"))
    return objects


def judge(
    rules: list[Rule], target: Target, ctx: RuleContext, options: CheckOptions
) -> list[Finding]:
    """Target rules for a target; for a draft or pooling model, only a note when asked for."""
    if target.role is Role.TARGET:
        return _run_rules(rules, target, ctx, options)
    if target.arch not in options.archs or not selected(
        NOT_A_TARGET.code, options.select, options.ignore
    ):
        return []
    why = role_note(target)
    message = f"{target.arch} is a {target.role} model; no EAGLE-3 target verdict applies: {why}."
    finding = Finding(
        code=NOT_A_TARGET.code,
        rule=ROLES,
        severity=NOT_A_TARGET.severity,
        message=message,
        path=ctx.index.display_path(target.ref.file),
        line=target.ref.cls.line,
    )
    return [finding]


def _run_rules(
    rules: list[Rule], target: Target, ctx: RuleContext, options: CheckOptions
) -> list[Finding]:
    findings: list[Finding] = []
    for rule in rules:
        findings += [
            f
            for f in _run_rule(rule, target, ctx, options)
            if selected(f.code, options.select, options.ignore)
        ]
    unique: dict[tuple[str, str, int, str], Finding] = {}
    for finding in findings:
        unique.setdefault((finding.code, finding.path, finding.line, finding.message), finding)
    return sorted(unique.values(), key=lambda f: (f.code, f.path, f.line))


def _run_rule(rule: Rule, target: Target, ctx: RuleContext, options: CheckOptions) -> list[Finding]:
    """One rule's findings for one target, or a single EAG903 finding saying why there are
    none: the rule raised, exited, ran out of time or yielded something that is not a finding
    of its own codes (a plugin must not be able to crash the run or forge a result)."""
    produced: list[Finding] = []
    try:
        with plugin_call(options.rule_timeout):
            for finding in rule.check(target, ctx):
                problem = finding_problem(finding, rule)
                if problem is not None:
                    raise _InvalidFinding(problem)
                produced.append(finding)
    except _InvalidFinding as exc:
        why = f"rule {rule.slug} {exc} for {target.arch}"
    except RuleTimeout as exc:
        why = f"rule {rule.slug} {exc} on {target.arch} (see rule-timeout)"
    except (Exception, SystemExit) as exc:
        why = f"internal error in rule {rule.slug} for {target.arch}: {type(exc).__name__}: {exc}"
    else:
        return produced
    return [
        Finding(
            code="EAG903",
            rule=rule.slug,
            severity=Severity.ERROR,
            message=why,
            path=ctx.index.display_path(target.ref.file),
            line=target.ref.cls.line,
        )
    ]


class _InvalidFinding(Exception):
    """A rule yielded something that is not a well-formed finding of its codes."""
