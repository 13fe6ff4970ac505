"""Which Python files a folder holds, as git would list them, without running git.

The folder is walked with the ignore rules git applies (`eagle3lint.sources.ignore`): every
`.gitignore` met on the way down and, when the folder lies in a git repository, the
`.gitignore` files of the folders between it and the repository's root and the repository's
`info/exclude`. An ignored folder is not entered (a `!` rule cannot bring back a file below
it, as in git); the folder given is walked even if a rule above it covers it, since it was
named. Inside a repository, a repository nested in the folder (a submodule, a vendored clone:
a folder holding `.git`) is not entered, since git lists none of its files. The default
excludes (`.venv`, `venv`, `.git`, `build`, `dist`, `node_modules`, `__pycache__`) are always
skipped, and `respect_gitignore=False` turns the ignore rules off. Folders that cannot be
listed are collected with the reason, so a run can name what it did not check instead of
passing over it in silence; so is a folder whose ignore file is there but cannot be applied
(unreadable, over `MAX_IGNORE_BYTES`, or past the matching budget of `ignore.MAX_STATES`),
since its listing would not be git's, and the folder given when folders nest more than
`MAX_DEPTH` levels below it (their files are not listed; the rest of it is).

git is not run: it reads the checked repository's own configuration, and a repository can
make it run commands (`core.fsmonitor`, in a clone's embedded repository or in a checkout's
`.git/config`). Like ruff, which walks with its own ignore matcher too, the listing does not
read git's index (a binary file of the checked repository) either, so ignore rules decide
whether or not git tracks a file: a tracked file that an ignore rule covers is not checked
when its folder is walked (git's `ls-files --cached` listed it); name it as a PATH, or pass
`--no-respect-gitignore`. The user's global excludes file (`core.excludesFile`) is not read:
it is personal, and would make a listing differ between machines. Above the folder, rules are
read only from files `trust.climb` and `trust.may_use` allow, as for the configuration: a
`.gitignore` or a `.git` planted in a shared parent folder hides nothing.
"""

from __future__ import annotations

import os
from fnmatch import fnmatch
from pathlib import Path

from eagle3lint import trust
from eagle3lint.sources.files import SourceNotFound, UnreadableSource, read_regular
from eagle3lint.sources.ignore import IgnoreFile, Ignores, UnusableIgnoreFile

DEFAULT_EXCLUDES = (".venv", "venv", ".git", "build", "dist", "node_modules", "__pycache__")
MAX_IGNORE_BYTES = 1024 * 1024
"""Largest ignore file read: real ones are a few KB (git itself gives up at 100 MB)."""
MAX_GITDIR_LINK_BYTES = 4096
"""A `.git` file (worktree, submodule) holds one `gitdir: PATH` line."""
FOLDER, LINKED = "folder", "linked folder"
MAX_DEPTH = 256
"""Most folder levels walked below a folder given as PATH (or a folder of a tree the contract is
read from). vLLM 0.34's deepest source file is 8 levels below `vllm/`; a chain of 5,000 nested
folders (which made the recursive `os.walk` and `rglob` of Python 3.11 raise RecursionError) is
walked down to here, and for a PATH named."""


def python_files(
    folder: Path,
    *,
    respect_gitignore: bool = True,
    unreadable: dict[Path, str] | None = None,
) -> list[Path]:
    """The `.py` files under `folder`, sorted; folders that cannot be listed go to
    `unreadable` with the reason, and so does `folder` when folders nest more than `MAX_DEPTH`
    levels below it."""
    unlisted: dict[Path, str] = {} if unreadable is None else unreadable
    in_repository, above = False, Ignores()
    if respect_gitignore:
        try:
            in_repository, above = _rules_above(folder)
        except UnusableIgnoreFile as exc:
            unlisted[folder] = f"folder not checked: {exc}"
            return []
    found: list[Path] = []
    # An explicit stack, not recursion: the depth of a tree is its author's to choose.
    stack: list[tuple[str, Ignores, int]] = [(os.fspath(folder), above, 0)]
    while stack:
        current, rules, depth = stack.pop()
        try:
            with os.scandir(current) as listing:
                entries = list(listing)
        except OSError as error:
            _not_listed(unlisted, Path(error.filename or current), error.strerror or str(error))
            continue
        if respect_gitignore:
            try:
                rules = rules.adding(_ignore_file(Path(current, ".gitignore"), Path(current)))
            except UnusableIgnoreFile as exc:
                # Listed without its rules, the folder would not be what git lists: name it.
                unlisted[Path(current)] = f"folder not checked: {exc}"
                continue
        subfolders = []
        for entry in sorted(entries, key=lambda e: e.name):
            kind = _folder_kind(entry)
            if not kind:
                # Links that lead nowhere stay listed: discovery names them as missing inputs.
                if entry.name.endswith(".py") and not rules.ignored(entry.path, False):
                    found.append(Path(entry.path))
                continue
            if kind == LINKED or entry.name in DEFAULT_EXCLUDES:
                continue
            if rules.ignored(entry.path, is_dir=True):
                continue
            if in_repository and os.path.lexists(os.path.join(entry.path, ".git")):
                continue  # another repository: git lists none of its files
            subfolders.append(entry.path)
        if subfolders and depth == MAX_DEPTH:
            unlisted.setdefault(
                folder, f"folders nested more than {MAX_DEPTH} levels below it not checked"
            )
            continue
        stack += [(path, rules, depth + 1) for path in reversed(subfolders)]
    return sorted(found)


def files_under(folder: Path, pattern: str) -> list[Path]:
    """The files below `folder` whose names match `pattern`, sorted: `sorted(folder.rglob(pattern))`
    for files, walked with an explicit stack (Python 3.11's `rglob` recurses once per level) and
    at most `MAX_DEPTH` levels down. For reading a tree's own modules: no ignore rules, nothing
    named; linked folders are not entered, as `rglob` does not enter them."""
    found: list[Path] = []
    stack = [(os.fspath(folder), 0)]
    while stack:
        current, depth = stack.pop()
        try:
            with os.scandir(current) as listing:
                entries = list(listing)
        except OSError:
            continue
        for entry in entries:
            kind = _folder_kind(entry)
            if not kind and fnmatch(entry.name, pattern):
                found.append(Path(entry.path))
            elif kind == FOLDER and depth < MAX_DEPTH:
                stack.append((entry.path, depth + 1))
    return sorted(found)


def _folder_kind(entry: os.DirEntry[str]) -> str:
    """`FOLDER`, `LINKED` (a link to a folder: not entered, as git does not enter one) or ""
    (anything else: a file, a link that leads nowhere, an entry gone since it was listed)."""
    try:
        if not entry.is_dir():
            return ""
        return LINKED if entry.is_symlink() else FOLDER
    except OSError:
        return ""


def _not_listed(unreadable: dict[Path, str], folder: Path, reason: str) -> None:
    unreadable[folder] = f"folder not checked: {reason.lower()}"


def _ignore_file(
    path: Path, folder: Path, trusted: frozenset[int] | None = None
) -> IgnoreFile | None:
    """The rules of the ignore file `path`, whose paths are relative to `folder`; None when
    there is none, it is a link (git does not follow a linked `.gitignore`) or `trusted` users
    alone could not have written it. Raises `UnusableIgnoreFile` when it is there but cannot
    be read (git would warn and list the folder without it)."""
    if os.path.islink(path) or (trusted is not None and not trust.may_use(path, trusted)):
        return None
    try:
        return IgnoreFile.of(folder, read_regular(path, MAX_IGNORE_BYTES, path.name))
    except SourceNotFound:
        return None
    except UnreadableSource as exc:
        raise UnusableIgnoreFile(f"cannot apply {path}: {exc}") from exc


def _rules_above(folder: Path) -> tuple[bool, Ignores]:
    """Whether `folder` lies in a git repository, and the ignore rules that apply to it from
    above: the repository's `info/exclude`, then the `.gitignore` of each folder from the
    repository's root down to (not including) `folder`."""
    above = list(trust.climb(folder, named=True))
    if not above or not os.path.lexists(above[-1][0] / ".git"):
        return False, Ignores()
    root, trusted = above[-1]
    gitdir = _git_folder(root, trusted)
    rules = Ignores()
    if gitdir is not None:
        rules = rules.adding(_ignore_file(gitdir / "info" / "exclude", root, trusted))
    for parent, trusted in reversed(above[1:]):
        rules = rules.adding(_ignore_file(parent / ".gitignore", parent, trusted))
    return True, rules


def _git_folder(root: Path, trusted: frozenset[int]) -> Path | None:
    """The folder holding the repository's `info/`: `.git`, or for a worktree or a submodule
    (`.git` is then a file, `gitdir: PATH`) the folder it names, or the common folder that one
    names in its `commondir` file."""
    dotgit = root / ".git"
    if not trust.may_use(dotgit, trusted):
        return None
    if dotgit.is_dir():
        return dotgit
    link = _first_line(dotgit)
    if link is None or not link.startswith("gitdir:"):
        return None
    gitdir = root / link.removeprefix("gitdir:").strip()
    common = _first_line(gitdir / "commondir")
    return gitdir / common if common else gitdir


def _first_line(path: Path) -> str | None:
    try:
        data = read_regular(path, MAX_GITDIR_LINK_BYTES, path.name)
        return data.decode("utf-8").strip()
    except (UnreadableSource, UnicodeDecodeError):
        return None


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
