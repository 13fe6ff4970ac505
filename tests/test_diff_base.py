"""`check --diff-base REF`: the files a branch committed since REF, judged as in the whole tree,
with git run so that the checked repository cannot make it run a command."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from eagle3lint.cli import app

MODELS = Path("vllm/model_executor/models")
IDENTITY = ["-c", "user.name=t", "-c", "user.email=t@eagle3lint.invalid", "-c", "commit.gpgsign=0"]


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *IDENTITY, *args], cwd=repo, check=True, capture_output=True)


@pytest.fixture
def repo(era_copy: Path) -> Path:
    git(era_copy, "init", "-q", "-b", "main")
    git(era_copy, "add", "-A")
    git(era_copy, "commit", "-q", "-m", "base")
    git(era_copy, "checkout", "-q", "-b", "feature")
    return era_copy


def check(*args: str) -> tuple[int, str, Any]:
    result = CliRunner().invoke(app, ["check", *args, "--no-cache"])
    report = json.loads(result.stdout) if "json" in args and result.stdout else None
    return result.exit_code, result.stderr, report


def test_the_files_a_branch_changed_are_checked_as_given(repo: Path) -> None:
    no_tap = repo / MODELS / "no_tap.py"
    no_tap.write_text(no_tap.read_text() + "# touched\n")
    (repo / MODELS / "rank_local.py").unlink()  # deleted: nothing to check there
    (repo / "notes.txt").write_text("not Python\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "feature")
    git(repo, "checkout", "-q", "main")
    git(repo, "commit", "-q", "--allow-empty", "-m", "main moves on")  # merge base, not tip
    git(repo, "checkout", "-q", "feature")

    args = ("--require", "*", "--format", "json")
    code, _, branch = check("--diff-base", "main", *args)
    given = check(str(MODELS / "no_tap.py"), *args)
    assert (code, branch) == given[::2]
    assert {t["arch"] for t in branch["targets"]} == {"NoTapForCausalLM"}
    # PATHs narrow the files to those under them.
    assert check("--diff-base", "main", "vllm/config")[:2] == (
        0,
        "eagle3lint: no Python file changed since main\n",
    )


def test_uncommitted_work_and_no_change(repo: Path) -> None:
    code, said, _ = check("--diff-base", "main")
    assert (code, said) == (0, "eagle3lint: no Python file changed since main\n")


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ("nope", "--diff-base: 'nope' is not a commit here"),
        ("--output=/tmp/x", "--diff-base: '--output=/tmp/x' is not a git ref"),
        ("", "--diff-base: '' is not a git ref"),
    ],
)
def test_a_bad_ref_is_a_usage_error(repo: Path, ref: str, message: str) -> None:
    code, said, _ = check("--diff-base", ref)
    assert code == 2 and message in said


def test_outside_a_repository(era_copy: Path) -> None:
    code, said, _ = check("--diff-base", "main")
    assert code == 2 and "not a git repository" in said


def test_the_checked_repository_cannot_make_git_run_a_command(repo: Path, tmp_path: Path) -> None:
    ran = tmp_path / "ran"
    hostile = f"touch {ran}"
    for key, value in (
        ("core.fsmonitor", hostile),
        ("core.pager", hostile),
        ("diff.external", hostile),
        ("filter.x.clean", hostile),
        ("diff.x.textconv", hostile),
        ("core.hooksPath", str(tmp_path)),
    ):
        git(repo, "config", key, value)
    (repo / ".gitattributes").write_text("*.py filter=x diff=x\n")
    no_tap = repo / MODELS / "no_tap.py"
    no_tap.write_text(no_tap.read_text() + "# touched\n")
    git(repo, "-c", "filter.x.clean=cat", "add", "-A")
    git(repo, "-c", "core.fsmonitor=false", "commit", "-q", "-m", "feature")
    no_tap.write_text(no_tap.read_text() + "# and not committed\n")  # a dirty working tree
    ran.unlink(missing_ok=True)
    code, _, report = check("--diff-base", "main", "--require", "*", "--format", "json")
    assert code == 1 and {t["arch"] for t in report["targets"]} == {"NoTapForCausalLM"}
    assert not ran.exists()


def test_the_committed_contents_are_judged_not_the_working_tree(repo: Path) -> None:
    """Issue 32: a pull request is what it committed. An uncommitted edit of a file it
    changed is not the pull request's, either way, and the working tree is left as it is."""
    good = repo / MODELS / "good_llama.py"
    committed = good.read_text() + "# touched\n"
    good.write_text(committed)
    git(repo, "commit", "-q", "-am", "feature")
    broken = committed.replace("SupportsPP, SupportsEagle3):", "SupportsPP):")
    assert broken != committed
    good.write_text(broken)  # uncommitted: the protocol dropped
    assert verdict(check("--diff-base", "main", "--format", "json")[2]) is None  # committed
    assert good.read_text() == broken

    git(repo, "commit", "-q", "-am", "drop the protocol")
    good.write_text(committed)  # fixed in the working tree, not in the pull request
    assert verdict(check("--diff-base", "main", "--format", "json")[2]) is False


def verdict(report: Any) -> bool | None:
    """GoodLlamaForCausalLM's `eagle3_ready` (the wrappers over it are reported too: they read
    its file)."""
    [found] = [t for t in report["targets"] if t["arch"] == "GoodLlamaForCausalLM"]
    return found["eagle3_ready"]


def test_a_contract_file_the_branch_changed_judges_every_target_reading_it(repo: Path) -> None:
    """A change to interfaces.py breaks targets defined elsewhere: the pull request's check
    names them, as the whole-tree check does."""
    interfaces = repo / MODELS / "interfaces.py"
    getter = "def get_eagle3_aux_hidden_state_layers(self)"
    interfaces.write_text(interfaces.read_text().replace(getter, getter.replace("aux", "tap")))
    git(repo, "commit", "-q", "-am", "rename the getter")
    code, _, branch = check("--diff-base", "main", "--require", "*", "--format", "json")
    _, _, whole = check("vllm", "--require", "*", "--format", "json")
    assert code == 1
    assert {t["arch"] for t in branch["targets"]} == {t["arch"] for t in whole["targets"]}
    assert all(t["reads_changed"] == [str(interfaces)] for t in branch["targets"])

    git(repo, "checkout", "-q", "main", "--", str(interfaces))
    interfaces.write_text(interfaces.read_text() + "# a harmless comment\n")
    git(repo, "commit", "-q", "-am", "a comment")
    _, _, harmless = check("--diff-base", "main", "--format", "json")
    _, _, before = check("vllm", "--format", "json")
    assert [t["findings"] for t in harmless["targets"]] == [
        t["findings"] for t in before["targets"]
    ]
