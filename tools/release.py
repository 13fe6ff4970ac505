"""Make a release: `python tools/release.py X.Y.Z [--dry-run]`.

1. `eagle3lint/__init__.py` says X.Y.Z, and CHANGELOG.md's `## Unreleased` section becomes
   `## X.Y.Z (date)`; committed as "Release X.Y.Z" and tagged `vX.Y.Z` (annotated).
2. Every adoption snippet (README, docs, the workflow examples) pins that commit by its full
   hash, with the version in a comment (`rev: <hash>  # frozen: vX.Y.Z`, as `pre-commit
   autoupdate --freeze` writes it); committed as "Snippets pin X.Y.Z".

Snippets pin a commit, not the tag: a tag lives only where it was pushed, and a snippet that
pins a tag the repository lacks fails at `git checkout` for everyone who copies it (0.5.1's
did). A commit is in every clone of main. `tests/test_precommit.py` holds each pin to a commit
of this repository whose version is the one its comment names. The tag is for people and
`pre-commit autoupdate`; push it with `git push origin vX.Y.Z`.
"""

from __future__ import annotations

import argparse
import datetime
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
VERSION_FILE = Path("eagle3lint/__init__.py")
CHANGELOG = Path("CHANGELOG.md")
SNIPPETS = (
    Path("README.md"),
    Path("docs/ecosystem.md"),
    Path("examples/github/eagle3lint.yml"),
    Path("examples/github/eagle3lint-findings.yml"),
    Path("examples/github/eagle3lint-review.yml"),
)
"""The files whose snippets pin eagle3lint (a file without a pin is left as it is)."""

REF = r"[0-9A-Za-z][0-9A-Za-z._-]*"
PIN_PATTERNS = (
    # pre-commit: `rev: REF` in a block that names this repository, with an optional comment.
    re.compile(rf"(?P<lead>^\s*rev:\s*)(?P<ref>{REF})(?P<comment>[ \t]*#[^\n]*)?$", re.MULTILINE),
    # the GitHub Action: `uses: eagle3lint/eagle3lint@REF`, with an optional comment.
    re.compile(
        rf"(?P<lead>uses:\s*eagle3lint/eagle3lint@)(?P<ref>{REF})(?P<comment>[ \t]*#[^\n]*)?$",
        re.MULTILINE,
    ),
    # pip: `git+https://github.com/eagle3lint/eagle3lint@REF` (inside quotes: no comment).
    re.compile(rf"(?P<lead>github\.com/eagle3lint/eagle3lint@)(?P<ref>{REF})(?P<comment>)"),
)
"""Where a snippet pins eagle3lint: `ref` is the pin, `comment` what follows it on the line."""

VERSION = re.compile(r"^\d+\.\d+\.\d+$")


class ReleaseError(Exception):
    """A release that cannot be made as asked: the message says why."""


def pins(text: str) -> list[tuple[str, str]]:
    """Each pin in `text` as (ref, the comment after it, '' for none), in order."""
    found = []
    for pattern in PIN_PATTERNS:
        found += [(m["ref"], (m["comment"] or "").strip()) for m in pattern.finditer(text)]
    return found


def pinned(text: str, commit: str, version: str) -> str:
    """`text` with every pin set to `commit`, its comment naming `version` where one fits."""

    def comment(match: re.Match[str], frozen: bool) -> str:
        if match.re is PIN_PATTERNS[2]:
            return ""
        return f"  # frozen: v{version}" if frozen else f" # v{version}"

    for index, pattern in enumerate(PIN_PATTERNS):
        text = pattern.sub(lambda m, f=index == 0: m["lead"] + commit + comment(m, f), text)
    return text


def released(changelog: str, version: str, today: datetime.date) -> str:
    """CHANGELOG.md with its `## Unreleased` section named `version`."""
    heading = re.search(r"^## (\S+)", changelog, flags=re.MULTILINE)
    if not heading or heading.group(1) != "Unreleased":
        raise ReleaseError("CHANGELOG.md has no `## Unreleased` section at the top to release")
    start, end = heading.span()
    return changelog[:start] + f"## {version} ({today.isoformat()})" + changelog[end:]


def current_version(root: Path) -> str:
    """The version `eagle3lint/__init__.py` says."""
    match = re.search(r'^__version__ = "([^"]+)"', (root / VERSION_FILE).read_text(), re.M)
    if not match:
        raise ReleaseError(f"{VERSION_FILE} has no __version__")
    return match.group(1)


def newer(version: str, than: str) -> bool:
    return tuple(map(int, version.split("."))) > tuple(map(int, than.split(".")))


def git(root: Path, *args: str) -> str:
    result = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise ReleaseError(f"git {args[0]} failed: {result.stderr.strip()}")
    return result.stdout


def release(root: Path, version: str, today: datetime.date, dry_run: bool = False) -> str:
    """Make release `version` in the checkout at `root`; the release commit's hash."""
    if not VERSION.match(version):
        raise ReleaseError(f"{version!r} is not a version X.Y.Z")
    old = current_version(root)
    if not newer(version, old):
        raise ReleaseError(f"{version} is not newer than the current version {old}")
    if git(root, "status", "--porcelain", "--untracked-files=no").strip():
        raise ReleaseError("the checkout has uncommitted changes: commit or stash them first")
    if git(root, "tag", "--list", f"v{version}").strip():
        raise ReleaseError(f"the tag v{version} exists already")
    changelog = released((root / CHANGELOG).read_text(), version, today)
    if dry_run:
        print(f"would release {version} (from {old}), tag v{version}, and pin the snippets")
        return ""
    init = root / VERSION_FILE
    init.write_text(init.read_text().replace(f'"{old}"', f'"{version}"', 1))
    (root / CHANGELOG).write_text(changelog)
    git(root, "commit", "-q", "-m", f"Release {version}", str(VERSION_FILE), str(CHANGELOG))
    git(root, "tag", "-a", f"v{version}", "-m", f"eagle3lint {version}")
    commit = git(root, "rev-parse", "HEAD").strip()
    changed = []
    for snippet in SNIPPETS:
        path = root / snippet
        if path.is_file():
            text = path.read_text()
            if (new := pinned(text, commit, version)) != text:
                path.write_text(new)
                changed.append(str(snippet))
    if changed:
        git(root, "commit", "-q", "-m", f"Snippets pin {version} ({commit[:12]})", *changed)
    print(f"released {version}: commit {commit}, tag v{version}")
    print(f"push both: git push origin main v{version}")
    return commit


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="release.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("version", metavar="X.Y.Z")
    parser.add_argument("--dry-run", action="store_true", help="say what would change")
    args = parser.parse_args(argv)
    try:
        release(REPO, args.version, datetime.date.today(), args.dry_run)
    except ReleaseError as exc:
        print(f"release.py: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
