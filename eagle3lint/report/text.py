"""The terminal report: header, blocked targets with their findings, a summary table."""

from __future__ import annotations

import os

from rich.console import Console
from rich.table import Table
from rich.text import Text

from eagle3lint.findings import Severity
from eagle3lint.report.escape import printable
from eagle3lint.report.model import Report

STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}


def relative(path: str) -> str:
    """Paths under the working directory are shown relative to it, others in full; control
    characters escaped."""
    cwd = os.getcwd()
    return printable(os.path.relpath(path, cwd) if path.startswith(cwd + os.sep) else path)


def render_text(
    report: Report, console: Console, *, verbose: bool = False, quiet: bool = False
) -> None:
    contract = report.contract
    if not quiet:
        console.print(
            Text.assemble(
                ("eagle3lint ", "bold"),
                printable(
                    f"vLLM {contract.version or '?'} ({contract.source}) · {contract.describe()}"
                ),
            )
        )
        if contract.root:
            console.print(Text(f"root: {printable(contract.root)}", style="dim"))
        console.print()
    shown = {Severity.ERROR, Severity.WARNING} | ({Severity.INFO} if verbose else set())
    for target in report.targets:
        findings = [f for f in target.findings if f.severity in shown]
        if quiet:
            findings = [f for f in findings if f.severity is Severity.ERROR]
        if not findings and (target.eagle3_ready or quiet):
            continue
        verdict = (
            Text("ready", style="green")
            if target.eagle3_ready
            else Text("blocked", style="bold red")
        )
        variant = f" [{printable(target.variant)}]" if target.variant else ""
        console.print(
            Text.assemble(
                (printable(target.arch), "bold"),
                f" ({printable(target.cls)}{variant}) ",
                verdict,
                f"  {relative(target.path)}:{target.line}",
            )
        )
        for finding in findings:
            fix = " [fixable]" if finding.fixable else ""
            console.print(
                Text.assemble(
                    "  ",
                    (f"{finding.code}", STYLE[finding.severity]),
                    f" {printable(finding.rule)}{fix}  ",
                    (f"{relative(finding.path)}:{finding.line}:{finding.column}", "dim"),
                )
            )
            console.print(Text(f"    {printable(finding.message)}"))
            if finding.hint and not quiet:
                console.print(Text(f"    hint: {printable(finding.hint)}", style="dim"))
        console.print()
    for error in report.errors:
        where = f"{relative(error.path)}" + (f":{error.line}" if error.line else "")
        console.print(
            Text.assemble(
                (printable(error.code), "bold red"), f" {where}: {printable(error.message)}"
            )
        )
    if quiet:
        return
    table = Table(show_header=True, header_style="bold")
    for column in ("archs", "ready", "blocked", "implementing SupportsEagle3", "errors"):
        table.add_column(column, justify="right")
    table.add_row(
        str(len(report.targets)),
        str(sum(t.eagle3_ready for t in report.targets)),
        str(sum(not t.eagle3_ready for t in report.targets)),
        str(sum(t.implements_eagle3 for t in report.targets)),
        str(len(report.errors)),
    )
    console.print(table)
