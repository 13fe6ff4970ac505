"""The two-job pull-request review recipe (examples/github/): the workflows, and post_review.py,
which turns the untrusted job's findings into one review on the pull request the event names,
run against a local stand-in for GitHub's API (127.0.0.1), on a real report and on hostile
ones: hostile text, text that is not ASCII, and pull requests that are not exactly one."""

from __future__ import annotations

import html
import importlib.util
import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from eagle3lint.cli import app
from eagle3lint.report.escape import markdown_text

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "github"
MODELS = Path("vllm/model_executor/models")


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("post_review", EXAMPLES / "post_review.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # as importing it would: dataclasses look it up there
    spec.loader.exec_module(module)
    return module


post = load_script()


def real_report_and_patch(tree: Path) -> tuple[dict[str, Any], str]:
    """A pull request that touches the layer loop of no_tap.py: the report the untrusted job
    writes, and the file's patch as GitHub's API gives it (git's hunks, no header)."""
    path = tree / MODELS / "no_tap.py"
    subprocess.run(["git", "init", "-q"], cwd=tree, check=True)
    subprocess.run(["git", "add", "-A"], cwd=tree, check=True)
    text = path.read_text()
    loop = next(line for line in text.splitlines() if line.strip().startswith("for "))
    path.write_text(text.replace(loop, loop + "  # touched"))
    diff = subprocess.run(
        ["git", "diff", "--no-color", "--", str(MODELS / "no_tap.py")],
        cwd=tree,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    patch = diff[diff.index("@@") :]
    result = CliRunner().invoke(
        app, ["check", str(MODELS / "no_tap.py"), "--require", "*", "--format", "sarif"]
    )
    return json.loads(result.stdout), patch


def test_a_finding_on_a_changed_line_becomes_a_comment(era_copy: Path) -> None:
    report, patch = real_report_and_patch(era_copy)
    findings = post.findings_of(report)
    shown = post.diff_lines([{"filename": str(MODELS / "no_tap.py"), "patch": patch}])
    payload = post.review(findings, shown)
    [comment] = [c for c in payload["comments"] if c["body"].startswith("**EAG301**")]
    assert (
        comment["path"] == str(MODELS / "no_tap.py") and comment["line"] in shown[comment["path"]]
    )
    assert payload["event"] == "COMMENT" and "error(s)" in payload["body"]
    # A file the pull request did not change gets nothing.
    assert post.review(findings, {"other.py": {1}})["comments"] == []


def hostile(
    code: Any = "EAG301", path: Any = "a.py", line: Any = 3, level: Any = "error", text: Any = "m"
) -> dict[str, Any]:
    where = {"artifactLocation": {"uri": path}, "region": {"startLine": line}}
    result = {"ruleId": code, "level": level, "message": {"text": text}}
    return {"runs": [{"results": [result | {"locations": [{"physicalLocation": where}]}]}]}


@pytest.mark.parametrize(
    "report",
    [
        hostile(path="../../etc/passwd"),
        hostile(path="/etc/passwd"),
        hostile(code="EAG301; rm -rf"),
        hostile(line=True),
        hostile(line=0),
        hostile(level="critical"),
        {"runs": [{"results": [{"ruleId": "EAG301"}]}]},
        {"runs": "everything"},
        [],
    ],
)
def test_a_report_of_a_shape_it_cannot_trust_is_refused(report: Any) -> None:
    with pytest.raises(post.BadReport):
        post.findings_of(report)


def test_messages_cannot_ping_or_inject_markup() -> None:
    findings = post.findings_of(
        hostile(text="@maintainers <img src=x onerror=alert(1)>\n# heading " + "x" * 5000)
    )
    [comment] = post.review(findings, {"a.py": {3}})["comments"]
    assert "@maintainers" not in comment["body"] and "<img" not in comment["body"]
    assert "\n" not in comment["body"] and len(comment["body"]) < post.MAX_MESSAGE + 100


SHA, OTHER_SHA = "a" * 40, "b" * 40
REPOSITORY = "vllm-project/vllm"


def pull(
    number: int, sha: str = SHA, label: str = "vllm-project:feature", state: str = "open"
) -> dict[str, Any]:
    """A pull request of the repository as the API gives it (the fields the script reads)."""
    return {"number": number, "state": state, "head": {"sha": sha, "label": label}}


class FakeGitHub(BaseHTTPRequestHandler):
    """GitHub's API for one repository: its pull requests (`pulls`, by number), the files of
    any of them (`files`); it records every request."""

    url: ClassVar[str] = ""
    files: ClassVar[list[dict[str, Any]]] = []
    pulls: ClassVar[dict[int, dict[str, Any]]] = {}
    requests: ClassVar[list[tuple[str, str, str, Any]]] = []

    def do_GET(self) -> None:
        where = urlsplit(self.path)
        prefix = f"/repos/{REPOSITORY}/pulls"
        if where.path.endswith("/files"):
            self._answer(self.files)
        elif where.path == prefix:
            query = parse_qs(where.query)
            head, state = query["head"][0], query["state"][0]
            self._answer(
                [
                    p
                    for p in self.pulls.values()
                    if p["head"]["label"] == head and p["state"] == state
                ]
            )
        elif (number := where.path.removeprefix(prefix + "/")).isdigit():
            self._answer(self.pulls.get(int(number)), 200 if int(number) in self.pulls else 404)
        else:
            self._answer({"message": "Not Found"}, 404)

    def do_POST(self) -> None:
        self._answer({"id": 1})

    def _answer(self, data: Any, status: int = 200) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length)) if length else None
        self.requests.append((self.command, self.path, self.headers["Authorization"], body))
        out = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def github() -> Iterator[type[FakeGitHub]]:
    server = HTTPServer(("127.0.0.1", 0), FakeGitHub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    FakeGitHub.url = f"http://127.0.0.1:{server.server_port}"
    FakeGitHub.requests, FakeGitHub.pulls, FakeGitHub.files = [], {}, []
    yield FakeGitHub
    server.shutdown()
    server.server_close()


def environment(github: type[FakeGitHub], **event: str) -> dict[str, str]:
    """The variables eagle3lint-review.yml gives the script: Actions' own, and the event's."""
    return {
        "GITHUB_API_URL": github.url,
        "GITHUB_REPOSITORY": REPOSITORY,
        "GITHUB_TOKEN": "t0ken",
        "HEAD_SHA": SHA,
    } | event


def posted(github: type[FakeGitHub]) -> list[tuple[str, Any]]:
    return [(where, body) for method, where, _, body in github.requests if method == "POST"]


def test_the_script_posts_one_review_with_the_token(
    era_copy: Path, tmp_path: Path, github: type[FakeGitHub]
) -> None:
    report, patch = real_report_and_patch(era_copy)
    # eagle3lint's own SARIF holds text that is not ASCII once decoded (its rules' help), in
    # ASCII bytes: it is accepted, since the script reads no such text.
    assert "\\u2" in json.dumps(report)
    github.files = [{"filename": str(MODELS / "no_tap.py"), "patch": patch}]
    github.pulls = {42: pull(42)}
    (tmp_path / "findings.sarif").write_text(json.dumps(report))
    env = environment(github, PR_NUMBERS="42")
    assert post.main([str(tmp_path / "findings.sarif")], env) == 0
    (_, confirm, _, _), (_, files, token, _), (method, where, _, review) = github.requests
    assert confirm == "/repos/vllm-project/vllm/pulls/42"
    assert files == "/repos/vllm-project/vllm/pulls/42/files?per_page=100&page=1"
    assert (method, where, token) == (
        "POST",
        "/repos/vllm-project/vllm/pulls/42/reviews",
        "Bearer t0ken",
    )
    assert review["commit_id"] == SHA  # the commit the findings are about
    assert any("EAG301" in c["body"] for c in review["comments"])


def test_the_pull_request_is_the_events_whatever_the_artifact_says(
    tmp_path: Path, github: type[FakeGitHub], capsys: pytest.CaptureFixture[str]
) -> None:
    github.files = [{"filename": "a.py", "patch": "@@ -1,0 +1,5 @@\n+x"}]
    github.pulls = {42: pull(42), 99: pull(99, OTHER_SHA, "attacker:main")}
    (tmp_path / "findings.sarif").write_text(json.dumps(hostile()))
    (tmp_path / "pr-number.txt").write_text("99\n")  # what the old recipe's artifact carried
    env = environment(github, PR_NUMBERS="42")
    assert post.main([str(tmp_path / "findings.sarif")], env) == 0
    assert [where for where, _ in posted(github)] == ["/repos/vllm-project/vllm/pulls/42/reviews"]
    assert not any("/99" in where for _, where, _, _ in github.requests)
    # The old invocation, which read the number from the artifact, is refused: nothing asked.
    github.requests.clear()
    args = [str(tmp_path / "findings.sarif"), str(tmp_path / "pr-number.txt")]
    assert post.main(args, env) == 2
    assert github.requests == [] and "usage" in capsys.readouterr().err


@pytest.mark.parametrize(
    "numbers",
    [
        "",  # a fork's pull request: the event lists none
        "5",  # a pull request of another repository (the event has been seen to list one)
        "3",  # one of this repository whose head is another commit
    ],
)
def test_a_forks_pull_request_is_found_by_its_head_commit(
    numbers: str, tmp_path: Path, github: type[FakeGitHub]
) -> None:
    branch = "feat/x&y=1#z"
    github.files = [{"filename": "a.py", "patch": "@@ -1,0 +1,5 @@\n+x"}]
    github.pulls = {
        3: pull(3, OTHER_SHA),
        6: pull(6, SHA, f"forker:{branch}", state="closed"),
        7: pull(7, SHA, f"forker:{branch}"),
    }
    (tmp_path / "findings.sarif").write_text(json.dumps(hostile()))
    env = environment(github, PR_NUMBERS=numbers, HEAD_OWNER="forker", HEAD_BRANCH=branch)
    assert post.main([str(tmp_path / "findings.sarif")], env) == 0
    lookup = f"/repos/{REPOSITORY}/pulls?state=open&head=forker:feat%2Fx%26y%3D1%23z&per_page=100"
    assert lookup in [where for _, where, _, _ in github.requests]
    [(where, review)] = posted(github)
    assert where == f"/repos/{REPOSITORY}/pulls/7/reviews" and review["commit_id"] == SHA


@pytest.mark.parametrize(
    ("pulls", "event", "why"),
    [
        # The same branch proposed to two base branches: which one is not for the script to guess.
        (
            {7: pull(7, label="forker:x"), 9: pull(9, label="forker:x")},
            {"HEAD_OWNER": "forker", "HEAD_BRANCH": "x"},
            "2 (#7, #9) open pull requests",
        ),
        # The pull request has moved on to another commit since the findings were made.
        (
            {7: pull(7, OTHER_SHA, "forker:x")},
            {"HEAD_OWNER": "forker", "HEAD_BRANCH": "x"},
            "no open pull requests",
        ),
        ({7: pull(7, label="forker:x", state="closed")}, {"PR_NUMBERS": "7"}, "no open"),
        ({42: pull(42, OTHER_SHA)}, {"PR_NUMBERS": "42"}, "the event named #42"),
        ({}, {"PR_NUMBERS": "", "HEAD_OWNER": "forker", "HEAD_BRANCH": "x"}, "no open"),
        ({}, {}, "the event named none"),
    ],
)
def test_not_exactly_one_open_pull_request_at_the_head_commit_posts_nothing(
    pulls: dict[int, dict[str, Any]],
    event: dict[str, str],
    why: str,
    tmp_path: Path,
    github: type[FakeGitHub],
    capsys: pytest.CaptureFixture[str],
) -> None:
    github.files = [{"filename": "a.py", "patch": "@@ -1,0 +1,5 @@\n+x"}]
    github.pulls = pulls
    (tmp_path / "findings.sarif").write_text(json.dumps(hostile()))
    assert post.main([str(tmp_path / "findings.sarif")], environment(github, **event)) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("post_review: ") and why in line and "exactly one" in line
    assert posted(github) == []
    assert not any("/files" in where for _, where, _, _ in github.requests)


@pytest.mark.parametrize(
    ("event", "why"),
    [
        ({"PR_NUMBERS": "42; curl evil"}, "PR_NUMBERS"),
        ({"PR_NUMBERS": "42", "HEAD_SHA": ""}, "HEAD_SHA"),
        ({"PR_NUMBERS": "42", "HEAD_SHA": "main"}, "HEAD_SHA"),
        ({"PR_NUMBERS": "\u0664\u0662"}, "PR_NUMBERS"),  # digits, but not ASCII ones
        ({"HEAD_OWNER": "a b", "HEAD_BRANCH": "x"}, "HEAD_OWNER"),
        ({"PR_NUMBERS": "42", "GITHUB_REPOSITORY": "a/b/../c"}, "GITHUB_REPOSITORY"),
    ],
)
def test_event_values_of_the_wrong_shape_are_refused_before_any_request(
    event: dict[str, str],
    why: str,
    tmp_path: Path,
    github: type[FakeGitHub],
    capsys: pytest.CaptureFixture[str],
) -> None:
    github.pulls = {42: pull(42)}
    (tmp_path / "findings.sarif").write_text(json.dumps(hostile()))
    assert post.main([str(tmp_path / "findings.sarif")], environment(github, **event)) == 2
    assert why in capsys.readouterr().err and github.requests == []


HOSTILE_MESSAGE = (
    "`x` [x](http://e) ![i](http://e/p.png) @org/team <http://e> http://e\n"
    "# h www.e.com #1 GH-2 a@b.c | ~~s~~ *e* $m$ & &amp; \x1b[31m"
)
INERT_MESSAGE = (
    r"\`x\` \[x\]\(http&#58;&#8203;//e\) \!\[i\]\(http&#58;&#8203;//e/p\.png\)"
    r" &#64;&#8203;org/team &lt;http&#58;&#8203;//e&gt; http&#58;&#8203;//e"
    r" \#&#8203; h www&#8203;\.e\.com \#&#8203;1 GH\-&#8203;2 a&#64;&#8203;b\.c \| \~\~s\~\~"
    r" \*e\* \$m\$ &amp; &amp;amp; \\x1b\[31m"
)
HOSTILE_PATH = "m/`q`\n[x](http://e)/![i](http://e/p.png)/@org/team<http://e>.py"
INERT_PATH = (
    r"m/\`q\` \[x\]\(http&#58;&#8203;//e\)/\!\[i\]\(http&#58;&#8203;//e/p\.png\)"
    r"/&#64;&#8203;org/team&lt;http&#58;&#8203;//e&gt;\.py"
)


def test_hostile_paths_and_messages_are_posted_inert(
    tmp_path: Path, github: type[FakeGitHub]
) -> None:
    report = hostile(path=HOSTILE_PATH, line=2, text=HOSTILE_MESSAGE)
    off_diff = hostile(code="EAG302", path=HOSTILE_PATH, line=9, text=HOSTILE_MESSAGE)
    report["runs"][0]["results"] += off_diff["runs"][0]["results"]
    github.files = [{"filename": HOSTILE_PATH, "patch": "@@ -0,0 +1,2 @@\n+a\n+b"}]
    github.pulls = {42: pull(42)}
    (tmp_path / "findings.sarif").write_text(json.dumps(report))
    assert post.main([str(tmp_path / "findings.sarif")], environment(github, PR_NUMBERS="42")) == 0
    [(_, review)] = posted(github)
    # The path of a comment is the API's, as the file is named; its body is Markdown.
    assert review["comments"] == [
        {
            "path": HOSTILE_PATH,
            "line": 2,
            "side": "RIGHT",
            "body": f"**EAG301** (error): {INERT_MESSAGE}",
        }
    ]
    assert review["body"] == (
        "eagle3lint: 2 error(s) in the files this pull request changes.\n"
        f"- {INERT_PATH}:9 **EAG302** (error): {INERT_MESSAGE}"
    )
    assert rendered(INERT_MESSAGE).replace("\u200b", "") == post_flat(HOSTILE_MESSAGE)
    assert rendered(INERT_PATH).replace("\u200b", "") == post_flat(HOSTILE_PATH)


def not_ascii_report(field: str) -> bytes:
    """A report whose `field` holds a character that is not ASCII: written as UTF-8 bytes
    (`raw`) or as a JSON escape, ASCII bytes that decode to it (`escaped`)."""
    how, where = field.split(":")
    text = {"text": "m \u202e", "path": "a\u00e9.py", "code": "EAG\u0663\u0660\u0661"}
    report = hostile(**{where: text[where]}) if where in text else hostile()
    if where == "uri-encoded":
        report = hostile(path="a%C3%A9.py")
    if where == "key":
        report["runs"][0]["results"][0]["\u00e9"] = 1
    return json.dumps(report, ensure_ascii=how == "escaped").encode()


@pytest.mark.parametrize(
    ("field", "named"),
    [
        ("raw:text", "runs[0].results[0].message.text"),
        ("escaped:text", "runs[0].results[0].message.text is not ASCII (U+202E"),
        ("raw:path", "artifactLocation.uri"),
        ("escaped:path", "artifactLocation.uri is not ASCII (U+00E9"),
        ("escaped:uri-encoded", "artifactLocation.uri (decoded) is not ASCII (U+00E9"),
        ("escaped:code", "runs[0].results[0].ruleId is not ASCII (U+0663"),
        ("raw:key", "a key of runs[0].results[0]"),
    ],
)
def test_text_that_is_not_ascii_is_named_and_nothing_is_asked_or_posted(
    field: str,
    named: str,
    tmp_path: Path,
    github: type[FakeGitHub],
    capsys: pytest.CaptureFixture[str],
) -> None:
    github.files = [{"filename": "a.py", "patch": "@@ -1,0 +1,5 @@\n+x"}]
    github.pulls = {42: pull(42)}
    (tmp_path / "findings.sarif").write_bytes(not_ascii_report(field))
    assert post.main([str(tmp_path / "findings.sarif")], environment(github, PR_NUMBERS="42")) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("post_review: ") and named in line and "not ASCII" in line
    assert line.isascii() and github.requests == []


def test_a_findings_file_too_large_or_not_a_file_is_refused_unread(
    tmp_path: Path, github: type[FakeGitHub], capsys: pytest.CaptureFixture[str]
) -> None:
    env = environment(github, PR_NUMBERS="42")
    big = tmp_path / "big.sarif"
    big.write_bytes(b" " * post.MAX_REPORT_BYTES + b"{}")
    fifo = tmp_path / "fifo.sarif"
    os.mkfifo(fifo)  # a read of it would wait for a writer forever
    link = tmp_path / "link.sarif"
    link.symlink_to(big)
    for path, why in [
        (big, "over the 4 MiB limit"),
        (fifo, "not a regular file"),
        (link, "is a symbolic link"),
        (tmp_path, "not a regular file"),
        (tmp_path / "missing.sarif", "cannot be opened"),
    ]:
        assert post.main([str(path)], env) == 2
        assert why in capsys.readouterr().err
    assert github.requests == []


def many_findings(path: str, text: str, lines: int) -> dict[str, Any]:
    """A report of one finding on each of `lines` lines of `path`."""
    report = hostile(path=path, text=text)
    [result] = report["runs"][0]["results"]
    where = result["locations"][0]["physicalLocation"]
    report["runs"][0]["results"] = [
        result | {"locations": [{"physicalLocation": where | {"region": {"startLine": n}}}]}
        for n in range(1, lines + 1)
    ]
    return report


@pytest.mark.parametrize(
    ("path", "cap"),
    [
        ("a.py", "count"),  # 50 listed, of a line of about 1,000 characters each
        ("p" + "@" * 500 + ".py", "size"),  # long lines: the body stops short of GitHub's limit
    ],
)
def test_comments_and_the_body_are_capped(path: str, cap: str) -> None:
    findings = post.findings_of(many_findings(path, "@x " * 2000, 400))
    payload = post.review(findings, {path: set(range(1, 200))})
    assert len(payload["comments"]) == post.MAX_COMMENTS
    for comment in payload["comments"]:
        assert comment["body"].endswith("...") and len(comment["body"]) < post.MAX_MESSAGE + 60
    *listed, more = payload["body"].splitlines()[1:]
    assert more == f"- and {400 - post.MAX_COMMENTS - len(listed)} more"
    assert (len(listed) == post.MAX_LISTED) == (cap == "count")
    assert len(payload["body"]) <= post.MAX_BODY + len(more) + 1 < 65_536


def test_no_event_value_is_spliced_into_a_script() -> None:
    """`${{ }}` in a `run:` script is spliced into the shell script before it runs: a branch
    name or a title could be shell code (script injection). Values go through `env:`."""
    for name in ("eagle3lint-review.yml", "eagle3lint-findings.yml", "eagle3lint.yml"):
        workflow = yaml.safe_load((EXAMPLES / name).read_text())
        for job in workflow["jobs"].values():
            for step in job["steps"]:
                assert "${{" not in step.get("run", ""), (name, step["run"])
    review = yaml.safe_load((EXAMPLES / "eagle3lint-review.yml").read_text())
    [step] = [s for s in review["jobs"]["review"]["steps"] if "run" in s]
    event = "github.event.workflow_run"
    assert step["env"] == {
        "GITHUB_TOKEN": "${{ github.token }}",
        "HEAD_SHA": f"${{{{ {event}.head_sha }}}}",
        "PR_NUMBERS": f"${{{{ join({event}.pull_requests.*.number, ' ') }}}}",
        "HEAD_OWNER": f"${{{{ {event}.head_repository.owner.login }}}}",
        "HEAD_BRANCH": f"${{{{ {event}.head_branch }}}}",
    }


def test_the_untrusted_job_cannot_write_and_the_privileged_one_runs_no_pr_code() -> None:
    findings = yaml.safe_load((EXAMPLES / "eagle3lint-findings.yml").read_text())
    assert findings["permissions"] == {"contents": "read"}
    # It hands over findings only: the pull request is for the privileged job to learn.
    assert "pr-number" not in (EXAMPLES / "eagle3lint-findings.yml").read_text()
    review = yaml.safe_load((EXAMPLES / "eagle3lint-review.yml").read_text())
    assert review[True]["workflow_run"]["workflows"] == [findings["name"]]  # `on:` is YAML's True
    steps = review["jobs"]["review"]["steps"]
    checkout = next(s for s in steps if s.get("uses", "").startswith("actions/checkout"))
    # The default branch, not the pull request's head.
    assert checkout.get("with", {}) == {"persist-credentials": False}
    runs = [s["run"] for s in steps if "run" in s]
    assert runs == ['python .github/scripts/post_review.py "$RUNNER_TEMP/findings/findings.sarif"']
    # What the workflows pin is held by tests/test_precommit.py (a commit of this repository).


# The escaping, held to eagle3lint's own Markdown escaping (the script runs without eagle3lint).

MARKUP = re.compile(r"\\([!-/:-@\[-`{-~])|&(?:#[0-9]+|#[xX][0-9a-fA-F]+|[A-Za-z][A-Za-z0-9]*);")
"""A backslash escape of ASCII punctuation or an entity: what CommonMark undoes in text."""
SPECIAL = set("\\`*_{}[]()#+-.!|~$&<>:@")


def rendered(markdown: str) -> str:
    """The text a CommonMark renderer shows of inline Markdown that makes no markup."""
    return MARKUP.sub(lambda m: m.group(1) or html.unescape(m.group()), markdown)


def post_flat(text: str) -> str:
    """`text` as the review shows it: line breaks as spaces, other controls as escapes."""
    return re.sub(
        r"[\x00-\x1f\x7f]",
        lambda m: m.group().encode("unicode_escape").decode(),
        re.sub(r"\r\n|[\r\n]", " ", text),
    )


FRAGMENTS = [
    "`",
    "``",
    "[x](http://e)",
    "![i](http://e/p.png)",
    "@org/team",
    "<http://e>",
    "http://e",
    "https://",
    "WWW.e",
    "#1",
    "gh-1",
    "a@b.c",
    "\n",
    "\r\n",
    "\r",
    "\t",
    "\x1b",
    "::",
    "&amp;",
    "&#64;",
    "\\",
    "|",
    "<!--",
    "</",
    "*_~$",
]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(FRAGMENTS) | st.text(st.characters(max_codepoint=127), max_size=4),
        max_size=12,
    ).map("".join)
)
def test_inert_renders_as_eagle3lints_markdown_text_and_as_nothing_else(text: str) -> None:
    out = post.inert(text, limit=len(text) * 20)
    assert out.isascii() and not re.search(r"[\x00-\x1f\x7f]", out)
    assert not SPECIAL & set(MARKUP.sub("", out))  # every special character escaped
    shown = rendered(out)
    # It shows the text itself: what eagle3lint's `matrix --format markdown` would show.
    assert shown.replace("\u200b", "") == post_flat(text)
    assert shown.replace("\u200b", "") == rendered(markdown_text(re.sub(r"\r\n|[\r\n]", " ", text)))
    # And GitHub finds no @mention, email, issue reference or bare URL in what it shows.
    assert not re.search(r"(?i)@[^\u200b]|#[^\u200b]|:/|www\.|gh-[^\u200b]", shown)


def test_inert_is_ascii_and_capped_whatever_it_is_given() -> None:
    assert post.inert("\u202eé\u2028") == "\\\\u202e\\\\xe9\\\\u2028"
    out = post.inert("@" * 1000, limit=100)
    assert out.endswith("...") and len(out) <= 103 and rendered(out[:-3]).startswith("@\u200b")
