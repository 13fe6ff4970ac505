"""A `fix` journal is undone only if this user's `fix` wrote it, and only when asked (issue
"Hostile input, round 4", item 2). Grouped by root cause:

1. A journal was trusted for being the user's own file, which every file of a clone is: a
   journal a repository carries (or another user's, or one sealed before the key was made) is
   never undone, by `fix` or `fix --recover`; only a journal sealed with this user's key is.
2. A journal could name any file of the tree: a sealed one may name only Python source files,
   never under `.git`, and writes nothing through a link to another kind of file; the writer
   journals no file the reader would refuse.
3. A plain `fix` undid a journal on its way, silently: it stops, says what `fix --recover` would
   put back, and writes nothing.
4. Only a 256 MiB read limit bounded the work (a 49 MB journal took 162 s and 971 MB): a journal
   over `MAX_JOURNAL_BYTES` is refused by its size, an unsealed one under it by its seal, at once.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import secrets
import shutil
import tracemalloc
from pathlib import Path

import pytest
from test_fix_interrupted import fix_in, fixable_tree, journal_of, leftovers, own_key, plant
from test_fix_transaction import snapshot
from test_hostile import no_hang
from vllm_tree import LLAMA, MODEL_FILE

from eagle3lint import fixer, journal, trust
from eagle3lint.engine import CheckOptions, run_check

GIT_CONFIG = b"[core]\n\trepositoryformatversion = 0\n"
PTH = "venv/lib/python3.11/site-packages/distutils-precedence.pth"
PAYLOAD = b"import os; os.system('touch pwned')\n"
"""What a planted journal would put back (a venv's `.pth` runs it whenever Python starts)."""


# -- 1. a journal is undone only if this user's fix sealed it ---------------------------------


def cloned_tree(root: Path) -> dict[str, object]:
    """A fixable tree as a clone brings it, with a git config, a venv's `.pth` and the model
    file; the journal a hostile repository would commit beside them, each file's digest listed
    as what the run wrote, so that undoing it would write `PAYLOAD` into all three."""
    fixable_tree(root)
    (root / ".git").mkdir()
    (root / ".git" / "config").write_bytes(GIT_CONFIG)
    (root / PTH).parent.mkdir(parents=True)
    (root / PTH).write_bytes(b"import _distutils_hack\n")
    files = [
        {
            "path": name,
            "original": base64.b64encode(PAYLOAD).decode(),
            "written": [journal.digest((root / name).read_bytes())],
        }
        for name in (".git/config", PTH, MODEL_FILE)
    ]
    return {"format": 1, "run": "abc123", "pid": 1, "root": str(root.resolve()), "files": files}


@pytest.mark.parametrize("command", [(), ("--recover",)], ids=["fix", "fix --recover"])
@pytest.mark.parametrize("seal", ["none", "another user's", "no key here"])
def test_a_journal_a_repository_carries_is_never_undone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seal: str, command: tuple[str, ...]
) -> None:
    """Before, any `fix` undid it: a journal committed to a repository (the user's own file
    after a clone, mode 0644) wrote chosen bytes into .git/config (where `core.fsmonitor` is a
    command git runs), a venv's `.pth` and the model file."""
    root = tmp_path / "clone"
    document = cloned_tree(root)
    path = root / journal.JOURNAL_NAME
    if seal == "none":
        path.write_text(json.dumps(document))  # as eagle3lint wrote journals before the seal
        said = "is not a journal eagle3lint wrote"
    else:
        if seal == "no key here":  # this user's cache emptied, or never used
            monkeypatch.setenv("EAGLE3LINT_CACHE_DIR", str(tmp_path / "fresh-cache"))
        document["format"] = journal.JOURNAL_FORMAT
        plant(root, document, key=secrets.token_bytes(journal.KEY_BYTES))
        said = "was not written by a fix run of yours on this machine"
    path.chmod(0o644)
    before = snapshot(root)
    result = fix_in(root, *command, ".", "--require", "*")
    assert result.exit_code == 2, result.output
    assert said in result.stderr, result.stderr
    assert snapshot(root) == before  # the journal too, for the user to look at


def test_a_journal_of_another_tree_is_not_undone(tmp_path: Path) -> None:
    """A journal a run of this user's sealed, copied with its tree: it is not this tree's run."""
    first = fixable_tree(tmp_path / "first")
    killed_run(first)
    copy = tmp_path / "copy"
    shutil.copytree(first, copy, symlinks=True)
    before = snapshot(copy)
    result = fix_in(copy, "--recover", ".")
    assert result.exit_code == 2, result.output
    assert f"was written by a fix run on {first.resolve()}, not on this tree" in result.stderr
    assert snapshot(copy) == before


@pytest.mark.parametrize("flaw", ["key others can read", "cache others can write"])
def test_a_run_whose_journal_cannot_be_sealed_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flaw: str
) -> None:
    """Whoever can read the key, or replace it, can seal a journal: fix then writes no file."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("EAGLE3LINT_CACHE_DIR", str(cache))
    assert own_key() == own_key()  # made once, kept
    key = cache / journal.KEY_NAME
    assert key.stat().st_mode & 0o777 == 0o600 and key.stat().st_size == journal.KEY_BYTES
    if flaw == "key others can read":
        key.chmod(0o644)
    else:
        key.unlink()
        cache.chmod(0o777)
        trust.check_folder.cache_clear()  # a run judges its cache once; this is a new run
    root = fixable_tree(tmp_path / "tree")
    before = snapshot(root)
    result = fix_in(root, ".", "--require", "*")
    assert result.exit_code == 2, result.output
    assert "not written: cannot write the journal" in result.stdout
    assert snapshot(root) == before


# -- 2. a sealed journal names only Python source files of the tree ---------------------------


@pytest.mark.parametrize(
    ("name", "why"),
    [
        (".git/config", "is in git's own folder"),
        (".GIT/hooks/post-checkout.py", "is in git's own folder"),
        ("vllm/.Git/config.py", "is in git's own folder"),
        (PTH, "is not a Python source file"),
        ("vllm/model_executor/models/llama.so", "is not a Python source file"),
    ],
)
def test_a_sealed_journal_naming_a_file_fix_never_writes_is_refused(
    tmp_path: Path, name: str, why: str
) -> None:
    root = fixable_tree(tmp_path)
    target = root / name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(GIT_CONFIG)
    plant(root, journal_of(root, name, PAYLOAD, GIT_CONFIG))
    before = snapshot(root)
    result = fix_in(root, "--recover", ".")
    assert result.exit_code == 2, result.output
    assert f"names {name}, which {why}: not used" in result.stderr
    assert snapshot(root) == before


def test_a_sealed_journal_writes_nothing_through_a_link_into_git(tmp_path: Path) -> None:
    """A `.py` name of the tree that is a link to .git/config: the file it leads to is one a
    journal may not name, so it is left, and said."""
    root = fixable_tree(tmp_path)
    config = root / ".git" / "config"
    config.parent.mkdir()
    config.write_bytes(GIT_CONFIG)
    (root / "vllm" / "hook.py").symlink_to(config)
    plant(root, journal_of(root, "vllm/hook.py", PAYLOAD, GIT_CONFIG))
    result = fix_in(root, "--recover", ".")
    assert result.exit_code == 0, result.output
    assert "restored 0 file(s)" in result.stderr and "hook.py" in result.stderr
    assert config.read_bytes() == GIT_CONFIG


@pytest.mark.parametrize("name", [".git/hooks/pre-commit.py", "vllm/model.pth"])
def test_the_writer_journals_no_file_a_journal_may_not_name(tmp_path: Path, name: str) -> None:
    """What the reader refuses the writer never writes, so a run could never be undone half."""
    record = journal.Journal(tmp_path)
    with pytest.raises(journal.JournalError, match="fix writes only the tree's Python source"):
        record.record([(tmp_path / name, b"old\n", b"new\n")])
    assert not (tmp_path / journal.JOURNAL_NAME).exists()


# -- 3. a plain fix never undoes a journal unasked -------------------------------------------


def killed_run(root: Path) -> None:
    """What `fix` leaves when kill -9 stops it right after its renames: the plan written through
    the real journal and writer, and the journal left on disk."""
    with contextlib.chdir(root):
        changed = run_check(CheckOptions(paths=[root], require=["*"])).plan.changed
    assert changed
    record = journal.Journal(root)
    record.record((e.path, e.original, e.new or b"") for e in changed)
    assert fixer.write_edits(changed, record.temp_tag) is None


def test_a_plain_fix_names_what_a_killed_run_left_and_only_recover_undoes_it(
    tmp_path: Path,
) -> None:
    """Before, the next `fix` undid the killed run on its way, saying so only afterwards."""
    root = fixable_tree(tmp_path)
    before = snapshot(root)
    killed_run(root)
    left = snapshot(root)
    assert left[MODEL_FILE] != before[MODEL_FILE]
    result = fix_in(root, ".", "--require", "*")
    assert result.exit_code == 2, result.output
    assert f"undoing it puts back 1 file(s) that run wrote: {MODEL_FILE}." in result.stderr
    assert "Nothing written: run `eagle3lint fix --recover`" in result.stderr
    assert snapshot(root) == left
    result = fix_in(root, "--recover", ".", "--require", "*")
    assert result.exit_code == 0, result.output
    assert "restored 1 file(s)" in result.stderr
    assert snapshot(root) == before
    result = fix_in(root, ".", "--require", "*")
    assert result.exit_code == 0 and "1 file(s) changed" in result.stdout, result.output
    assert not leftovers(root)


def test_the_stop_names_a_few_files_and_counts_the_rest(tmp_path: Path) -> None:
    restored = [tmp_path / "vllm" / f"m{i}.py" for i in range(8)]
    said = journal.Recovery(tmp_path, "abc123", restored, [tmp_path / "x.py"]).preview()
    assert (
        "puts back 8 file(s) that run wrote: vllm/m0.py, vllm/m1.py, vllm/m2.py, vllm/m3.py, "
        "vllm/m4.py and 3 more, and leaves 1 file(s) as they are" in said
    )
    assert said.startswith(f"{tmp_path / journal.JOURNAL_NAME} was left by the interrupted")


# -- 4. a journal's size is bounded, and an unsealed one costs one pass over its bytes --------


@pytest.mark.parametrize(
    ("size", "seal", "said"),
    [
        (49_000_000, b"", f"over the {journal.MAX_JOURNAL_BYTES // 2**20} MiB limit"),
        (
            journal.MAX_JOURNAL_BYTES - 4096,
            journal.SEAL + b"0" * 64 + b"\n",
            "was not written by a fix run of yours",
        ),
    ],
    ids=["49 MB, as planted", "sealed by no one, just under the limit"],
)
def test_a_huge_journal_is_refused_at_once(
    tmp_path: Path, size: int, seal: bytes, said: str
) -> None:
    """Entries that each cost a lookup of a file: as planted, the 49 MB one took 162 s."""
    root = fixable_tree(tmp_path)
    entry = b'{"path": "vllm/m%d.py", "original": "", "written": []}'
    count = size // len(b", " + entry % 10**6)  # each entry that long at most: under `size`
    files = b", ".join(entry % i for i in range(count))
    body = b'{"format": 1, "run": "abc123", "pid": 1, "files": [' + files + b"]}"
    path = root / journal.JOURNAL_NAME
    path.write_bytes(seal + body)
    before = os.stat(path)
    tracemalloc.start()
    try:
        with no_hang(10), pytest.raises(journal.JournalError, match=said):
            journal.recover(root)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 3 * journal.MAX_JOURNAL_BYTES  # read once at most (it took 971 MB)
    assert os.stat(path).st_mtime_ns == before.st_mtime_ns
    assert (root / MODEL_FILE).read_text() == LLAMA


@pytest.mark.parametrize(
    ("limit", "value"), [("MAX_JOURNAL_BYTES", 1024), ("MAX_JOURNAL_FILES", 0)]
)
def test_a_run_that_would_journal_over_the_limits_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limit: str, value: int
) -> None:
    """The writer holds to the bounds the reader does: a journal it writes can be read back."""
    monkeypatch.setattr(journal, limit, value)
    root = fixable_tree(tmp_path)
    before = snapshot(root)
    result = fix_in(root, ".", "--require", "*")
    assert result.exit_code == 2, result.output
    assert "over the journal's limits" in result.stdout
    assert snapshot(root) == before


def test_a_sealed_journal_naming_more_files_than_a_run_writes_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = fixable_tree(tmp_path)
    plant(root, journal_of(root, MODEL_FILE, PAYLOAD, LLAMA.encode()))
    monkeypatch.setattr(journal, "MAX_JOURNAL_FILES", 0)
    with pytest.raises(journal.JournalError, match="is not a journal eagle3lint wrote"):
        journal.recover(root)
    assert (root / MODEL_FILE).read_text() == LLAMA
