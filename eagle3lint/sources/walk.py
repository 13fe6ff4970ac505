"""Which Python files a folder holds, as the tools people use would list them.

Inside a git work tree the list is git's own (`git ls-files --cached --others
--exclude-standard`: tracked files plus untracked ones no ignore rule covers); elsewhere the
`.gitignore` files met on the way down are applied with `pathspec` (git's wildmatch rules).
Either way the default excludes (`.venv`, `venv`, `.git`, `build`, `dist`, `node_modules`,
`__pycache__`) are skipped, and `respect_gitignore=False` turns the ignore rules off.
Folders that cannot be listed are collected with the reason, so a run can name what it did not
check instead of passing over it in silence.
"""

from __future__ import annotations

import os
import re
import subprocess
from fnmatch import fnmatch
from pathlib import Path

from eagle3lint.sources.files import MAX_CONFIG_BYTES, UnreadableSource, read_regular

DEFAULT_EXCLUDES = (".venv", "venv", ".git", "build", "dist", "node_modules", "__pycache__")
_GIT_UNLISTABLE = re.compile(r"could not open directory '(.+)': (.+)$")
"""git's warning for a folder it cannot list (it goes on with the others)."""


def python_files(
    folder: Path,
    *,
    respect_gitignore: bool = True,
    unreadable: dict[Path, str] | None = None,
) -> list[Path]:
    """The `.py` files under `folder`, sorted; folders that cannot be listed go to
    `unreadable` with the reason."""
    unlisted: dict[Path, str] = {} if unreadable is None else unreadable
    listed = _git_listed(folder, unlisted) if respect_gitignore else None
    if listed is None:
        listed = _walked(folder, respect_gitignore, unlisted)
    # Links that lead nowhere stay listed: discovery names them as missing inputs.
    return sorted(
        path
        for path in listed
        if not _default_excluded(path.relative_to(folder)) and not path.is_dir()
    )


def _default_excluded(rel: Path) -> bool:
    return any(part in DEFAULT_EXCLUDES for part in rel.parts[:-1])


def _not_listed(unreadable: dict[Path, str], folder: Path, reason: str) -> None:
    unreadable[folder] = f"folder not checked: {reason.lower()}"


def _git_listed(folder: Path, unreadable: dict[Path, str]) -> list[Path] | None:
    """git's list of the folder's Python files; None outside a work tree or without git."""
    try:
        inside = subprocess.run(
            ["git", "-C", str(folder), "rev-parse", "--is-inside-work-tree"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        if inside.returncode != 0 or inside.stdout.strip() != "true":
            return None
        result = subprocess.run(
            [
                "git",
                "-C",
                str(folder),
                "ls-files",
                "-z",
                "--cached",
                "--others",
                "--exclude-standard",
                "--",
                "*.py",
            ],
            capture_output=True,
            timeout=120,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if result.returncode != 0:
        return None
    for line in result.stderr.decode("utf-8", "surrogateescape").splitlines():
        if match := _GIT_UNLISTABLE.search(line):
            _not_listed(unreadable, folder / match[1].rstrip("/"), match[2])
    names = result.stdout.decode("utf-8", "surrogateescape").split("\0")
    return [folder / name for name in names if name]


def _walked(folder: Path, respect_gitignore: bool, unreadable: dict[Path, str]) -> list[Path]:
    """os.walk with the `.gitignore` files found on the way (root's and every subfolder's)."""
    import pathspec

    def failed(error: OSError) -> None:
        if error.filename:
            _not_listed(unreadable, Path(error.filename), error.strerror or str(error))

    found: list[Path] = []
    specs: list[tuple[Path, pathspec.GitIgnoreSpec]] = []
    for current, dirs, files in os.walk(folder, onerror=failed):
        here = Path(current)
        if respect_gitignore and (here / ".gitignore").is_file():
            try:
                data = read_regular(here / ".gitignore", MAX_CONFIG_BYTES, ".gitignore")
                lines = data.decode("utf-8").splitlines()
                specs.append((here, pathspec.GitIgnoreSpec.from_lines(lines)))
            except (UnreadableSource, UnicodeDecodeError):
                pass

        def ignored(path: Path, is_dir: bool) -> bool:
            for base, spec in specs:
                if path.is_relative_to(base):
                    rel = path.relative_to(base).as_posix() + ("/" if is_dir else "")
                    if spec.match_file(rel):
                        return True
            return False

        dirs[:] = sorted(
            d for d in dirs if d not in DEFAULT_EXCLUDES and not ignored(here / d, True)
        )
        found += [here / f for f in files if f.endswith(".py") and not ignored(here / f, False)]
    return found


class Excluder:
    """`exclude` globs of the configuration, matched against a path relative to the folder of
    the file that set them, relative to each folder given as PATH, and against its name: the
    same answer whichever form the path was given in."""

    def __init__(self, patterns: list[str], bases: list[Path]) -> None:
        self.patterns = patterns
        self.bases = [base.resolve() for base in bases]

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def excludes(self, path: Path | str) -> bool:
        if not self.patterns:
            return False
        resolved = Path(path).resolve()
        forms = [resolved.name]
        forms += [
            resolved.relative_to(b).as_posix() for b in self.bases if resolved.is_relative_to(b)
        ]
        return any(fnmatch(form, pattern) for form in forms for pattern in self.patterns)
