"""`--format github`: workflow commands that GitHub Actions shows as annotations on the diff."""

from __future__ import annotations

from eagle3lint.codes import INPUTS, all_codes
from eagle3lint.findings import Severity
from eagle3lint.report.escape import printable
from eagle3lint.report.locations import distinct_findings
from eagle3lint.report.model import Report
from eagle3lint.report.text import relative

COMMAND = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def github_annotations(report: Report, *, quiet: bool = False, verbose: bool = False) -> list[str]:
    """One `::error`/`::warning`/`::notice` line per distinct finding and per input error.

    As in the text report, notices (info findings) need `verbose` and `quiet` keeps errors only.
    """
    shown = {Severity.ERROR} if quiet else {Severity.ERROR, Severity.WARNING}
    if verbose and not quiet:
        shown.add(Severity.INFO)
    lines = []
    for finding in distinct_findings(report):
        if finding.severity not in shown:
            continue
        message = printable(finding.message)
        if finding.hint:
            message += f"\nHint: {printable(finding.hint)}"
        properties = {
            "file": relative(finding.path),
            "line": str(finding.line),
            "col": str(finding.column + 1),
            "title": printable(f"{finding.code} {finding.rule}"),
        }
        lines.append(_command(COMMAND[finding.severity], properties, message))
    rules = {entry.code.code: entry.rule for entry in all_codes()}
    for error in report.errors:
        properties = {"file": relative(error.path)}
        if error.line:
            properties["line"] = str(error.line)
        properties["title"] = printable(f"{error.code} {rules.get(error.code, INPUTS)}")
        lines.append(_command("error", properties, printable(error.message)))
    return lines


def _command(name: str, properties: dict[str, str], message: str) -> str:
    listed = ",".join(f"{key}={_escape_property(value)}" for key, value in properties.items())
    return f"::{name} {listed}::{_escape_data(message)}"


def _escape_data(text: str) -> str:
    """The escaping GitHub's runner undoes in a command's message."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    """Property values also escape the separators `:` and `,`."""
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")
