"""The two-job pull-request review recipe (examples/github/): the untrusted job's workflow, and
post_review.py, which turns its findings into one review, run against a local stand-in for
GitHub's API, on a real report and on hostile ones."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar

import pytest
import yaml
from typer.testing import CliRunner

from eagle3lint import __version__
from eagle3lint.cli import app

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "github"
MODELS = Path("vllm/model_executor/models")


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("post_review", EXAMPLES / "post_review.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
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


class FakeGitHub(BaseHTTPRequestHandler):
    files: ClassVar[list[dict[str, Any]]] = []
    requests: ClassVar[list[tuple[str, str, str, Any]]] = []

    def do_GET(self) -> None:
        self._answer(self.files if "/files" in self.path else [])

    def do_POST(self) -> None:
        self._answer({"id": 1})

    def _answer(self, data: Any) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length)) if length else None
        self.requests.append((self.command, self.path, self.headers["Authorization"], body))
        out = json.dumps(data).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def github(monkeypatch: pytest.MonkeyPatch) -> Iterator[type[FakeGitHub]]:
    server = HTTPServer(("127.0.0.1", 0), FakeGitHub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("GITHUB_API_URL", f"http://127.0.0.1:{server.server_port}")
    monkeypatch.setenv("GITHUB_REPOSITORY", "vllm-project/vllm")
    monkeypatch.setenv("GITHUB_TOKEN", "t0ken")
    FakeGitHub.requests = []
    yield FakeGitHub
    server.shutdown()


def test_the_script_posts_one_review_with_the_token(
    era_copy: Path, tmp_path: Path, github: type[FakeGitHub]
) -> None:
    report, patch = real_report_and_patch(era_copy)
    github.files = [{"filename": str(MODELS / "no_tap.py"), "patch": patch}]
    (tmp_path / "findings.sarif").write_text(json.dumps(report))
    (tmp_path / "pr.txt").write_text("42\n")
    assert post.main([str(tmp_path / "findings.sarif"), str(tmp_path / "pr.txt")]) == 0
    (get, files, token, _), (method, where, _, review) = github.requests
    assert (get, files) == ("GET", "/repos/vllm-project/vllm/pulls/42/files?per_page=100&page=1")
    assert (method, where, token) == (
        "POST",
        "/repos/vllm-project/vllm/pulls/42/reviews",
        "Bearer t0ken",
    )
    assert any("EAG301" in c["body"] for c in review["comments"])
    (tmp_path / "pr.txt").write_text("42; curl evil\n")
    assert post.main([str(tmp_path / "findings.sarif"), str(tmp_path / "pr.txt")]) == 2


def test_the_untrusted_job_cannot_write_and_the_privileged_one_runs_no_pr_code() -> None:
    findings = yaml.safe_load((EXAMPLES / "eagle3lint-findings.yml").read_text())
    assert findings["permissions"] == {"contents": "read"}
    review = yaml.safe_load((EXAMPLES / "eagle3lint-review.yml").read_text())
    assert review[True]["workflow_run"]["workflows"] == [findings["name"]]  # `on:` is YAML's True
    steps = review["jobs"]["review"]["steps"]
    checkout = next(s for s in steps if s.get("uses", "").startswith("actions/checkout"))
    assert "with" not in checkout  # the default branch, not the pull request's head
    runs = [s["run"] for s in steps if "run" in s]
    assert runs == [
        "python .github/scripts/post_review.py findings/findings.sarif findings/pr-number.txt"
    ]
    for workflow in ("eagle3lint-findings.yml", "eagle3lint.yml"):
        assert f"@v{__version__}" in (EXAMPLES / workflow).read_text()
