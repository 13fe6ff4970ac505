"""Post eagle3lint's findings on a pull request as one review: the privileged half of the
two-job recipe (docs/ecosystem.md, "Pull request reviews").

The untrusted job runs `eagle3lint check --diff-base BASE --format sarif` on the pull request's
code and uploads the SARIF (paths relative to the repository) as an artifact. This script runs
in the privileged `workflow_run` job, from the default branch (never from the pull request),
with a token that may write reviews. It trusts what GitHub says about the run, and takes the
artifact as hostile text:

- Which pull request: the one open pull request of this repository whose head is the commit
  the findings are about (the run's head sha), found from the `workflow_run` event (its
  `pull_requests`, empty for a fork's; else the open pull requests of its head branch) and
  confirmed by the API. Never from the artifact; anything but exactly one is a named error.
- The findings file: a regular file of at most MAX_REPORT_BYTES, ASCII (eagle3lint writes ASCII
  JSON, so a byte that is not came from tampering), of the shape eagle3lint writes; every text
  read from it is ASCII once decoded too, and every path is one the pull request changed.
- What is posted: every text from the artifact goes through `inert` (Markdown that renders as
  the text itself, on one line: no link, image, code span, HTML, @mention or issue reference);
  comments go only on lines of the diff (the rest is listed in the review's body), and counts
  and lengths are capped.

A refusal is one line on stderr and exit 2, with nothing posted. Standard library only: the
job installs nothing.

    python post_review.py findings.sarif

Environment: GITHUB_TOKEN, GITHUB_REPOSITORY, GITHUB_API_URL (set by Actions), and the event's
values (eagle3lint-review.yml): HEAD_SHA (workflow_run.head_sha), PR_NUMBERS (the numbers of
workflow_run.pull_requests, space-separated, maybe none), HEAD_OWNER and HEAD_BRANCH
(workflow_run.head_repository.owner.login and workflow_run.head_branch).
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote, unquote, urlsplit

MAX_REPORT_BYTES = 4 * 1024 * 1024
MAX_COMMENTS = 30
MAX_LISTED = 50
MAX_MESSAGE = 1000
"""Characters of Markdown for one message (or code, or level), escapes included."""
MAX_PATH = 300
MAX_BODY = 60_000
"""GitHub refuses a review body over 65,536 characters; the listed findings stop short of it."""
MAX_CANDIDATES = 10
CODE = re.compile(r"EAG[0-9]{3}")
HUNK = re.compile(r"^@@ -[0-9]+(?:,[0-9]+)? \+([0-9]+)(?:,([0-9]+))? @@", re.MULTILINE)
NUMBER = re.compile(r"[1-9][0-9]{0,9}")
SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
LOGIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,38}")
REPOSITORY = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
ZERO_WIDTH = "&#8203;"
"""A zero-width space, as an entity so that the payload stays ASCII. GitHub looks for
@mentions, issue references and bare URLs in the rendered text, where entities and backslash
escapes are already undone (`&#64;team` alone would still read `@team` there): a character of
no width after the `@` keeps the rendered text from being one (Dependabot does the same)."""
_ENTITY = {"&": "&amp;", "<": "&lt;", ">": "&gt;", ":": "&#58;", "@": "&#64;" + ZERO_WIDTH}
_BACKSLASHED = frozenset("\\`*_{}[]()#+-.!|~$")
"""Markdown's punctuation (`$`: GitHub's math), backslash-escaped: no emphasis, code span, link,
image, table cell, heading, list or strikethrough can start at one."""


class Refused(Exception):
    """A named reason to post nothing: one line on stderr, exit 2."""


class BadReport(Refused, ValueError):
    """The findings file is not a SARIF log of a shape this script can trust."""


class NotAscii(BadReport):
    """A text of the findings file is not ASCII. Its bytes never are (eagle3lint writes ASCII
    JSON: one that is not came from tampering), and the review takes ASCII text only: a path or
    a message that decodes to more (a name in another script, a bidi override, a zero-width
    character) is refused, not rendered."""


class NoPullRequest(Refused):
    """Not exactly one open pull request of this repository has the run's head commit."""


class BadEnvironment(Refused):
    """A variable the workflow sets is missing or not of its shape."""


class ApiError(Refused):
    """GitHub's API refused a request (`status`: its HTTP status) or could not be reached."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def read_report(path: Path) -> bytes:
    """The bytes of the findings file, a regular file (not a link, a FIFO or a device, which
    could make the read hang or never end) of at most MAX_REPORT_BYTES."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        why = (
            "is a symbolic link"
            if exc.errno == errno.ELOOP
            else f"cannot be opened: {exc.strerror}"
        )
        raise BadReport(f"{path} {why}") from exc
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise BadReport(f"{path} is not a regular file")
        chunks: list[bytes] = []
        size = 0
        # Read up to one byte past the limit, whatever fstat said: the file may be growing.
        while size <= MAX_REPORT_BYTES and (chunk := os.read(fd, MAX_REPORT_BYTES + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise BadReport(f"cannot read {path}: {exc.strerror}") from exc
    finally:
        os.close(fd)
    if size > MAX_REPORT_BYTES:
        raise BadReport(f"{path} is over the {MAX_REPORT_BYTES // 2**20} MiB limit")
    return b"".join(chunks)


def load_report(data: bytes) -> Any:
    """The JSON document of the findings file, which must be ASCII bytes."""
    if not data.isascii():
        at = next(i for i, byte in enumerate(data) if byte > 0x7F)
        field = _first_non_ascii(data)
        where = f"{field}: " if field else ""
        raise NotAscii(
            f"{where}not ASCII (byte 0x{data[at]:02x} at offset {at}); eagle3lint writes ASCII"
            " JSON, so the artifact was altered"
        )
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise BadReport(f"not JSON: {exc}") from exc


def _first_non_ascii(data: bytes) -> str | None:
    """The JSON path of the first string (key or value) holding a character that is not ASCII,
    to name it; None if the bytes do not parse."""
    try:
        document = json.loads(data.decode("utf-8", errors="replace"))
    except (ValueError, RecursionError):
        return None
    # (where, value, whether value is a key), popped in the document's order.
    stack: list[tuple[str, Any, bool]] = [("", document, False)]
    while stack:
        where, value, is_key = stack.pop()
        if isinstance(value, str) and not value.isascii():
            return f"a key of {where or 'the document'}" if is_key else where or "the document"
        if isinstance(value, dict):
            for key in reversed(list(value)):
                stack.append((f"{where}.{key}" if where else key, value[key], False))
                stack.append((where, key, True))
        elif isinstance(value, list):
            stack.extend(
                (f"{where}[{i}]", item, False) for i, item in reversed(list(enumerate(value)))
            )
    return None


def findings_of(sarif: Any) -> list[dict[str, Any]]:
    """The errors and warnings of eagle3lint's SARIF log, each once, in file order."""
    if not isinstance(sarif, dict) or not isinstance(sarif.get("runs"), list):
        raise BadReport("not a SARIF log")
    seen: dict[tuple[str, str, int, str], dict[str, Any]] = {}
    for i, run in enumerate(sarif["runs"]):
        if not isinstance(run, dict) or not isinstance(run.get("results"), list):
            raise BadReport(f"runs[{i}] has no list of results")
        for j, result in enumerate(run["results"]):
            item = _finding(result, f"runs[{i}].results[{j}]")
            if item["severity"] in ("error", "warning"):
                seen.setdefault((item["code"], item["path"], item["line"], item["message"]), item)
    return sorted(seen.values(), key=lambda f: (f["path"], f["line"], f["code"]))


def _finding(result: Any, where: str) -> dict[str, Any]:
    try:
        code, severity = result["ruleId"], result.get("level", "warning")
        message = result["message"]["text"]
        location = result["locations"][0]["physicalLocation"]
        uri, line = location["artifactLocation"]["uri"], location["region"]["startLine"]
    except (KeyError, IndexError, TypeError, AttributeError) as exc:
        raise BadReport(
            f"{where} has no rule, message or location ({type(exc).__name__}: {exc})"
        ) from exc
    # Named as not ASCII before any other check, which would quote the text.
    _ascii(code, f"{where}.ruleId")
    _ascii(severity, f"{where}.level")
    _ascii(message, f"{where}.message.text")
    uri_field = f"{where}.locations[0].physicalLocation.artifactLocation.uri"
    _ascii(uri, uri_field)
    if not (isinstance(code, str) and CODE.fullmatch(code)):
        raise BadReport(f"{where}.ruleId is not EAGnnn: {str(code)[:20]!r}")
    if not isinstance(uri, str):
        raise BadReport(f"{uri_field} is not a string")
    try:
        # eagle3lint writes the path percent-encoded (a URI); the API names files as they are.
        path = unquote(uri, errors="strict")
    except UnicodeDecodeError as exc:
        raise NotAscii(f"{uri_field} is not ASCII once decoded") from exc
    _ascii(path, f"{uri_field} (decoded)")
    if not _relative(path):
        raise BadReport(f"{uri_field} is not relative to the repository: {path[:80]!r}")
    if not isinstance(line, int) or isinstance(line, bool) or line < 1:
        raise BadReport(f"{where}: a line that is not a positive integer")
    if severity not in ("error", "warning", "note") or not isinstance(message, str):
        raise BadReport(f"{where} has no known level and message")
    return {"code": code, "path": path, "line": line, "severity": severity, "message": message}


def _ascii(value: Any, field: str) -> None:
    if isinstance(value, str) and not value.isascii():
        at, char = next((i, c) for i, c in enumerate(value) if not c.isascii())
        raise NotAscii(f"{field} is not ASCII (U+{ord(char):04X} at character {at})")


def _relative(path: str) -> bool:
    pure = PurePosixPath(path)
    return bool(path) and not pure.is_absolute() and ".." not in pure.parts and "\\" not in path


def inert(text: str, limit: int = MAX_MESSAGE) -> str:
    """`text` as Markdown that GitHub renders as the text itself, on one line, and as nothing
    else: line breaks as spaces; other controls (and, should one reach here, any character
    that is not ASCII) as their escapes (`\\x1b`), shown; Markdown's punctuation
    backslash-escaped; `&`, `<`, `>` and `:` as entities (no HTML, no autolink); and a
    zero-width space after `@` and `#`, between `:` and `/`, before the `.` of `www.` and
    after `GH-`, so that the rendered text holds no @mention, issue reference or bare URL.
    The output is ASCII and at most `limit` characters (then `...`), cut between escapes.

    The rules of eagle3lint's own `markdown_text` (eagle3lint/report/escape.py), which the
    tests hold this to, plus what a review needs: this script runs without eagle3lint."""
    pieces: list[str] = []
    size = 0
    for at, char in enumerate(text):
        piece = _inert_char(text, at, char)
        if size + len(piece) > limit:
            pieces.append("...")
            break
        pieces.append(piece)
        size += len(piece)
    return "".join(pieces)


def _inert_char(text: str, at: int, char: str) -> str:
    after, before = text[at + 1 : at + 2], text[max(0, at - 3) : at].lower()
    if char in "\r\n":
        return "" if char == "\r" and after == "\n" else " "
    if not " " <= char <= "~":
        return "\\" + char.encode("unicode_escape").decode("ascii")
    if char == "#" or (char == "-" and before.endswith("gh")):
        return "\\" + char + ZERO_WIDTH
    if char == ":" and after == "/":
        return _ENTITY[char] + ZERO_WIDTH
    if char == "." and before == "www":
        return ZERO_WIDTH + "\\."
    if char in _ENTITY:
        return _ENTITY[char]
    return "\\" + char if char in _BACKSLASHED else char


def diff_lines(files: list[dict[str, Any]]) -> dict[str, set[int]]:
    """The new-side lines each changed file shows in the pull request's diff (where a review
    comment may go), from the API's `patch` of each file."""
    lines: dict[str, set[int]] = {}
    for entry in files:
        if not isinstance(entry, dict):
            continue
        name, patch = entry.get("filename"), entry.get("patch") or ""
        if not isinstance(name, str) or not isinstance(patch, str):
            continue
        shown = lines.setdefault(name, set())
        for hunk in HUNK.finditer(patch):
            start, count = int(hunk.group(1)), int(hunk.group(2) or 1)
            shown.update(range(start, start + count))
    return lines


def review(findings: list[dict[str, Any]], shown: dict[str, set[int]]) -> dict[str, Any]:
    """The review to post: a comment on each finding at a line of the diff (up to
    MAX_COMMENTS), the others listed in the body (up to MAX_LISTED, within MAX_BODY); findings
    in files the pull request did not change are left out (the check reports them only because
    a changed file decides them). Every text of a finding goes through `inert`."""
    in_diff = [f for f in findings if f["line"] in shown.get(f["path"], ())]
    listed = [f for f in findings if f["path"] in shown and f not in in_diff[:MAX_COMMENTS]]
    comments = [
        {"path": f["path"], "line": f["line"], "side": "RIGHT", "body": _said(f)}
        for f in in_diff[:MAX_COMMENTS]
    ]
    errors = sum(f["severity"] == "error" for f in findings if f["path"] in shown)
    body = [f"eagle3lint: {errors} error(s) in the files this pull request changes."]
    size = len(body[0])
    for count, finding in enumerate(listed):
        line = f"- {inert(finding['path'], MAX_PATH)}:{finding['line']} {_said(finding)}"
        if count == MAX_LISTED or size + 1 + len(line) > MAX_BODY:
            body.append(f"- and {len(listed) - count} more")
            break
        body.append(line)
        size += 1 + len(line)
    return {"event": "COMMENT", "body": "\n".join(body), "comments": comments}


def _said(finding: dict[str, Any]) -> str:
    code, severity = inert(finding["code"]), inert(finding["severity"])
    return f"**{code}** ({severity}): {inert(finding['message'])}"


@dataclass(frozen=True)
class Event:
    """What the `workflow_run` event says about the run whose artifact this is."""

    head_sha: str
    numbers: tuple[int, ...]
    head_owner: str
    head_branch: str


def event_of(environ: Mapping[str, str]) -> Event:
    head_sha = environ.get("HEAD_SHA", "")
    if not SHA.fullmatch(head_sha):
        raise BadEnvironment("HEAD_SHA is not a commit id (github.event.workflow_run.head_sha)")
    words = environ.get("PR_NUMBERS", "").split()
    if not all(NUMBER.fullmatch(word) for word in words):
        raise BadEnvironment("PR_NUMBERS is not a list of pull request numbers")
    owner = environ.get("HEAD_OWNER", "")
    if owner and not LOGIN.fullmatch(owner):
        raise BadEnvironment("HEAD_OWNER is not a GitHub login")
    numbers = tuple(dict.fromkeys(int(word) for word in words))
    return Event(head_sha, numbers, owner, environ.get("HEAD_BRANCH", ""))


@dataclass(frozen=True)
class GitHub:
    """The repository's API, with the job's token."""

    api: str
    repository: str
    token: str

    @classmethod
    def from_environment(cls, environ: Mapping[str, str]) -> GitHub:
        names = ("GITHUB_API_URL", "GITHUB_REPOSITORY", "GITHUB_TOKEN")
        missing = [name for name in names if not environ.get(name)]
        if missing:
            raise BadEnvironment(f"{', '.join(missing)} not set")
        if not REPOSITORY.fullmatch(environ["GITHUB_REPOSITORY"]):
            raise BadEnvironment("GITHUB_REPOSITORY is not owner/name")
        api = environ["GITHUB_API_URL"].rstrip("/")
        return cls(api, environ["GITHUB_REPOSITORY"], environ["GITHUB_TOKEN"])

    def call(self, where: str, payload: dict[str, Any] | None = None) -> Any:
        """GET (or, with a payload, POST) `where` under the repository's API URL."""
        return _call(f"{self.api}/repos/{self.repository}/{where}", self.token, payload)


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
    what = f"{request.get_method()} {urlsplit(url).path}"
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        raise ApiError(f"{what}: HTTP {exc.code} {exc.reason}", exc.code) from exc
    except (urllib.error.URLError, TimeoutError, ValueError) as exc:
        raise ApiError(f"{what}: {exc}") from exc


def pull_request(call: Callable[[str], Any], event: Event, repository: str) -> int:
    """The number of the one open pull request of the repository whose head is the run's head
    commit: among those the event names, else among the open pull requests of the run's head
    branch (the event names none for a fork's pull request)."""
    found = [n for n in event.numbers[:MAX_CANDIDATES] if _open_at(_pull(call, n), event)]
    looked_up = ""
    if not found and event.head_owner and event.head_branch:
        head = f"{event.head_owner}:{event.head_branch}"
        looked_up = f"; open pull requests of head {head!a}"
        listed = call(f"pulls?state=open&head={quote(head, safe=':')}&per_page=100")
        if not isinstance(listed, list):
            raise ApiError(f"the open pull requests of head {head!a} are not a list")
        found = [pull["number"] for pull in listed if _open_at(pull, event)]
    found = list(dict.fromkeys(found))
    if len(found) != 1:
        named = ", ".join(f"#{n}" for n in event.numbers) or "none"
        which = "no" if not found else f"{len(found)} ({', '.join(f'#{n}' for n in found)})"
        raise NoPullRequest(
            f"{which} open pull requests of {repository} have head {event.head_sha}"
            f" (the event named {named}{looked_up}), where exactly one should: nothing posted"
        )
    return found[0]


def _pull(call: Callable[[str], Any], number: int) -> Any:
    """The API's pull request `number`, None if this repository has none of that number (the
    event's list can hold pull requests of other repositories)."""
    try:
        return call(f"pulls/{number}")
    except ApiError as exc:
        if exc.status == 404:
            return None
        raise


def _open_at(pull: Any, event: Event) -> bool:
    """Whether the API's `pull` is an open pull request whose head is the run's head commit."""
    return (
        isinstance(pull, dict)
        and pull.get("state") == "open"
        and isinstance(pull.get("head"), dict)
        and pull["head"].get("sha") == event.head_sha
        and isinstance(pull.get("number"), int)
        and not isinstance(pull["number"], bool)
        and pull["number"] > 0
    )


def main(argv: list[str], environ: Mapping[str, str] | None = None) -> int:
    environ = os.environ if environ is None else environ
    if len(argv) != 1:
        print(
            "usage: post_review.py findings.sarif (the pull request is the workflow_run"
            " event's, in HEAD_SHA, PR_NUMBERS, HEAD_OWNER, HEAD_BRANCH)",
            file=sys.stderr,
        )
        return 2
    try:
        # Everything the artifact and the event say is checked before the first request.
        event, github = event_of(environ), GitHub.from_environment(environ)
        findings = findings_of(load_report(read_report(Path(argv[0]))))
        number = pull_request(github.call, event, github.repository)
        files: list[dict[str, Any]] = []
        for page in range(1, 31):  # the API lists at most 3000 files, 100 a page
            batch = github.call(f"pulls/{number}/files?per_page=100&page={page}")
            if not isinstance(batch, list):
                raise ApiError(f"the files of pull request #{number} are not a list")
            files += batch
            if len(batch) < 100:
                break
        shown = diff_lines(files)
        if not any(f["path"] in shown for f in findings):
            print(f"post_review: nothing to say on pull request #{number}'s files")
            return 0
        # commit_id: the comments belong to the commit the findings are about.
        github.call(
            f"pulls/{number}/reviews", review(findings, shown) | {"commit_id": event.head_sha}
        )
    except Refused as exc:
        print(f"post_review: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
