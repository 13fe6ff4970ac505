"""The terminal report, in ruff's conventions.

Default: one line per finding, `path:line:col: CODE [*] message`, a finding shared by several
architectures shown once ("affects 26 architectures: …"), then a summary by code and how many
findings `eagle3lint fix` can repair, and a "Next:" block: the commands, built from the one that
ran, that fix, explain or decide what was found. `--output-format full` adds each finding's
rule, hint and every architecture it affects; `--statistics` prints only the counts by code.
"""

from __future__ import annotations

import os
import shlex
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.text import Text

from eagle3lint.findings import Severity
from eagle3lint.report.escape import printable, rich_text
from eagle3lint.report.invocation import Invocation, relative
from eagle3lint.report.locations import Located, grouped_findings
from eagle3lint.report.model import Report, TargetResult

STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}
AFFECTS_SHOWN = 3
"""Architectures named on a one-line finding before "and N more"."""


@dataclass(frozen=True)
class TextOptions:
    full: bool = False
    verbose: bool = False
    quiet: bool = False
    statistics: bool = False
    invocation: Invocation | None = None
    """The command that ran: the report ends with the commands to run next. None (`pair`, or
    a report rendered outside the CLI): it does not."""


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def shown_severities(*, verbose: bool, quiet: bool) -> set[Severity]:
    """Errors with --quiet; errors and warnings by default; info findings too with --verbose."""
    if quiet:
        return {Severity.ERROR}
    return {Severity.ERROR, Severity.WARNING} | ({Severity.INFO} if verbose else set())


def render_text(report: Report, console: Console, options: TextOptions) -> None:
    from eagle3lint.codes import NOT_A_TARGET

    groups = grouped_findings(report)
    wanted = shown_severities(verbose=options.verbose, quiet=options.quiet)
    # The note on a draft or pooling model asked for by name is the answer to the question.
    shown = [
        g
        for g in groups
        if g.finding.severity in wanted
        or (g.finding.code == NOT_A_TARGET.code and not options.quiet)
    ]
    if options.statistics:
        _statistics(shown, console)
        return
    if options.full and not options.quiet:
        contract = report.contract
        console.print(
            Text.assemble(
                ("eagle3lint ", "bold"),
                printable(
                    f"{report.engine_label} {contract.version or '?'} ({contract.source}) · "
                    f"{contract.describe()}"
                ),
            )
        )
        if contract.root:
            console.print(Text(f"root: {printable(contract.root)}", style="dim"))
        console.print()
    place = _Places(report, options.invocation)
    for group in shown:
        _finding(
            group,
            group.note(report, None if options.full else AFFECTS_SHOWN),
            console,
            options.full,
            place,
        )
    for error in report.errors:
        where = printable(place(error.path)) + (f":{error.line}" if error.line else "")
        console.print(
            Text.assemble(
                f"{where}: ", (printable(error.code), "bold red"), f" {printable(error.message)}"
            )
        )
    if place.release_folder and (shown or report.errors):
        home = str(Path.home())
        folder = place.release_folder
        folder = "~" + folder[len(home) :] if folder.startswith(home + os.sep) else folder
        name = Path(report.contract.root or "").name
        console.print(Text(f"{name}/ is the cached release in {printable(folder)}", style="dim"))
    if options.quiet:
        return
    if _on_files(options) and shown and not (options.verbose or options.full):
        _count_line(shown, options.invocation, console)
        return
    _summary(report, groups, shown, console)
    if options.invocation is not None:
        _next_steps(report, shown, options.invocation, console)


def _on_files(options: TextOptions) -> bool:
    """Whether the run judged files given by name (the pre-commit hook, `--diff-base`), where
    a blocked commit wants what ruff prints: the findings, then one count line."""
    paths = options.invocation.check.paths if options.invocation else ()
    return bool(paths) and all(os.path.isfile(p) for p in paths)


def _count_line(shown: list[Located], invocation: Invocation | None, console: Console) -> None:
    severities = Counter(g.finding.severity for g in shown)
    parts = [
        plural(n, name)
        for severity, name in ((Severity.ERROR, "error"), (Severity.WARNING, "warning"))
        if (n := severities[severity])
    ]
    fixable = sum(g.finding.fixable for g in shown)
    fix = ""
    if fixable and invocation is not None:
        fix = f"; [*] {fixable} fixable with `{_command('fix', *invocation.fix.words())}`"
    console.print(
        Text.assemble(
            ("Found " + ", ".join(parts or [plural(len(shown), "finding")]), "bold"),
            f"{fix} (-v for the summary and next steps).",
        )
    )


class _Places:
    """How the text report names a file: relative to the working directory when under it, and
    a cached release's files (`--vllm X` with no PATH) from its package folder (`vllm/...`),
    as the release lays them out, where the whole cache path made every line a wall."""

    def __init__(self, report: Report, invocation: Invocation | None) -> None:
        root = report.contract.root
        cached = invocation is not None and invocation.release is not None and root
        self.release_folder = str(Path(root).parent) if cached else None

    def __call__(self, path: str) -> str:
        folder = self.release_folder
        if folder and path.startswith(folder + os.sep):
            return path[len(folder) + 1 :]
        return relative(path)

    def within(self, message: str) -> str:
        """`message` with the release's files (a proposer line it quotes) named as above."""
        folder = self.release_folder
        return message.replace(folder + os.sep, "") if folder else message


def _finding(group: Located, affects: str, console: Console, full: bool, place: _Places) -> None:
    finding = group.finding
    severity = "" if finding.severity is Severity.ERROR else f" [{finding.severity}]"
    console.print(
        Text.assemble(
            (f"{printable(place(finding.path))}:{finding.line}:{finding.col}:", "bold"),
            " ",
            (printable(finding.code), STYLE[finding.severity]),
            (" [*]" if finding.fixable else "", "cyan"),
            severity,
            f" {printable(place.within(finding.message))}",
            (f" ({printable(affects)})" if affects and not full else "", "dim"),
        )
    )
    if not full:
        return
    console.print(Text(f"  rule: {printable(finding.rule)}", style="dim"))
    if affects:
        console.print(Text(f"  {printable(affects)}", style="dim"))
    if finding.hint:
        console.print(Text(f"  hint: {printable(finding.hint)}", style="dim"))
    if finding.fix_refused:
        console.print(Text(f"  not fixable: {printable(finding.fix_refused)}", style="dim"))
    console.print()


def _names() -> dict[str, str]:
    from eagle3lint.codes import all_codes

    return {entry.code.code: entry.code.name for entry in all_codes()}


def _by_code(shown: list[Located]) -> list[tuple[str, int, bool]]:
    """(code, findings, any fixable), most frequent first."""
    counts = Counter(g.finding.code for g in shown)
    fixable = {g.finding.code for g in shown if g.finding.fixable}
    return [
        (code, n, code in fixable)
        for code, n in sorted(counts.items(), key=lambda c: (-c[1], c[0]))
    ]


def _unverified(report: Report, count: int, console: Console) -> None:
    """Name the targets that are neither ready nor blocked (the first few) and the one thing
    to pass that decides them, and whether that fails the run (they were asked about)."""
    groups: dict[str, list[str]] = {}
    for target in report.targets:
        if target.is_unverified and (option := _decider(target)):
            groups.setdefault(option, []).append(target.arch)
    required = len(report.unverified_required())
    decide = "; ".join(
        f"pass {option} {DECIDING[option][0] if option in DECIDING else ''}".rstrip()
        + f" for {_first_few(archs)}"
        for option, archs in groups.items()
    )
    console.print(
        Text(
            f"{plural(count, 'target')} with no error but unverified (what vLLM reads at run "
            f"time was not read here): {decide}"
            + (f" ({required} asked about: exit code 1)." if required else "."),
            style="yellow" if required else "dim",
        )
    )


def _decider(target: TargetResult) -> str | None:
    """The one option that decides `target`: the first its unverified findings all accept,
    else its first finding's first."""
    options = [f.unverified.decide for f in target.unverified if f.unverified]
    if not options:
        return None
    common = [o for o in options[0] if all(o in each for each in options)]
    return (common or list(options[0]))[0]


def _first_few(names: list[str], shown: int = 3) -> str:
    """`A, B, C and 4 more`, printable (the names are the analysed tree's)."""
    more = len(names) - shown
    return ", ".join(printable(name) for name in names[:shown]) + (
        f" and {more} more" if more > 0 else ""
    )


def _statistics(shown: list[Located], console: Console) -> None:
    names = _names()
    for code, count, fixable in _by_code(shown):
        mark = "[*]" if fixable else "   "
        console.print(rich_text(f"{count:>5}  {code}  {mark} {names.get(code, '')}"))


def _scope(report: Report, console: Console) -> None:
    """What the verdicts are about: the model runner they follow (when the engine has several)
    and the speculative methods whose target contract they cover."""
    runners = Counter(t.runner for t in report.targets if t.runner)
    # An engine whose runner depends on the platform says which one, and why that one.
    setup = getattr(report.contract, "setup", None)
    parts = []
    if runners:
        shown = ", ".join(f"{name.upper()} for {n}" for name, n in sorted(runners.items()))
        where = f" on {setup.platform}" if setup is not None else ""
        parts.append(
            f"Verdicts follow the model runner {report.engine_label} picks by default{where} "
            f"({shown})"
        )
        differ = sum(t.ready_by_runner is not None for t in report.targets)
        if differ:
            parts[-1] += (
                f"; {plural(differ, 'verdict')} {'differs' if differ == 1 else 'differ'} under "
                "another runner "
                "(`ready_by_runner` in the JSON report)"
            )
    if runners and setup is not None:
        parts.append(f"platform {setup.platform}: {setup.why}; --platform chooses another")
    methods = getattr(report.contract, "methods", ())
    if methods:
        parts.append(f"the target contract gates {', '.join(methods)}")
    if parts:
        text = "; ".join(parts)
        console.print(Text(text[0].upper() + text[1:] + ".", style="dim"))


def _summary(report: Report, groups: list[Located], shown: list[Located], console: Console) -> None:
    contract = report.contract
    where = printable(f"{report.engine_label} {contract.version or '?'} ({contract.source})")
    targets = report.targets
    ready = report.count_ready(True)
    verdicts = f"{plural(len(targets), 'architecture')} of {where}, {ready} EAGLE-3 ready"
    unverified = report.count_unverified()
    if unverified:
        verdicts += f", {unverified} unverified"
    others = [
        plural(n, noun)
        for n, noun in (
            (report.count_role("draft"), "draft"),
            (report.count_role("pooling"), "pooling model"),
        )
        if n
    ]
    if others:
        verdicts += f" ({' and '.join(others)}: no target verdict)"
    severities = Counter(g.finding.severity for g in shown)
    if not shown and report.errors:
        # Not "all checks passed": some input was not analysed (said below, exit code 2).
        console.print(Text.assemble(("No findings ", "bold"), f"({verdicts})."))
    elif not shown:
        console.print(Text.assemble(("All checks passed! ", "bold green"), f"({verdicts})"))
    else:
        parts = [
            plural(n, name)
            for severity, name in ((Severity.ERROR, "error"), (Severity.WARNING, "warning"))
            if (n := severities[severity])
        ]
        if severities[Severity.INFO]:
            parts.append(f"{severities[Severity.INFO]} info")
        console.print()
        console.print(Text.assemble(("Found " + ", ".join(parts), "bold"), f" ({verdicts}):"))
        names = _names()
        for code, count, fixable in _by_code(shown):
            mark = "[*]" if fixable else "   "
            console.print(rich_text(f"  {count:>4}  {code}  {mark} {names.get(code, '')}"))
        fixable_count = sum(g.finding.fixable for g in shown)
        if fixable_count:
            console.print(
                Text.assemble(("[*]", "cyan"), f" {fixable_count} fixable with `eagle3lint fix`.")
            )
        refused = sum(bool(g.finding.fix_refused) for g in shown)
        if refused:
            console.print(
                Text(
                    f"{refused} other(s) cannot be repaired automatically here "
                    "(`--output-format full` says why).",
                    style="dim",
                )
            )
    _scope(report, console)
    hidden = sum(g.finding.severity is Severity.INFO for g in groups) - severities[Severity.INFO]
    unclaimed = sum(not t.claims_eagle3 and not t.required for t in targets)
    if unclaimed:
        console.print(
            Text(
                f"{plural(unclaimed, 'architecture')} with no claim of EAGLE-3 support, not asked "
                "about: not errors (`--require ARCH` or `--arch ARCH` reports their blockers).",
                style="dim",
            )
        )
    if unverified:
        _unverified(report, unverified, console)
    if hidden:
        console.print(
            Text(f"{hidden} info findings not shown (--verbose shows them).", style="dim")
        )
    if report.baselined:
        console.print(
            Text(f"{plural(report.baselined, 'finding')} in the baseline not shown.", style="dim")
        )
    if report.errors:
        console.print(
            Text(f"{len(report.errors)} input(s) could not be analysed (exit code 2).", style="red")
        )


PATCH = "eagle3lint.patch"
"""Where the "Next:" block of a cached release's report has `fix --diff` write its patch."""
DECIDING = {
    "--hf-config": ("config.json", "your checkpoint's config.json"),
    "--model-type": ("TYPE", "your checkpoint's text model_type"),
}
"""The options that decide an unverified target (`Unverified.decide`), the placeholder the
"Next:" block gives each, and what it stands for; the first that applies is suggested."""
COMMENT_COLUMN = 48
"""The widest command whose comment the "Next:" block aligns with the others'."""


def _next_steps(
    report: Report, shown: list[Located], invocation: Invocation, console: Console
) -> None:
    """The commands that repair, explain or decide what the report found, built from the
    command that ran: nothing after a run with nothing to act on."""
    steps: list[tuple[str, str]] = []
    if any(g.finding.fixable for g in shown):
        preview = _command("fix", *invocation.fix.words("--diff"))
        if invocation.release is None:
            steps.append((preview, "preview the repairs"))
            steps.append((_command("fix", *invocation.fix.words()), "apply them, then check again"))
        else:
            # fix refuses to edit the cached release; its patch applies to a checkout of it.
            steps.append((f"{preview} > {PATCH}", "the repairs, as a patch"))
            steps.append(
                (
                    f"git apply {PATCH}",
                    f"in a checkout of {report.engine_label} {invocation.release} (the cached "
                    "release is not yours to edit)",
                )
            )
    # An info finding alone (--verbose, or the note on a draft asked about) needs no action.
    for severity in (Severity.ERROR, Severity.WARNING):
        by_code = _by_code([g for g in shown if g.finding.severity is severity])
        if by_code:
            steps.append(
                (_command("explain", by_code[0][0]), f"the most frequent {severity}, and its fix")
            )
            break
    # The options that decide (not what else may: "a vLLM tree with transformers beside it"),
    # less those given already, which were not enough.
    decide = {
        option
        for t in report.targets
        if t.is_unverified
        for f in t.unverified
        if f.unverified
        for option in f.unverified.decide
        if option in DECIDING and option not in invocation.check.options
    }
    if decide and (steps or report.unverified_required()):
        # A placeholder the user replaces: what decides is their checkpoint.
        option, *others = [o for o in DECIDING if o in decide]
        value, source = DECIDING[option]
        source += "".join(f" (or {o} {DECIDING[o][0]})" for o in others)
        steps.append(
            (
                _command("check", *invocation.check.words(option, value)),
                f"{source} decides what is unverified",
            )
        )
    if not steps:
        return
    console.print(Text("Next:", style="bold"))
    width = max((len(c) for c, _ in steps if len(c) <= COMMENT_COLUMN), default=0)
    for command, why in steps:
        # Never wrapped (a terminal folds it): a command cut in two does not paste.
        console.print(
            Text.assemble("  ", command.ljust(width), ("  # " + printable(why), "dim")),
            soft_wrap=True,
        )


def _command(name: str, *arguments: str) -> str:
    """`eagle3lint NAME ARGUMENTS`, each quoted for a POSIX shell, printable on one line."""
    return printable(shlex.join(["eagle3lint", name, *arguments]))
