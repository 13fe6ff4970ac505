"""The rule plugin API.

A rule is a small class (in the spirit of Fixit 2): it declares the codes it can report with
their names and defaults, carries examples of model code it must accept and reject, and turns
one target into findings. Built-in rules and third-party packs register the same way, under the
`eagle3lint.rules` entry-point group, pointing at a `Rule` subclass or a module with `RULES`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib.metadata import entry_points
from typing import Any, ClassVar

from eagle3lint.contract.model import Contract
from eagle3lint.findings import Finding, Repair, Severity
from eagle3lint.index.project import ClassRef, ProjectIndex
from eagle3lint.targets import Target

ENTRY_POINT_GROUP = "eagle3lint.rules"


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
class Example:
    """Model code a rule is tested on (Fixit-style).

    `source` becomes a model file inside a fixture tree of contract era `era` (a folder under
    `fixtures/eras/`); `expect` lists the codes this rule must report for the classes the file
    defines (empty: the example is valid for this rule).
    """

    source: str
    era: str
    expect: tuple[str, ...] = ()
    model_type: str | None = None


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
    """`eagle3lint pair`'s draft (a `pairing.draft.DraftPairing`); None in `check`."""

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
    ) -> Finding:
        spec = self._codes[code]
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
        )


@cache
def load_plugins() -> tuple[tuple[type[Rule], ...], tuple[str, ...]]:
    """Rule classes of every installed plugin (built-ins first, in a stable order), and a
    message for each plugin that failed to load: one broken pack must not stop the others.
    Read once per process: config, the run cache and the engine all ask."""
    found: dict[str, type[Rule]] = {}
    broken: list[str] = []
    for point in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda p: p.name):
        try:
            loaded = point.load()
        except Exception as exc:  # a plugin is third-party code; any failure is its own
            broken.append(f"rule plugin {point.name} ({point.value}) failed to load: {exc!r}")
            continue
        classes = getattr(loaded, "RULES", None) if not isinstance(loaded, type) else [loaded]
        for cls in classes or ():
            if isinstance(cls, type) and issubclass(cls, Rule):
                cls.plugin = point.dist.name if point.dist else point.name
                found.setdefault(cls.slug, cls)
    rules = sorted(found.values(), key=lambda cls: (cls.plugin != "eagle3lint", cls.codes[0].code))
    return tuple(rules), tuple(broken)


def load_rules() -> list[type[Rule]]:
    """Rule classes of every plugin that loads."""
    return list(load_plugins()[0])


def selected(code: str, select: list[str] | None, ignore: list[str] | None) -> bool:
    """Prefix selection as ruff does it: `EAG1` selects or ignores the family."""
    if select and not any(code.startswith(p) for p in select):
        return False
    return not (ignore and any(code.startswith(p) for p in ignore))
