"""Hostile input, round 4 (issue 45): `check --diff-base` runs git in a repository its user did
not write, and git can be made to fetch: a partial clone fetches a missing object from the
remote its own config names (`ext::COMMAND`, or a `file` remote whose `uploadpack` is a
command), and a repository committed inside the checkout (a bare one: `HEAD`, `config`,
`objects/`, `refs/`) brings such a config along through a plain `git clone`.

Each test first shows that git itself runs the repository's command there, even with the
`-c protocol.allow=never` eagle3lint used to pass, so the trap is armed; then eagle3lint must
stop with a named error (exit 2) and the marker file must not exist. Every git found is tried:
the system's, and any under /opt/git-*/bin (a newer one built for this, where present).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from test_diff_base import IDENTITY, MODELS, check, git
from test_ignore_rules import GIT_ENV

GITS = {"system": Path(shutil.which("git") or "git")} | {
    found.parent.parent.name: found for found in sorted(Path("/opt").glob("git-*/bin/git"))
}


@pytest.fixture(params=sorted(GITS))
def which_git(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The git both the test and eagle3lint run, first on PATH."""
    binary = GITS[request.param]
    monkeypatch.setenv("PATH", f"{binary.parent}{os.pathsep}{os.environ['PATH']}")
    return binary


@pytest.fixture
def repo(era_copy: Path, which_git: Path) -> Path:
    """A checkout on branch `feature`, one commit ahead of `main`, whose objects are loose."""
    git(era_copy, "init", "-q", "-b", "main")
    git(era_copy, "add", "-A")
    git(era_copy, "commit", "-q", "-m", "base")
    git(era_copy, "checkout", "-q", "-b", "feature")
    no_tap = era_copy / MODELS / "no_tap.py"
    no_tap.write_text(no_tap.read_text() + "# touched\n")
    git(era_copy, "commit", "-q", "-am", "feature")
    return era_copy


def plain_git(cwd: Path, *args: str) -> None:
    """git as eagle3lint 0.5.1 ran it: protocols off in general, the repository's config read."""
    env = {**GIT_ENV, "PATH": os.environ["PATH"]}
    command = ["git", "-c", "protocol.allow=never", *args]
    subprocess.run(command, cwd=cwd, env=env, capture_output=True, timeout=60, check=False)


def armed(marker: Path, cwd: Path, *args: str) -> None:
    plain_git(cwd, *args)
    assert marker.exists(), "the trap did not fire under git itself"
    marker.unlink()


def make_partial(
    repo: Path, url: str, protocol: str, drop: str = "main^{tree}", **remote: str
) -> None:
    """Make `repo` a partial clone whose promisor remote is `url`, allowed by the repository's
    own `protocol.<protocol>.allow`, and drop object `drop` (the merge base's root tree) from
    its objects."""
    for key, value in {
        "core.repositoryformatversion": "1",
        "extensions.partialClone": "origin",
        "remote.origin.url": url,
        "remote.origin.promisor": "true",
        f"protocol.{protocol}.allow": "always",
        **{f"remote.origin.{key}": value for key, value in remote.items()},
    }.items():
        git(repo, "config", key, value)
    dropped = subprocess.run(
        ["git", *IDENTITY, "rev-parse", drop],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (repo / ".git" / "objects" / dropped[:2] / dropped[2:]).unlink()


def refused(marker: Path, *args: str) -> str:
    code, said, _ = check("--diff-base", "main", *args)
    assert not marker.exists(), "eagle3lint let git run the repository's command"
    assert code == 2, said
    assert "is not a commit here" not in said
    return said


def test_a_partial_clone_cannot_fetch_through_an_ext_remote(repo: Path, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    make_partial(repo, f"ext::sh -c touch% {marker}", "ext")
    armed(marker, repo, "diff-tree", "-r", "--name-only", "main", "feature")
    said = refused(marker)
    assert "is a partial clone (promisor remote 'origin')" in said
    assert "eagle3lint fetches nothing" in said


def test_a_partial_clone_cannot_run_a_file_remotes_upload_pack(repo: Path, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    elsewhere = tmp_path / "elsewhere"
    git(tmp_path, "init", "-q", "--bare", str(elsewhere))  # runs upload-pack, holds nothing
    make_partial(repo, f"file://{elsewhere}", "file", uploadpack=f"touch {marker}; git-upload-pack")
    armed(marker, repo, "diff-tree", "-r", "--name-only", "main", "feature")
    assert "is a partial clone" in refused(marker)


def test_a_bare_repository_committed_inside_the_checkout_is_not_used(
    repo: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    models = repo / MODELS
    (models / "objects" / "info").mkdir(parents=True)
    (models / "refs" / "heads").mkdir(parents=True)
    (models / "objects" / "info" / "packs").write_text("")
    (models / "refs" / "heads" / "main").write_text("1" * 40 + "\n")  # an object it lacks
    (models / "HEAD").write_text("ref: refs/heads/main\n")
    (models / "config").write_text(
        "[core]\n\trepositoryformatversion = 1\n\tbare = false\n\tworktree = .\n"
        "[extensions]\n\tpartialClone = origin\n"
        f'[remote "origin"]\n\turl = ext::sh -c touch% {marker}\n\tpromisor = true\n'
        "[protocol]\n\tallow = always\n"
        '[protocol "ext"]\n\tallow = always\n'
    )
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a repository inside the checkout")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--branch", "feature", str(repo), str(clone))
    cloned_models = clone / MODELS
    assert (cloned_models / "config").is_file(), "a plain clone brings it along"
    armed(marker, cloned_models, "rev-parse", "--verify", "main^{commit}")
    os.chdir(clone)
    said = refused(marker, str(MODELS))
    assert "inside a bare repository" in said
    assert "safe.bareRepository=explicit" in said


def test_a_partial_clone_holding_what_it_compares_is_checked(repo: Path, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    for key, value in {
        "core.repositoryformatversion": "1",
        "extensions.partialClone": "origin",
        "remote.origin.url": f"ext::sh -c touch% {marker}",
        "remote.origin.promisor": "true",
        "protocol.ext.allow": "always",
    }.items():
        git(repo, "config", key, value)
    code, _, report = check("--diff-base", "main", "--require", "*", "--format", "json")
    assert code == 1 and {t["arch"] for t in report["targets"]} == {"NoTapForCausalLM"}
    assert not marker.exists()


def test_a_partial_clone_missing_a_changed_files_blob_fetches_nothing(
    repo: Path, tmp_path: Path
) -> None:
    # --diff-base reads the changed files as committed (cat-file blob): a blob it lacks is the
    # same named error, not git's own last line, and fetches nothing.
    marker = tmp_path / "ran"
    make_partial(repo, f"ext::sh -c touch% {marker}", "ext", drop=f"HEAD:{MODELS / 'no_tap.py'}")
    said = refused(marker)
    assert "is a partial clone (promisor remote 'origin')" in said
