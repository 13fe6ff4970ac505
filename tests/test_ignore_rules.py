"""git's ignore rules without git: the folder listing agrees with `git check-ignore`.

Each case builds a tree, writes `.gitignore` files and `.git/info/exclude`, and compares the
Python files `python_files` lists with the files git itself does not ignore, asked of
`git check-ignore --no-index` in a throwaway repository the test creates (its configuration is
git's default, without the system's or the user's). Hypothesis generates patterns from the
pieces wildmatch gives a meaning to (`*`, `**`, `?`, classes, escapes, `!`, trailing spaces)
and names holding the same bytes.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_hostile import no_hang

from eagle3lint.sources.ignore import MAX_STATES
from eagle3lint.sources.walk import MAX_IGNORE_BYTES, python_files

GIT_ENV = {
    "PATH": os.environ["PATH"],
    "HOME": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "LC_ALL": "C",
}


def git_repository(root: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(root)], check=True, env=GIT_ENV)
    return root


def make_tree(root: Path, files: list[bytes], ignores: dict[bytes, bytes]) -> None:
    """`files` (paths relative to `root`) created empty; `ignores`: path → content."""
    base = os.fsencode(root)
    for rel in files:
        path = os.path.join(base, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb"):
            pass
    for rel, content in ignores.items():
        path = os.path.join(base, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(content)


def git_keeps(root: Path, files: list[bytes]) -> set[bytes]:
    """The files git does not ignore (a file in an ignored folder is ignored)."""
    result = subprocess.run(
        ["git", "-C", str(root), "check-ignore", "--no-index", "-z", "--stdin"],
        input=b"\0".join(files),
        capture_output=True,
        env=GIT_ENV,
        check=False,
    )
    assert result.returncode in (0, 1), result.stderr
    return set(files) - set(result.stdout.split(b"\0"))


def listed(folder: Path, root: Path) -> set[bytes]:
    return {os.fsencode(p.relative_to(root)) for p in python_files(folder)}


def agree(root: Path, files: list[bytes], ignores: dict[bytes, bytes]) -> set[bytes]:
    """Build the case in `root` (a new repository); assert the listing is git's; return it."""
    git_repository(root)
    make_tree(root, files, ignores)
    expected = git_keeps(root, files)
    assert listed(root, root) == expected
    return expected


NAME = st.text("ab[]*?\\ !#-^\u00e9", min_size=1, max_size=3)
PIECES = [
    "a", "b", "*", "**", "?", "/", "[", "]", "!", "^", "-", "\\", " ", ".py", "#",
    "[a-b]", "[!a]", "[]a]", "[^b]", "[[:alpha:]]", "[[:punct:]]", "[\\]]", "\u00e9", "\r",
]  # fmt: skip
LINE = st.lists(st.sampled_from(PIECES), min_size=1, max_size=6).map("".join)
RULES = st.lists(LINE, max_size=5).map(lambda lines: "\n".join(lines).encode())


@st.composite
def cases(draw: st.DrawFn) -> tuple[list[bytes], dict[bytes, bytes]]:
    paths = draw(st.lists(st.lists(NAME, min_size=1, max_size=3), min_size=1, max_size=8))
    files = sorted({os.fsencode("/".join(parts) + ".py") for parts in paths})
    ignores = {b".gitignore": draw(RULES), b".git/info/exclude": draw(RULES)}
    nested = [f.rsplit(b"/", 1)[0] for f in files if b"/" in f]
    if nested:
        ignores[draw(st.sampled_from(nested)) + b"/.gitignore"] = draw(RULES)
    return files, ignores


@pytest.mark.slow  # 300 generated trees, each listed by git: the explicit cases are fast
@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(case=cases())
def test_the_listing_is_gits_for_generated_patterns_and_names(
    case: tuple[list[bytes], dict[bytes, bytes]],
) -> None:
    files, ignores = case
    with tempfile.TemporaryDirectory() as name:
        root = Path(name)
        kept = agree(root, files, ignores)
        # A subfolder walked alone still takes the rules of the folders above it.
        sub = files[0].rsplit(b"/", 1)[0] if b"/" in files[0] else None
        if sub is not None and any(f.startswith(sub + b"/") for f in kept):
            inside = {f for f in kept if f.startswith(sub + b"/")}
            assert listed(root / os.fsdecode(sub), root) == inside


# (pattern, the files it ignores, the files it keeps): git's semantics, each checked with git.
TABLE = [
    ("*.py", ["a.py", "x/b.py"], []),
    ("a.py", ["a.py", "x/a.py"], ["b.py", "xa.py"]),
    ("/a.py", ["a.py"], ["x/a.py"]),
    ("x/a.py", ["x/a.py"], ["y/x/a.py", "a.py"]),
    ("x/", ["x/a.py", "y/x/a.py"], ["x.py"]),
    ("x/*", ["x/a.py", "x/y/a.py"], ["y/x/a.py"]),
    ("x/**", ["x/a.py", "x/y/a.py"], ["xa/a.py"]),
    ("**/x/a.py", ["x/a.py", "y/x/a.py", "y/z/x/a.py"], ["xx/a.py"]),
    ("x/**/a.py", ["x/a.py", "x/y/a.py", "x/y/z/a.py"], ["x/ya.py"]),
    ("x/**/**/a.py", ["x/a.py", "x/y/a.py", "x/y/z/a.py"], ["x/ya.py"]),
    ("x**/a.py", ["x/a.py", "xy/a.py", "xy/z/a.py", "xa.py"], ["y/x/a.py"]),
    ("*a*a*a*a*a*b.py", ["aaaaab.py"], ["aaaab.py"]),
    ("[a-c].py", ["a.py", "b.py"], ["d.py", "-.py"]),
    ("[!a].py", ["b.py"], ["a.py"]),
    ("[^a].py", ["b.py"], ["a.py"]),
    ("[]a].py", ["].py", "a.py"], ["b.py"]),
    ("[[:digit:]x].py", ["1.py", "x.py"], ["a.py"]),
    ("[[:bogus:]].py", [], ["b.py", "[.py"]),
    ("[a.py", [], ["[a.py", "a.py"]),
    ("\\[a].py", ["[a].py"], ["a.py"]),
    ("?.py", ["a.py"], ["\u00e9.py", "ab.py"]),
    ("a.py ", ["a.py"], []),
    ("a.py\\ ", [], ["a.py"]),
    ("\\#a.py", ["#a.py"], ["a.py"]),
    ("\\!a.py", ["!a.py"], ["a.py"]),
    ("*.py\n!keep.py", ["a.py"], ["keep.py"]),
    ("x/\n!x/keep.py", ["x/keep.py"], []),
    ("# a.py\n\n", [], ["a.py", "# a.py"]),
    ("a.py\r", ["a.py"], []),
]


@pytest.mark.parametrize(("rules", "ignored", "kept"), TABLE)
def test_gits_rules_one_by_one(
    tmp_path: Path, rules: str, ignored: list[str], kept: list[str]
) -> None:
    files = [os.fsencode(f) for f in ignored + kept]
    assert agree(tmp_path, files, {b".gitignore": rules.encode()}) == {os.fsencode(f) for f in kept}


def test_nested_rules_override_the_ones_above_and_info_exclude_is_lowest(tmp_path: Path) -> None:
    files = [b"a.py", b"c.py", b"d.py", b"x/a.py", b"x/b.py", b"x/y/b.py", b"x/y/c.py"]
    ignores = {
        b".git/info/exclude": b"c.py\nd.py\n",
        b".gitignore": b"!c.py\n/x/*.py\n",
        b"x/.gitignore": b"!b.py\n",
        b"x/y/.gitignore": b"*.py\n!b.py\n",
    }
    assert agree(tmp_path, files, ignores) == {b"a.py", b"c.py", b"x/b.py", b"x/y/b.py"}


def test_a_worktrees_info_exclude_is_the_common_one(tmp_path: Path) -> None:
    main = git_repository(tmp_path / "main")
    (main / "info.py").write_text("")
    (main / ".git" / "info" / "exclude").write_text("excluded.py\n")
    for args in (["commit", "-q", "--allow-empty", "-m", "x"], ["worktree", "add", "-q", "../wt"]):
        subprocess.run(
            ["git", "-C", str(main), "-c", "user.name=t", "-c", "user.email=t@t", *args],
            check=True,
            env=GIT_ENV,
        )
    tree = tmp_path / "wt"
    (tree / "excluded.py").write_text("")
    (tree / "kept.py").write_text("")
    assert git_keeps(tree, [b"excluded.py", b"kept.py"]) == {b"kept.py"}
    assert listed(tree, tree) == {b"kept.py"}


def test_a_pathological_pattern_on_a_long_name_takes_no_time(tmp_path: Path) -> None:
    """`*a*a*a*a*a*b` against a 200-byte name took pathspec's regex 297 s; git's own
    backtracking matcher is no faster, so git is not asked here."""
    names = ["a" * 250 + ".py", "/".join(["a" * 250] * 12) + "/" + "a" * 250 + ".py"]
    for name in names:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    (tmp_path / ".gitignore").write_text(
        "*a*a*a*a*a*b\n**/*a*a*a*a*a*a*a*a*a*a*b\n" + "*a" * 2000 + "*b\n"
    )
    with no_hang(10):
        assert sorted(p.relative_to(tmp_path).as_posix() for p in python_files(tmp_path)) == (
            sorted(names)
        )


def test_ignore_files_past_the_budget_name_their_folder(tmp_path: Path) -> None:
    """Past the budget, a folder is named as not checked (exit 2 in a run), never slow."""
    (tmp_path / "fine.py").write_text("")
    heavy = tmp_path / "heavy"
    heavy.mkdir()
    (heavy / "hidden.py").write_text("")
    (heavy / ".gitignore").write_text("*a*a*a*a*b.py\n" * (MAX_STATES // 8))
    huge = tmp_path / "huge"
    huge.mkdir()
    (huge / "hidden.py").write_text("")
    (huge / ".gitignore").write_text("x\n" * (MAX_IGNORE_BYTES // 2 + 1))
    unreadable: dict[Path, str] = {}
    with no_hang(10):
        assert python_files(tmp_path, unreadable=unreadable) == [tmp_path / "fine.py"]
    assert unreadable == {
        heavy: f"folder not checked: cannot apply {heavy}/.gitignore: with the ignore files "
        f"above it, over {MAX_STATES:,} states of wildcard patterns",
        huge: f"folder not checked: cannot apply {huge}/.gitignore: .gitignore is 1.0 MB, "
        "over the 1 MiB limit",
    }
