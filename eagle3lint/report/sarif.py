"""`--format sarif`: a SARIF 2.1.0 log, as GitHub code scanning and other viewers read it."""

from __future__ import annotations

import hashlib
from pathlib import Path
from urllib.parse import quote

from eagle3lint import __version__
from eagle3lint.codes import all_codes
from eagle3lint.explain import DOCS_URL, explanation_markdown
from eagle3lint.findings import Severity
from eagle3lint.report.escape import sarif_text
from eagle3lint.report.fingerprint import VERSION, fingerprint
from eagle3lint.report.locations import grouped_findings, run_wide_codes
from eagle3lint.report.model import Report

SCHEMA = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
INFORMATION_URI = "https://github.com/eagle3lint/eagle3lint"
SRCROOT = "%SRCROOT%"
"""The base of relative URIs: the working directory, as code scanning expects."""

LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def to_sarif(report: Report, *, errors_only: bool = False) -> dict[str, object]:
    """The whole log: one run with every known rule, each finding once (with `errors_only`,
    `--quiet`, error findings alone), and input errors. Notes are kept otherwise: SARIF
    viewers filter by level themselves."""
    entries = all_codes()
    index = {entry.code.code: i for i, entry in enumerate(entries)}
    rules = [
        {
            "id": entry.code.code,
            "name": entry.code.name,
            "shortDescription": {"text": entry.code.summary},
            "help": {"text": entry.code.summary, "markdown": explanation_markdown(entry)},
            "helpUri": f"{DOCS_URL}/{entry.code.code}.md",
            "defaultConfiguration": {"level": LEVEL[entry.code.severity]},
            "properties": {
                "rule": entry.rule,
                "plugin": entry.plugin,
                "fixable": entry.code.fixable,
            },
        }
        for entry in entries
    ]
    results = []
    notifications = []
    for group in grouped_findings(report):
        finding = group.finding
        if errors_only and finding.severity is not Severity.ERROR:
            continue
        if finding.code in run_wide_codes():
            # The same remark for every target: once, about the run, not about a location.
            notifications.append(
                {
                    "descriptor": {"id": finding.code, "index": index[finding.code]},
                    "level": LEVEL[finding.severity],
                    "message": {"text": sarif_text(finding.message)},
                }
            )
            continue
        location = _location(finding.path, finding.line, finding.col)
        text = "\n".join(map(sarif_text, group.lines(report)))
        result = _result(finding.code, index, LEVEL[finding.severity], text, location)
        result["partialFingerprints"] = {VERSION: fingerprint(finding)}
        result["properties"] = {"fixable": finding.fixable}
        if finding.fix_refused:
            result["properties"] = {"fixable": False, "fixRefused": sarif_text(finding.fix_refused)}
        results.append(result)
    for error in report.errors:
        result = _result(
            error.code, index, "error", sarif_text(error.message), _location(error.path, error.line)
        )
        digest = hashlib.blake2b(
            f"{error.code}\0{error.path}\0{error.message}".encode(), digest_size=16
        )
        result["partialFingerprints"] = {VERSION: digest.hexdigest()}
        results.append(result)
    invocation: dict[str, object] = {"executionSuccessful": not report.errors}
    if notifications:
        invocation["toolExecutionNotifications"] = notifications
    cwd = Path.cwd()
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "eagle3lint",
                        "version": __version__,
                        "informationUri": INFORMATION_URI,
                        "rules": rules,
                    }
                },
                "originalUriBaseIds": {SRCROOT: {"uri": cwd.as_uri().rstrip("/") + "/"}},
                "invocations": [invocation],
                "results": results,
            }
        ],
    }


def _result(
    code: str, index: dict[str, int], level: str, text: str, location: dict[str, object]
) -> dict[str, object]:
    result: dict[str, object] = {
        "ruleId": code,
        "level": level,
        "message": {"text": text},
        "locations": [location],
    }
    if code in index:
        result["ruleIndex"] = index[code]
    return result


def _location(path: str, line: int | None, column: int = 1) -> dict[str, object]:
    """A physical location: relative to the working directory when under it (1-based line and
    column)."""
    absolute = Path(path).absolute()
    cwd = Path.cwd()
    if absolute.is_relative_to(cwd):
        artifact = {"uri": quote(absolute.relative_to(cwd).as_posix()), "uriBaseId": SRCROOT}
    else:
        artifact = {"uri": absolute.as_uri()}
    physical: dict[str, object] = {"artifactLocation": artifact}
    if line:
        physical["region"] = {"startLine": line, "startColumn": column}
    return {"physicalLocation": physical}
