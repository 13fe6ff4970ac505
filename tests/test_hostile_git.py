"""Hostile input, round 3 (issue 25): what a checked repository's git configuration, a file
planted in a shared parent folder and a hard-linked lock file could make eagle3lint do.

Each test builds the attack on a tree of its own. A command the checked repository chooses
(`core.fsmonitor`) would create a marker file: none may appear, and the test first shows that
git itself runs it there, so the trap is armed. Files "planted by another user" are chowned
to nobody (the suite runs as root). Hang cases are bounded by `no_hang`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_hostile import no_hang
from test_ignore_rules import GIT_ENV, git_repository
from test_robustness import NOBODY, archs, check
from typer.testing import CliRunner, Result
from vllm_tree import ARCH, LLAMA, MODEL_FILE, write_vllm_tree

from eagle3lint import storage
from eagle3lint.cli import app

ENTRY_FORMS = {
    "console": [str(Path(sys.executable).parent / "eagle3lint")],
    "module": [sys.executable, "-m", "eagle3lint"],
}


def run(form: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """eagle3lint in a process of its own, with git's configuration as the user has it."""
    result = subprocess.run(
        [*ENTRY_FORMS[form], *args, "--no-cache"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert "Traceback" not in result.stderr, result.stderr
    return result


def invoke(*args: str) -> Result:
    result = CliRunner().invoke(app, [*args, "--no-cache", "--jobs", "1", "--require", "*"])
    assert "Traceback" not in result.output, result.output
    return result


def armed(folder: Path, marker: Path) -> None:
    """git, run where eagle3lint will list files, runs the repository's command."""
    subprocess.run(
        ["git", "-C", str(folder), "ls-files", "--others"],
        capture_output=True,
        env={**GIT_ENV, "GIT_CONFIG_NOSYSTEM": "0"},
        check=False,
    )
    assert marker.exists(), "the trap did not fire under git itself"
    marker.unlink()


# -- 1. code chosen by the checked repository -------------------------------------------------
def embedded_repository(folder: Path, marker: Path) -> None:
    """A folder git takes for a repository of its own (HEAD, config, objects/, refs/), whose
    config runs `touch MARKER` as its file-system monitor."""
    (folder / "objects" / "info").mkdir(parents=True)
    (folder / "refs" / "heads").mkdir(parents=True)
    (folder / "objects" / "info" / "packs").write_text("")
    (folder / "refs" / "heads" / "main").write_text("")
    (folder / "HEAD").write_text("ref: refs/heads/main\n")
    (folder / "config").write_text(
        f'[core]\n\trepositoryformatversion = 0\n\tworktree = .\n\tfsmonitor = "touch {marker}"\n'
    )


@pytest.fixture
def clone(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """A plain `git clone` of a repository whose `models/` is such an embedded repository;
    yields the clone and the marker."""
    marker = tmp_path / "MARKER"
    origin = git_repository(tmp_path / "origin")
    models = origin / "models"
    models.mkdir()
    (models / "mine.py").write_text(LLAMA)
    embedded_repository(models, marker)
    identity = ["-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    for args in (["add", "-A"], ["commit", "-q", "-m", "models"]):
        subprocess.run(["git", "-C", str(origin), *identity, *args], check=True, env=GIT_ENV)
    subprocess.run(
        ["git", "clone", "-q", str(origin), str(tmp_path / "clone")], check=True, env=GIT_ENV
    )
    assert not marker.exists()
    armed(tmp_path / "clone" / "models", marker)
    yield tmp_path / "clone", marker


@pytest.mark.parametrize("form", sorted(ENTRY_FORMS))
@pytest.mark.parametrize("command", [["check", "--format", "json"], ["fix", "--diff"]])
def test_an_embedded_repository_in_a_clone_runs_nothing(
    clone: tuple[Path, Path], form: str, command: list[str]
) -> None:
    root, marker = clone
    result = run(form, *command, "models", "--require", "*", cwd=root)
    assert not marker.exists(), result.stderr
    if command[0] == "check":
        assert result.returncode == 1, result.stderr
        assert archs(json.loads(result.stdout)) == [ARCH]  # its files were listed
    else:
        assert result.returncode == 1, result.stderr
        assert "models/mine.py" in result.stdout


@pytest.fixture
def configured(tmp_path: Path) -> tuple[Path, Path]:
    """A checkout (a tarball, a shared folder, a CI artifact) whose own `.git/config` runs
    `touch MARKER` as its file-system monitor."""
    marker = tmp_path / "MARKER"
    root = git_repository(tmp_path / "checkout")
    subprocess.run(
        ["git", "-C", str(root), "config", "core.fsmonitor", f"touch {marker}"],
        check=True,
        env=GIT_ENV,
    )
    (root / "models").mkdir()
    (root / "models" / "mine.py").write_text(LLAMA)
    armed(root, marker)
    return root, marker


@pytest.mark.parametrize("form", sorted(ENTRY_FORMS))
@pytest.mark.parametrize(
    "args",
    [["check", "."], ["check", "models"], ["fix", "--diff", "models"]],
    ids=["check-root", "check-folder", "fix-diff"],
)
def test_a_checkouts_own_git_config_runs_nothing(
    configured: tuple[Path, Path], form: str, args: list[str]
) -> None:
    root, marker = configured
    result = run(form, *args, "--require", "*", cwd=root)
    assert not marker.exists(), result.stderr
    assert result.returncode == 1, result.stderr


def test_a_tracked_file_an_ignore_rule_covers_is_listed_only_when_named(tmp_path: Path) -> None:
    """The listing reads no git index (ruff's choice): ignore rules decide. git's
    `ls-files --cached` listed such a file; naming it still checks it."""
    root = git_repository(tmp_path / "repo")
    (root / "mine.py").write_text(LLAMA)
    identity = ["-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    for args in (["add", "-A"], ["commit", "-q", "-m", "tracked"]):
        subprocess.run(["git", "-C", str(root), *identity, *args], check=True, env=GIT_ENV)
    (root / ".gitignore").write_text("mine.py\n")
    (root / "other.py").write_text(LLAMA.replace(ARCH, "OtherForCausalLM"))
    assert archs(check(str(root))[1]) == ["OtherForCausalLM"]
    assert archs(check(str(root / "mine.py"))[1]) == [ARCH]
    assert sorted(archs(check(str(root), "--no-respect-gitignore")[1])) == sorted(
        [ARCH, "OtherForCausalLM"]
    )


# -- 2. a pathological ignore line ------------------------------------------------------------
@pytest.mark.parametrize("repository", [False, True], ids=["folder", "repository"])
def test_a_backtracking_gitignore_line_and_a_long_name_do_not_hang(
    tmp_path: Path, repository: bool
) -> None:
    """`*a*a*a*a*a*b` and a 250-byte name (pathspec took 297 s on a 200-byte one)."""
    root = git_repository(tmp_path / "repo") if repository else tmp_path / "repo"
    root.mkdir(exist_ok=True)
    (root / ".gitignore").write_text("*a*a*a*a*a*b\n**/*a*a*a*a*a*a*a*a*b\n")
    (root / ("a" * 250 + ".py")).write_text(LLAMA)
    with no_hang(30):
        exit_code, report = check(str(root))
    assert (exit_code, archs(report)) == (1, [ARCH])


# -- 4. the lock file --------------------------------------------------------------------------
@pytest.fixture
def fixable(tmp_path: Path) -> Path:
    """A tree `fix` has work on; returns its root (where the lock lives)."""
    write_vllm_tree(tmp_path / "checkout")
    return tmp_path / "checkout"


def refused_fix(root: Path, why: str) -> None:
    model = root / MODEL_FILE
    before = model.read_bytes()
    with no_hang(60):
        result = invoke("fix", str(root / "vllm"))
    assert result.exit_code == 2, result.output
    lock = root / storage.LOCK_NAME
    assert f"{lock} {why}: not a lock of eagle3lint, left alone" in result.stderr
    assert model.read_bytes() == before


def test_a_lock_hard_linked_to_a_model_file_is_refused_and_nothing_truncated(
    fixable: Path,
) -> None:
    """A tar archive can carry `.eagle3lint-fix.lock` as a hard link to a model file: fix
    used to truncate the model to its pid and exit 0."""
    lock = fixable / storage.LOCK_NAME
    os.link(fixable / MODEL_FILE, lock)
    refused_fix(fixable, "has other links")
    assert lock.exists() and os.path.samefile(lock, fixable / MODEL_FILE)


def test_a_lock_holding_anything_but_a_pid_is_left_alone(fixable: Path) -> None:
    lock = fixable / storage.LOCK_NAME
    lock.write_text("import os\nos.system('echo hi')\n")
    refused_fix(fixable, "holds more than a pid")
    assert lock.read_text() == "import os\nos.system('echo hi')\n"


def test_a_lock_that_is_a_fifo_is_refused_without_blocking(fixable: Path) -> None:
    os.mkfifo(fixable / storage.LOCK_NAME)
    refused_fix(fixable, "is not a regular file")


# -- 5. files planted in a shared parent folder ------------------------------------------------
@pytest.fixture
def shared(tmp_path: Path) -> Path:
    """A folder every user may write, sticky like /tmp."""
    folder = tmp_path / "shared"
    folder.mkdir()
    folder.chmod(0o1777)
    return folder


def plant(path: Path, text: str | None = None) -> Path:
    """`path` (and what is under it) as another user's."""
    if text is not None:
        path.write_text(text)
    for current, dirs, files in os.walk(path):
        for name in [*dirs, *files]:
            os.chown(os.path.join(current, name), NOBODY, NOBODY)
    os.chown(path, NOBODY, NOBODY)
    return path


PLANTED_CONFIG = {
    "eagle3lint.toml": 'ignore = ["EAG"]\n',
    "pyproject.toml": '[tool.eagle3lint]\nignore = ["EAG"]\n',
}


def checked_with_stderr(*args: str) -> tuple[int, dict[str, Any], str]:
    result = invoke("check", *args, "--format", "json")
    return result.exit_code, json.loads(result.stdout), result.stderr


@pytest.mark.parametrize("name", sorted(PLANTED_CONFIG))
def test_a_config_planted_in_a_shared_folder_is_not_used_and_is_named(
    shared: Path, name: str
) -> None:
    """Another user's eagle3lint.toml in /tmp turned 177 blockers into exit 0."""
    vllm = write_vllm_tree(shared / "mine")
    planted = plant(shared / name, PLANTED_CONFIG[name])
    exit_code, report, stderr = checked_with_stderr(str(vllm))
    assert (exit_code, archs(report)) == (1, [ARCH])
    message = f"eagle3lint: config not used: {planted}: another user could have written it\n"
    assert stderr.count(message) == 1


def test_a_config_above_a_folder_of_another_user_is_not_looked_for(shared: Path) -> None:
    theirs = shared / "theirs"
    theirs.mkdir()
    vllm = write_vllm_tree(theirs / "mine")  # the user's tree, in another user's folder
    (theirs / "eagle3lint.toml").write_text(PLANTED_CONFIG["eagle3lint.toml"])
    os.chown(theirs, NOBODY, NOBODY)
    exit_code, report, stderr = checked_with_stderr(str(vllm))
    assert (exit_code, archs(report), stderr) == (1, [ARCH], "")


def test_a_config_in_a_folder_others_can_write_is_not_used(tmp_path: Path) -> None:
    """Not sticky: anyone could have swapped the file, whoever owns it now."""
    open_folder = tmp_path / "open"
    open_folder.mkdir()
    open_folder.chmod(0o777)
    vllm = write_vllm_tree(open_folder / "mine")
    (open_folder / "eagle3lint.toml").write_text(PLANTED_CONFIG["eagle3lint.toml"])
    assert check(str(vllm))[0] == 1


@pytest.mark.parametrize(("group", "exit_code"), [(0, 0), (100, 1)], ids=["own", "users"])
def test_a_group_writable_parent_is_trusted_for_its_owners_own_group_only(
    tmp_path: Path, group: int, exit_code: int
) -> None:
    """A umask of 002 makes every folder writable by its owner's own group (root's is root);
    a shared group ("users") could have planted the file."""
    parent = tmp_path / "parent"
    parent.mkdir()
    os.chown(parent, 0, group)
    parent.chmod(0o775)
    vllm = write_vllm_tree(parent / "mine")
    (parent / "eagle3lint.toml").write_text(PLANTED_CONFIG["eagle3lint.toml"])
    assert check(str(vllm))[0] == exit_code


def test_config_discovery_stops_at_the_repository_root(tmp_path: Path) -> None:
    (tmp_path / "eagle3lint.toml").write_text(PLANTED_CONFIG["eagle3lint.toml"])
    root = git_repository(tmp_path / "repo")
    vllm = write_vllm_tree(root)
    assert check(str(vllm))[0] == 1
    (root / "eagle3lint.toml").write_text(PLANTED_CONFIG["eagle3lint.toml"])
    assert check(str(vllm))[0] == 0  # the repository's own applies


def test_a_colleagues_tree_takes_its_own_config(shared: Path) -> None:
    """The owner of a path named is trusted for it: checking their tree means their
    settings (and in a container, a mounted checkout's)."""
    theirs = shared / "theirs"
    vllm = write_vllm_tree(theirs)
    (theirs / "eagle3lint.toml").write_text(PLANTED_CONFIG["eagle3lint.toml"])
    plant(theirs)
    assert check(str(vllm))[0] == 0


def test_a_named_trees_owner_is_trusted_in_their_folders_only(shared: Path) -> None:
    """What the colleague put in /tmp itself is not theirs to decide: it is named, not used."""
    theirs = shared / "theirs"
    vllm = write_vllm_tree(theirs)
    plant(theirs)
    planted = plant(shared / "eagle3lint.toml", PLANTED_CONFIG["eagle3lint.toml"])
    exit_code, report, stderr = checked_with_stderr(str(vllm))
    assert (exit_code, archs(report)) == (1, [ARCH])
    assert f"config not used: {planted}: another user could have written it" in stderr


def out_of_tree_model(folder: Path) -> Path:
    folder.mkdir()
    (folder / "mine.py").write_text(LLAMA.replace(ARCH, "MineForCausalLM"))
    return folder / "mine.py"


@pytest.mark.parametrize("planted", [True, False], ids=["another-user", "own"])
def test_a_vllm_tree_planted_above_out_of_tree_files_is_not_their_contract(
    shared: Path, planted: bool
) -> None:
    tree = write_vllm_tree(shared)
    if planted:
        plant(tree)
    model = out_of_tree_model(shared / "mine")
    report = check(str(model))[1]
    assert "MineForCausalLM" in archs(report)
    if planted:
        assert report["vllm"]["contract_source"] != "tree", report["vllm"]
    else:  # the rule is about who made it: the user's own tree there is the contract
        assert (report["vllm"]["contract_source"], report["vllm"]["root"]) == ("tree", str(tree))


def test_a_planted_model_executor_above_does_not_turn_checks_into_errors(shared: Path) -> None:
    """A planted `model_executor/models/` made every check below it exit 2 (a vLLM tree "not
    named vllm")."""
    (shared / "model_executor" / "models").mkdir(parents=True)
    plant(shared / "model_executor")
    model = out_of_tree_model(shared / "mine")
    for path in (model, model.parent):
        exit_code, report = check(str(path))
        assert (exit_code, archs(report)) == (1, ["MineForCausalLM"]), report["errors"]


def test_ignore_files_planted_above_hide_nothing(shared: Path) -> None:
    (shared / ".git" / "info").mkdir(parents=True)
    (shared / ".git" / "info" / "exclude").write_text("*\n")
    plant(shared / ".git")
    plant(shared / ".gitignore", "*\n")
    model = out_of_tree_model(shared / "mine")
    assert archs(check(str(model.parent))[1]) == ["MineForCausalLM"]
