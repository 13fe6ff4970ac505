"""The GitHub Action (`action.yml`), its steps executed as a runner would on a pull request of a
vLLM checkout: eagle3lint installed from the action's folder, annotations for what the pull
request changed, SARIF written and handed to the upload step, inputs that cannot inject shell.

No Actions runner runs here (act needs Docker), so `uses:` steps are checked for what they are
given, and `run:` steps are run by bash with the expressions of `action.yml` evaluated by the
small evaluator below, which refuses any expression form it does not know.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import sysconfig
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_precommit import git, snapshot_of_this_repo

REPO = Path(__file__).resolve().parent.parent
MODELS = Path("vllm/model_executor/models")
pytestmark = pytest.mark.slow


def runner_python(tmp_path: Path) -> Path:
    """A venv without eagle3lint in which this environment's packages are importable (so the
    install step resolves its dependencies offline), standing for setup-python's Python."""
    venv = tmp_path / "runner-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    purelib = sysconfig.get_paths()["purelib"]
    [site] = list((venv / "lib").glob("python3*/site-packages"))
    (site / "outer.pth").write_text(purelib + "\n")
    return venv / "bin"


class Expressions:
    """`${{ ... }}` of action.yml: context lookups, string literals, `==`, `&&`, `always()`."""

    def __init__(self, context: dict[str, Any]) -> None:
        self.context = context

    def render(self, text: str) -> str:
        return re.sub(r"\$\{\{\s*(.*?)\s*\}\}", lambda m: str(self.value(m.group(1))), text)

    def condition(self, text: str) -> bool:
        return all(self._term(term.strip()) for term in text.split("&&"))

    def _term(self, term: str) -> bool:
        if term in ("always()", "success()"):
            return True
        left, equals, right = term.partition("==")
        assert equals, f"unknown condition {term!r}"
        return self.value(left.strip()) == self.value(right.strip())

    def value(self, expression: str) -> Any:
        if re.fullmatch(r"'[^']*'", expression):
            return expression[1:-1]
        assert re.fullmatch(r"[a-z]+(\.[\w-]+)+", expression), f"unknown form {expression!r}"
        found: Any = self.context
        for part in expression.split("."):
            found = found.get(part, "") if isinstance(found, dict) else ""
        return found


def run_action(
    checkout: Path, inputs: dict[str, str], bin_dir: Path, action: Path, tmp_path: Path
) -> dict[str, Any]:
    """Every step of the action on `checkout`; what each run step returned and the uploads."""
    spec = yaml.safe_load((REPO / "action.yml").read_text())
    assert spec["runs"]["using"] == "composite"
    temp = tmp_path / "runner-temp"
    temp.mkdir(exist_ok=True)
    base = subprocess.run(
        ["git", "rev-parse", "main"], cwd=checkout, capture_output=True, text=True, check=True
    ).stdout.strip()
    context: dict[str, Any] = {
        "github": {"event": {"pull_request": {"base": {"sha": base}}}, "sha": "0" * 40},
        "runner": {"os": "Linux", "temp": str(temp)},
        "steps": {},
    }
    context["inputs"] = {
        name: Expressions(context).render(str(given.get("default", "")))
        for name, given in spec["inputs"].items()
    } | inputs
    results: dict[str, Any] = {"runs": [], "uploaded": []}
    failed = False
    for step in spec["runs"]["steps"]:
        expressions = Expressions(context)
        condition = step.get("if", "success()")
        # After a failed step only `always()` steps run, as on a runner.
        if (failed and "always()" not in condition) or not expressions.condition(condition):
            continue
        if "uses" in step:
            name, _, version = step["uses"].partition("@")
            assert re.fullmatch(r"v\d+", version), step["uses"]  # a major version, not a branch
            given = {k: expressions.render(str(v)) for k, v in step.get("with", {}).items()}
            if name == "actions/setup-python":
                major, minor = map(int, given["python-version"].split("."))
                assert (major, minor) >= (3, 11)
            elif name == "actions/cache":
                assert Path(given["path"]).expanduser() == Path.home() / ".cache" / "eagle3lint"
            elif name == "github/codeql-action/upload-sarif":
                results["uploaded"].append(json.loads(Path(given["sarif_file"]).read_text()))
            else:
                raise AssertionError(f"an action the test does not know: {name}")
            continue
        outputs = temp / "github-output"
        outputs.write_text("")
        env = {
            **os.environ,
            **{k: expressions.render(str(v)) for k, v in step.get("env", {}).items()},
            "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
            "GITHUB_ACTION_PATH": str(action),
            "GITHUB_OUTPUT": str(outputs),
            "RUNNER_TEMP": str(temp),
            "PIP_NO_INDEX": "1",
            "PIP_NO_BUILD_ISOLATION": "0",
        }
        assert "${{" not in step["run"], "inputs reach run scripts through env only"
        done = subprocess.run(
            ["bash", "-e", "-c", step["run"]],
            cwd=checkout,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        results["runs"].append((step.get("name"), done))
        if step.get("id"):
            lines = outputs.read_text().splitlines()
            context["steps"][step["id"]] = {"outputs": dict(line.split("=", 1) for line in lines)}
        failed = failed or done.returncode != 0
    return results


@pytest.fixture
def pull_request(era_copy: Path) -> Callable[[str, str], Path]:
    """The e2_stub tree as a repository whose branch `feature` changed one file."""

    def make(path: str, addition: str) -> Path:
        git(era_copy, "init", "-q", "-b", "main")
        git(era_copy, "add", "-A")
        git(era_copy, "commit", "-q", "-m", "base")
        git(era_copy, "checkout", "-q", "-b", "feature")
        changed = era_copy / path
        changed.write_text((changed.read_text() if changed.exists() else "") + addition)
        git(era_copy, "add", "-A")
        git(era_copy, "commit", "-q", "-m", "feature")
        return era_copy

    return make


@pytest.fixture
def installed(tmp_path: Path) -> tuple[Path, Path]:
    return runner_python(tmp_path), snapshot_of_this_repo(tmp_path / "action")


def test_a_pull_request_that_breaks_eagle3_fails_with_annotations_and_sarif(
    pull_request: Callable[[str, str], Path], installed: tuple[Path, Path], tmp_path: Path
) -> None:
    checkout = pull_request(str(MODELS / "no_tap.py"), "# touched\n")
    bin_dir, action = installed
    results = run_action(checkout, {"args": "--require *"}, bin_dir, action, tmp_path)
    steps = dict(results["runs"])
    assert steps["Install eagle3lint"].returncode == 0, steps["Install eagle3lint"].stderr
    assert (bin_dir / "eagle3lint").exists()  # installed in the runner's Python, from the action
    check = steps["Check"]
    assert check.returncode == 1, check.stdout + check.stderr
    annotations = [line for line in check.stdout.splitlines() if line.startswith("::")]
    assert annotations and all("no_tap.py" in line for line in annotations)
    assert any(line.startswith("::error file=") and "EAG301" in line for line in annotations)
    [sarif] = results["uploaded"]
    assert sarif["version"] == "2.1.0"
    codes = {r["ruleId"] for r in sarif["runs"][0]["results"]}
    assert "EAG301" in codes


def test_a_pull_request_with_no_python_change_passes_and_uploads_nothing(
    pull_request: Callable[[str, str], Path], installed: tuple[Path, Path], tmp_path: Path
) -> None:
    checkout = pull_request("NOTES.md", "docs only\n")
    bin_dir, action = installed
    results = run_action(checkout, {}, bin_dir, action, tmp_path)
    steps = dict(results["runs"])
    assert steps["Check"].returncode == 0, steps["Check"].stderr
    assert "no Python file changed" in steps["Check"].stderr
    assert results["uploaded"] == []


def test_inputs_cannot_inject_shell(
    pull_request: Callable[[str, str], Path], installed: tuple[Path, Path], tmp_path: Path
) -> None:
    checkout = pull_request(str(MODELS / "no_tap.py"), "# touched\n")
    bin_dir, action = installed
    planted = tmp_path / "planted"
    hostile = {
        "args": f"$(touch {planted}) `touch {planted}`",
        "diff-base": f"main; touch {planted}",
        "paths": f". ; touch {planted}",
    }
    results = run_action(checkout, hostile, bin_dir, action, tmp_path)
    assert not planted.exists()
    assert dict(results["runs"])["Check"].returncode == 2  # refused as bad input, nothing run
