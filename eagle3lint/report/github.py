"""`--format github`: workflow commands that GitHub Actions shows as annotations on the diff."""

from __future__ import annotations

from eagle3lint.codes import INPUTS, all_codes
from eagle3lint.findings import Severity
from eagle3lint.report.escape import workflow_data, workflow_lines, workflow_property
from eagle3lint.report.locations import grouped_findings
from eagle3lint.report.model import Report
from eagle3lint.report.text import relative, shown_severities

COMMAND = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}
SHOWN_PER_STEP = 10
"""GitHub shows at most this many annotations of each kind per step; the rest only in the log."""


def github_annotations(report: Report, *, quiet: bool = False, verbose: bool = False) -> list[str]:
    """One `::error`/`::warning`/`::notice` line per distinct finding and per input error.

    As in the text report, notices (info findings) need `verbose` and `quiet` keeps errors only.
    Past ten annotations of a kind, a final notice says how many there are in all.
    """
    shown = shown_severities(verbose=verbose, quiet=quiet)
    lines = []
    for group in grouped_findings(report):
        finding = group.finding
        if finding.severity not in shown:
            continue
        properties = {
            "file": relative(finding.path),
            "line": str(finding.line),
            "col": str(finding.col),
            "title": f"{finding.code} {finding.rule}",
        }
        message = workflow_lines(group.lines(report))
        lines.append(_command(COMMAND[finding.severity], properties, message))
    rules = {entry.code.code: entry.rule for entry in all_codes()}
    for error in report.errors:
        properties = {"file": relative(error.path)}
        if error.line:
            properties["line"] = str(error.line)
        properties["title"] = f"{error.code} {rules.get(error.code, INPUTS)}"
        lines.append(_command("error", properties, workflow_data(error.message)))
    kinds = {
        name: sum(line.startswith(f"::{name} ") for line in lines) for name in COMMAND.values()
    }
    if any(count > SHOWN_PER_STEP for count in kinds.values()):
        counts = ", ".join(f"{n} {name}s" for name, n in kinds.items() if n)
        lines.append(
            _command(
                "notice",
                {"title": "eagle3lint"},
                workflow_data(
                    f"eagle3lint reported {counts}; GitHub shows at most {SHOWN_PER_STEP} of "
                    "each kind on the diff. The job log lists them all (upload SARIF to code "
                    "scanning to browse them)."
                ),
            )
        )
    return lines


def _command(name: str, properties: dict[str, str], message: str) -> str:
    """`::name key=value,…::message`: property values escaped here, `message` already."""
    listed = ",".join(f"{key}={workflow_property(value)}" for key, value in properties.items())
    return f"::{name} {listed}::{message}"
