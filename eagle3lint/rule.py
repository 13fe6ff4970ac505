"""The rule plugin API.

A rule is a small class (in the spirit of Fixit 2): it declares the codes it can report with
their names and defaults, carries examples of model code it must accept and reject, and turns
one target into findings. Built-in rules and third-party packs register the same way, under the
`eagle3lint.rules` entry-point group, pointing at a `Rule` subclass or a module with `RULES`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib.metadata import EntryPoint, entry_points
from typing import TYPE_CHECKING, Any, ClassVar

from eagle3lint.findings import Finding, Repair, Severity, Unverified
from eagle3lint.sandbox import DEFAULT_RULE_TIMEOUT, RuleTimeout, plugin_call

if TYPE_CHECKING:  # what a rule is handed; importing the API must not load the check machinery
    from eagle3lint.engines.vllm.contract.model import Contract
    from eagle3lint.engines.vllm.targets import Target
    from eagle3lint.index.project import ProjectIndex
    from eagle3lint.index.refs import ClassRef

ENTRY_POINT_GROUP = "eagle3lint.rules"
API_VERSION = (1, 3)
"""The rule API's version, (major, minor): a minor release only adds to `eagle3lint.api`, a
major one may change or remove what it holds. 1.1 added `Rule.engines` and this handshake;
1.2 `Rule.report(..., runners=)` (a finding on some model runners' path only) and
`TargetEmbedding`; 1.3 `BackendCapture` and `Target.backend_capture`."""


@dataclass(frozen=True, slots=True)
class Explanation:
    """The long form of a code: `eagle3lint explain CODE` and `docs/rules/CODE.md` show it."""

    runtime: str
    """What vLLM does at run time that the code is about."""
    error: str
    """The exact error vLLM raises, or what goes wrong silently."""
    releases: str
    """The vLLM releases affected."""
    example: str
    """Code that gets the code reported."""
    fix: str
    """The same code, fixed."""
    language: str = "python"
    """The language of `example` and `fix`, for highlighting."""


@dataclass(frozen=True, slots=True)
class Code:
    """One stable code a rule reports."""

    code: str
    name: str
    summary: str
    severity: Severity
    fixable: bool = False
    explain: Explanation | None = None
    run_wide: bool = False
    """The same remark for every target (EAG502): reported once per run, not per location."""


@dataclass(frozen=True, slots=True)
class Expected:
    """One finding an invalid example must produce: its code, and optionally the line it is
    reported at (in the example's source) and a fragment of its message."""

    code: str
    line: int | None = None
    message: str = ""


@dataclass(frozen=True, slots=True)
class Example:
    """Model code a rule is tested on (Fixit-style).

    `source` becomes a model file inside a fixture tree of contract era `era` (a folder under
    `fixtures/eras/`); `expect` lists what this rule must report for the classes the file
    defines, as codes or `Expected` findings (empty: the example is valid for this rule).
    `expected_replacement` is the file as `eagle3lint fix` must leave it (Fixit's
    `Invalid(expected_replacement=...)`): an invalid example whose findings are fixable must
    have one.
    """

    source: str
    era: str
    expect: tuple[str | Expected, ...] = ()
    model_type: str | None = None
    expected_replacement: str | None = None

    @property
    def expected(self) -> tuple[Expected, ...]:
        """`expect` with every bare code as an `Expected` that pins only the code."""
        return tuple(e if isinstance(e, Expected) else Expected(e) for e in self.expect)


@dataclass
class RuleContext:
    """What a rule may consult besides the target."""

    index: ProjectIndex
    contract: Contract
    model_type: str | None = None
    hf_config: Mapping[str, Any] | None = None
    hf_config_path: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)

    hf_architectures: tuple[str, ...] = ()
    """The `architectures` of --hf-config: its facts apply to these targets only."""
    explicit_model_type: bool = False
    pairing: Any = None
    """`eagle3lint pair`'s draft (a `drafts.draft.DraftPairing`); None in `check`."""

    def path(self, ref: ClassRef) -> str:
        return self.index.display_path(ref.file)

    def describes(self, target: Target) -> bool:
        """Whether --hf-config is the config of this target (or names no architecture)."""
        return not self.hf_architectures or bool(
            {target.arch, target.ref.name} & set(self.hf_architectures)
        )

    def config_for(self, target: Target) -> Mapping[str, Any] | None:
        return self.hf_config if self.describes(target) else None

    def model_type_for(self, target: Target) -> str | None:
        if self.explicit_model_type or self.describes(target):
            return self.model_type
        return None


class Rule:
    """Base class of rule plugins."""

    slug: ClassVar[str]
    codes: ClassVar[tuple[Code, ...]]
    valid: ClassVar[tuple[Example, ...]] = ()
    invalid: ClassVar[tuple[Example, ...]] = ()
    plugin: ClassVar[str] = "eagle3lint"
    engines: ClassVar[tuple[str, ...]] = ("vllm",)
    """The engine wings (`eagle3lint.engines`) whose targets the rule judges."""
    api_version: ClassVar[tuple[int, int]] = (1, 0)
    """The `API_VERSION` the rule was written against: a rule needing a newer minor, or
    another major, is refused at load (EAG903) rather than failing on its first target."""
    option_help: ClassVar[Mapping[str, str]] = {}
    """The options `[tool.eagle3lint.rules.<slug>]` may set, with what each one does."""

    def __init__(self, options: Mapping[str, Any] | None = None) -> None:
        self.validate_options(options or {})
        self.options = dict(options or {})
        self._codes = {c.code: c for c in self.codes}

    @classmethod
    def validate_options(cls, options: Mapping[str, Any]) -> None:
        """Raise ValueError for an option the rule does not declare; rules add value checks."""
        unknown = sorted(set(options) - set(cls.option_help))
        if unknown:
            known = ", ".join(sorted(cls.option_help)) or "none"
            raise ValueError(
                f"rule {cls.slug} has no option {', '.join(unknown)} (its options: {known})"
            )

    def check(self, target: Target, ctx: RuleContext) -> Iterator[Finding]:
        """Findings for one target."""
        raise NotImplementedError

    def report(
        self,
        code: str,
        message: str,
        path: str,
        line: int,
        column: int = 0,
        *,
        hint: str = "",
        repair: Repair | None = None,
        severity: Severity | None = None,
        fix_refused: str = "",
        unverified: Unverified | None = None,
        runners: tuple[str, ...] = (),
    ) -> Finding:
        """The finding `code` at `path:line:column`. For a code `fix` repairs, `repair` is the
        edit it asks for, or, when there is none for this shape of code, `fix_refused` says
        why (the finding then has no `[*]`). `runners`: the model runners whose path it is on,
        when not every runner's (a target whose default runner is not among them is judged
        without it)."""
        spec = self._codes[code]
        if spec.fixable and repair is None and not fix_refused:
            fix_refused = "no automatic rewrite for this shape of code"
        return Finding(
            code=code,
            rule=self.slug,
            severity=severity or spec.severity,
            message=message,
            path=path,
            line=line,
            column=column,
            hint=hint,
            repair=repair,
            fix_refused="" if repair is not None else fix_refused,
            unverified=unverified,
            runners=runners,
        )


RESERVED_PREFIX = "EAG9"
"""Codes eagle3lint itself reports (input errors, internal errors, suppressions)."""
_SLUG = re.compile(r"^[a-z][a-z0-9-]*$")
_CODE = re.compile(r"^[A-Z]+[0-9]+$")


def declaration_problem(cls: object) -> str | None:
    """What is wrong with a rule class a plugin declares, or None when it can be run."""
    if not (isinstance(cls, type) and issubclass(cls, Rule)):
        return f"{cls!r} is not a Rule subclass"
    slug = getattr(cls, "slug", None)
    if not isinstance(slug, str) or not _SLUG.match(slug):
        return f"rule class {cls.__name__} has no valid slug (lower-case words joined by -)"
    codes = getattr(cls, "codes", None)
    if not isinstance(codes, tuple | list) or not codes:
        return f"rule {slug} declares no codes"
    for code in codes:
        if not isinstance(code, Code) or not isinstance(code.code, str):
            return f"rule {slug} declares {code!r}, not a Code"
        if not _CODE.match(code.code) or code.code.startswith(RESERVED_PREFIX):
            return (
                f"rule {slug} declares code {code.code!r} "
                "(expected letters then digits, such as ABC101; EAG9xx are eagle3lint's own)"
            )
        if not isinstance(code.severity, Severity):
            return f"rule {slug} gives {code.code} the severity {code.severity!r}"
        if not all(isinstance(text, str) for text in (code.name, code.summary)):
            return f"rule {slug} gives {code.code} a name or summary that is not text"
        if not all(isinstance(flag, bool) for flag in (code.fixable, code.run_wide)):
            return f"rule {slug} gives {code.code} a fixable or run_wide that is not True/False"
        problem = _explanation_problem(code.explain)
        if problem is not None:
            return f"rule {slug} gives {code.code} an explanation that {problem}"
    if len({code.code for code in codes}) != len(codes):
        return f"rule {slug} declares a code twice"
    wanted = getattr(cls, "api_version", None)
    if not (
        isinstance(wanted, tuple)
        and len(wanted) == 2
        and all(isinstance(part, int) and not isinstance(part, bool) for part in wanted)
    ):
        return f"rule {slug} gives api_version {_short(wanted)}, not (major, minor)"
    if wanted[0] != API_VERSION[0] or wanted[1] > API_VERSION[1]:
        have = ".".join(map(str, API_VERSION))
        return (
            f"rule {slug} was written for rule API {wanted[0]}.{wanted[1]}; this eagle3lint "
            f"offers {have} (upgrade eagle3lint, or the pack for API {API_VERSION[0]}.x)"
        )
    if not (
        isinstance(cls.engines, tuple | list)
        and cls.engines
        and all(isinstance(name, str) for name in cls.engines)
    ):
        return f"rule {slug} gives engines {_short(cls.engines)}, not a tuple of engine names"
    declared = {code.code for code in codes}
    for kind in ("valid", "invalid"):
        examples = getattr(cls, kind, ())
        if not isinstance(examples, tuple | list):
            return f"rule {slug} gives {kind} examples as {_short(examples)}, not a tuple"
        for i, example in enumerate(examples):
            problem = _example_problem(example, kind == "invalid", declared)
            if problem is not None:
                return f"rule {slug}: {kind} example {i} {problem}"
    if cls.check is Rule.check:
        return f"rule {slug} has no check method"
    return None


def _explanation_problem(explain: object) -> str | None:
    """What is wrong with a code's `explain`, or None: `explain` and SARIF render every field
    as text, so a malformed one must be refused at load, not crash a report."""
    if explain is None:
        return None
    if not isinstance(explain, Explanation):
        return f"is {_short(explain)}, not an Explanation"
    for name in Explanation.__dataclass_fields__:
        if not isinstance(getattr(explain, name), str):
            return f"gives {name} as {_short(getattr(explain, name))}, not text"
    return None


def _example_problem(example: object, invalid: bool, codes: set[str]) -> str | None:
    """What is wrong with one example a rule declares, or None."""
    if not isinstance(example, Example):
        return f"is {_short(example)}, not an Example"
    for name in ("source", "era"):
        if not isinstance(getattr(example, name), str) or not getattr(example, name):
            return f"has no {name}"
    if not isinstance(example.expect, tuple | list):
        return f"expects {_short(example.expect)}, not a tuple of codes"
    for expected in example.expect:
        code = expected.code if isinstance(expected, Expected) else expected
        if code not in codes:
            return f"expects {_short(code)}, which the rule does not declare"
    if invalid and not example.expect:
        return "is invalid but expects no finding"
    if not invalid and example.expect:
        return "is valid but expects findings"
    replacement = example.expected_replacement
    if replacement is not None and (not invalid or not isinstance(replacement, str)):
        return "has an expected_replacement, which only an invalid example's text can be"
    return None


def finding_problem(finding: object, rule: Rule) -> str | None:
    """What is wrong with something a rule yielded, or None for a well-formed finding of one of
    the rule's own codes."""
    if not isinstance(finding, Finding):
        return f"yielded {type(finding).__name__} {_short(finding)}, not a Finding"
    if finding.code not in rule._codes:
        return f"reported code {_short(finding.code)}, which it does not declare"
    if finding.rule != rule.slug:
        return f"reported a finding as rule {_short(finding.rule)}"
    if not isinstance(finding.severity, Severity):
        return f"reported severity {_short(finding.severity)}"
    for name in ("line", "column"):
        value = getattr(finding, name)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            return f"reported {name} {_short(value)}"
    for name in ("path", "message", "hint"):
        if not isinstance(getattr(finding, name), str):
            return f"reported a {name} that is not text: {_short(getattr(finding, name))}"
    if finding.repair is not None and not isinstance(finding.repair, Repair):
        return f"asked for the repair {_short(finding.repair)}"
    return None


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


@cache
def load_plugins() -> tuple[tuple[type[Rule], ...], tuple[str, ...]]:
    """Rule classes of every installed plugin (built-ins first, in a stable order), and a
    message for each plugin or rule that was refused: one broken pack must not stop the others,
    and a rule whose slug or code another already has is refused, never silently swapped in.
    Read once per process: config, the run cache and the engine all ask."""
    found: dict[str, type[Rule]] = {}
    owners: dict[str, str] = {}
    broken: list[str] = []
    points = entry_points(group=ENTRY_POINT_GROUP)
    for point in sorted(points, key=lambda p: (_dist(p) != "eagle3lint", p.name)):
        where = f"rule plugin {point.name} ({point.value})"
        try:
            with plugin_call(DEFAULT_RULE_TIMEOUT):
                loaded = point.load()
            declared = [loaded] if isinstance(loaded, type) else list(loaded.RULES)
        except (Exception, SystemExit, RuleTimeout) as exc:  # third-party code
            broken.append(f"{where} failed to load: {exc!r}")
            continue
        for cls in declared:
            problem = declaration_problem(cls)
            if problem is None:
                clash = [c.code for c in cls.codes if c.code in owners]
                if cls.slug in found:
                    problem = f"rule slug {cls.slug} is already taken by {found[cls.slug].plugin}"
                elif clash:
                    problem = f"code {clash[0]} is already reported by rule {owners[clash[0]]}"
            if problem is not None:
                broken.append(f"{where}: {problem}; not loaded")
                continue
            cls.plugin = _dist(point)
            found[cls.slug] = cls
            owners.update((code.code, cls.slug) for code in cls.codes)
    rules = sorted(found.values(), key=lambda cls: (cls.plugin != "eagle3lint", cls.codes[0].code))
    return tuple(rules), tuple(broken)


def _dist(point: EntryPoint) -> str:
    return point.dist.name if point.dist else point.name


def load_rules() -> list[type[Rule]]:
    """Rule classes of every plugin that loads."""
    return list(load_plugins()[0])


def selected(code: str, select: list[str] | None, ignore: list[str] | None) -> bool:
    """Prefix selection as ruff does it: `EAG1` selects or ignores the family."""
    if select and not any(code.startswith(p) for p in select):
        return False
    return not (ignore and any(code.startswith(p) for p in ignore))
