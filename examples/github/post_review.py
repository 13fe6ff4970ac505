"""Post eagle3lint's findings on a pull request as one review: the privileged half of the
two-job recipe (docs/ecosystem.md, "Pull request reviews").

The untrusted job runs `eagle3lint check --diff-base BASE --format sarif` on the pull request's
code (SARIF: paths relative to the repository) and uploads it with the pull request's number.
This script runs in the privileged `workflow_run` job, from the default branch (never from the
pull request), with a token that may write reviews, and treats both files as hostile data: the
shape is validated, every path must be one the pull request changed, comments go only on lines
of its diff (others are listed in the review's body), counts and lengths are capped, and
@mentions are defused so a message cannot ping anyone. Standard library only: the job installs
nothing.

    python post_review.py findings.sarif pr-number.txt

Environment: GITHUB_TOKEN, GITHUB_REPOSITORY (owner/name), GITHUB_API_URL (set by Actions).
"""

from __future__ import annotations

import json
import os
import re
import sys
import urllib.request
from pathlib import Path, PurePosixPath
from typing import Any

MAX_REPORT_BYTES = 10 * 1024 * 1024
MAX_COMMENTS = 30
MAX_MESSAGE = 1500
CODE = re.compile(r"EAG\d{3}")
HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@", re.MULTILINE)


class BadReport(ValueError):
    """The findings file is not a SARIF log of a shape this script can trust."""


def findings_of(sarif: Any) -> list[dict[str, Any]]:
    """The errors and warnings of eagle3lint's SARIF log, each once, in file order."""
    if not isinstance(sarif, dict) or not isinstance(sarif.get("runs"), list):
        raise BadReport("not a SARIF log")
    seen: dict[tuple[str, str, int, str], dict[str, Any]] = {}
    for run in sarif["runs"]:
        if not isinstance(run, dict) or not isinstance(run.get("results"), list):
            raise BadReport("a run without a list of results")
        for result in run["results"]:
            item = _finding(result)
            if item["severity"] in ("error", "warning"):
                seen.setdefault((item["code"], item["path"], item["line"], item["message"]), item)
    return sorted(seen.values(), key=lambda f: (f["path"], f["line"], f["code"]))


def _finding(result: Any) -> dict[str, Any]:
    try:
        code, severity = result["ruleId"], result.get("level", "warning")
        message = result["message"]["text"]
        where = result["locations"][0]["physicalLocation"]
        path, line = where["artifactLocation"]["uri"], where["region"]["startLine"]
    except (KeyError, IndexError, TypeError) as exc:
        raise BadReport(f"a result without a rule, a message or a location ({exc!r})") from exc
    if not (isinstance(code, str) and CODE.fullmatch(code)):
        raise BadReport(f"a rule id that is not EAGnnn: {str(code)[:20]!r}")
    if not isinstance(path, str) or not _relative(path):
        raise BadReport(f"a path that is not relative to the repository: {str(path)[:80]!r}")
    if not isinstance(line, int) or isinstance(line, bool) or line < 1:
        raise BadReport("a line that is not a positive integer")
    if severity not in ("error", "warning", "note") or not isinstance(message, str):
        raise BadReport("a result without a known level and a message")
    return {"code": code, "path": path, "line": line, "severity": severity, "message": message}


def _relative(path: str) -> bool:
    pure = PurePosixPath(path)
    return bool(path) and not pure.is_absolute() and ".." not in pure.parts and "\\" not in path


def diff_lines(files: list[dict[str, Any]]) -> dict[str, set[int]]:
    """The new-side lines each changed file shows in the pull request's diff (where a review
    comment may go), from the API's `patch` of each file."""
    lines: dict[str, set[int]] = {}
    for entry in files:
        name, patch = entry.get("filename"), entry.get("patch") or ""
        if not isinstance(name, str) or not isinstance(patch, str):
            continue
        shown = lines.setdefault(name, set())
        for hunk in HUNK.finditer(patch):
            start, count = int(hunk.group(1)), int(hunk.group(2) or 1)
            shown.update(range(start, start + count))
    return lines


def quiet(text: str) -> str:
    """`text` as inert review markdown: no @mention pings, no HTML, one capped paragraph."""
    text = text[:MAX_MESSAGE].replace("\r", " ").replace("\n", " ")
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return text.replace("@", "@\u2060")


def review(findings: list[dict[str, Any]], shown: dict[str, set[int]]) -> dict[str, Any]:
    """The review to post: a comment on each finding at a line of the diff (up to
    MAX_COMMENTS), the others listed in the body; findings in files the pull request did not
    change are left out (the check reports them only because a changed file decides them)."""
    in_diff = [f for f in findings if f["line"] in shown.get(f["path"], ())]
    listed = [f for f in findings if f["path"] in shown and f not in in_diff[:MAX_COMMENTS]]
    comments = [
        {
            "path": f["path"],
            "line": f["line"],
            "side": "RIGHT",
            "body": f"**{f['code']}** ({f['severity']}): {quiet(f['message'])}",
        }
        for f in in_diff[:MAX_COMMENTS]
    ]
    errors = sum(f["severity"] == "error" for f in findings if f["path"] in shown)
    body = [f"eagle3lint: {errors} error(s) in the files this pull request changes."]
    body += [
        f"- `{f['path']}:{f['line']}` **{f['code']}**: {quiet(f['message'])}" for f in listed[:50]
    ]
    return {"event": "COMMENT", "body": "\n".join(body), "comments": comments}


def _call(url: str, token: str, payload: dict[str, Any] | None = None) -> Any:
    request = urllib.request.Request(
        url,
        data=json.dumps(payload).encode() if payload is not None else None,
        method="POST" if payload is not None else "GET",
        headers={
            "Authorization": f"Bearer {token}",
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
        },
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read() or b"null")


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: post_review.py findings.sarif pr-number.txt", file=sys.stderr)
        return 2
    report_path, number_path = map(Path, argv)
    number = number_path.read_text(encoding="ascii").strip()
    if not re.fullmatch(r"[1-9]\d{0,9}", number):
        print("post_review: the pull request number is not a number", file=sys.stderr)
        return 2
    if report_path.stat().st_size > MAX_REPORT_BYTES:
        print("post_review: the findings file is too large", file=sys.stderr)
        return 2
    try:
        findings = findings_of(json.loads(report_path.read_bytes()))
    except (ValueError, RecursionError) as exc:
        print(f"post_review: not eagle3lint's SARIF: {exc}", file=sys.stderr)
        return 2
    api, repository = os.environ["GITHUB_API_URL"], os.environ["GITHUB_REPOSITORY"]
    token = os.environ["GITHUB_TOKEN"]
    pull = f"{api}/repos/{repository}/pulls/{number}"
    files: list[dict[str, Any]] = []
    for page in range(1, 31):  # the API lists at most 3000 files, 100 a page
        batch = _call(f"{pull}/files?per_page=100&page={page}", token)
        files += batch
        if len(batch) < 100:
            break
    shown = diff_lines(files)
    if not any(f["path"] in shown for f in findings):
        print("post_review: nothing to say on this pull request's files")
        return 0
    _call(f"{pull}/reviews", token, review(findings, shown))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
