"""What of a target the report shows: not the findings a baseline holds (but its entries that
no longer match, EAG906), nothing in an excluded file, and with file arguments the input errors
that matter to them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from eagle3lint.baseline import Baseline, Scope, stale_finding
from eagle3lint.engines import Target
from eagle3lint.findings import Finding, InputError
from eagle3lint.index.project import ProjectIndex
from eagle3lint.report.locations import location_key
from eagle3lint.sources.walk import Excluder


@dataclass
class Shown:
    """The report's filters of one run; `baselined` counts the locations a baseline hid."""

    index: ProjectIndex
    baseline: Baseline | None
    excluder: Excluder
    report_paths: set[str] | None
    """With file arguments, those files (resolved); None otherwise."""
    scope: Scope | None = None
    """The baseline entries this run judges (None: no entry is called stale)."""
    baselined: set[tuple[str, ...]] = field(default_factory=set)

    def findings(self, target: Target, findings: list[Finding]) -> list[Finding] | None:
        """The findings of `target` the report shows; None when it does not show the target."""
        stale: list[Finding] = []
        if self.baseline is not None:
            accepted = [f for f in findings if self.baseline.holds(target.arch, f)]
            self.baselined.update(location_key(f) for f in accepted)
            findings = [f for f in findings if f not in accepted]
            stale = self._stale(target, accepted)
        if self.excluder:
            # Excluded files are not checked in any path form: not their targets, not the
            # findings located in them.
            if self.excluder.excludes(self.index.display_path(target.ref.file)):
                return None
            findings = [f for f in findings if not self.excluder.excludes(f.path)]
        # With files given, every target kept read one of them (`checkrun.dependencies`): its
        # findings are all shown, wherever located, as the change may have caused any of them.
        return findings + stale

    def _stale(self, target: Target, accepted: list[Finding]) -> list[Finding]:
        """EAG906 for each entry of `target` in scope that none of its findings matched."""
        baseline, scope = self.baseline, self.scope
        if baseline is None or scope is None:
            return []
        matched = {baseline.key(target.arch, f) for f in accepted}
        shown = _relative(baseline.path)
        return [
            stale_finding(baseline, entry, shown)
            for entry in baseline.by_target.get(target.arch, ())
            if entry.key not in matched and scope.covers(baseline, entry)
        ]

    def errors(self, targets: list[Target]) -> list[InputError]:
        """The index's input errors the report shows, given the targets it shows, by file: the
        order the files were read in depends on what the run could take from the cache."""
        errors = sorted(self.index.errors, key=lambda error: error.path)
        if self.report_paths is None:
            return errors
        return _errors_deciding(self.index, self.report_paths, targets, errors)


def _relative(path: Path) -> str:
    """A path as the report shows files: relative to the working directory when inside it."""
    resolved = path.resolve()
    cwd = Path.cwd()
    return str(resolved.relative_to(cwd)) if resolved.is_relative_to(cwd) else str(path)


def _resolved(path: str) -> str:
    return str(Path(path).resolve())


def _errors_deciding(
    index: ProjectIndex, focus: set[str], targets: list[Target], errors: list[InputError]
) -> list[InputError]:
    """With file arguments, the input errors that matter to them: in those files, or in a file a
    reported target's verdict depends on. A parse error elsewhere in the tree is not this
    commit's error."""
    modules = {m for target in targets for m in target.depends_on()}
    needed = set(focus)
    for module in modules:
        source = index.source_file(module)
        if source is not None:
            needed.add(_resolved(str(source.path)))
    return [e for e in errors if _resolved(e.path) in needed]
