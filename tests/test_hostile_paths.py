"""Hostile input, round 4: PATH arguments. A folder nested deeper than the walk goes, and a PATH
that cannot be read, are each a named error for that PATH; the other PATHs are still analysed.

The nested chains are real folders, made and removed one level at a time from inside them (their
paths are far over PATH_MAX, and Python 3.11's `shutil.rmtree` recurses once per level).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from test_hostile import checked
from test_robustness import NOBODY, archs, as_user, error_for
from vllm_tree import ARCH, LLAMA

from eagle3lint.sources.walk import MAX_DEPTH, files_under

ERAS = Path(__file__).resolve().parent.parent / "fixtures" / "eras"
OTHER = "OtherForCausalLM"
DEEP = "DeepForCausalLM"
TOO_DEEP = f"folders nested more than {MAX_DEPTH} levels below it not checked"


def model_folder(parent: Path, name: str, arch: str = ARCH) -> Path:
    folder = parent / name
    folder.mkdir(mode=0o755)
    (folder / f"{name}.py").write_text(LLAMA.replace(ARCH, arch))
    return folder


@contextmanager
def nested(folder: Path, depth: int, bottom: str = "") -> Iterator[None]:
    """`depth` folders `d/d/…/d` in `folder`, `bottom` as `model.py` in the deepest; removed on
    the way out."""
    here = os.getcwd()
    made = 0
    try:
        os.chdir(folder)
        for _ in range(depth):
            os.mkdir("d")
            os.chdir("d")
            made += 1
        if bottom:
            Path("model.py").write_text(bottom)
        os.chdir(folder)
        yield
    finally:
        os.chdir(folder)
        for _ in range(made):
            os.chdir("d")
        Path("model.py").unlink(missing_ok=True)
        for _ in range(made):
            os.chdir("..")
            os.rmdir("d")
        os.chdir(here)


@pytest.mark.parametrize("depth", [MAX_DEPTH, MAX_DEPTH + 1, 5000])
def test_a_deep_folder_chain_is_named_and_the_other_paths_are_checked(
    tmp_path: Path, depth: int
) -> None:
    """5,000 nested folders made `check` an internal error (RecursionError in Python 3.11's
    recursive `os.walk`), and no PATH was analysed."""
    first, last = model_folder(tmp_path, "first"), model_folder(tmp_path, "last", OTHER)
    deep = model_folder(tmp_path, "deep", DEEP)
    bottom = LLAMA.replace(ARCH, "BottomForCausalLM")
    with nested(deep, depth, bottom):
        exit_code, report = checked(str(first), str(deep), str(last))
    if depth <= MAX_DEPTH:
        assert exit_code == 1 and report["errors"] == []
        assert sorted(archs(report)) == ["BottomForCausalLM", DEEP, ARCH, OTHER]
    else:
        assert exit_code == 2
        assert error_for(report, deep) == {
            "path": str(deep),
            "line": None,
            "code": "EAG902",
            "message": TOO_DEEP,
        }
        assert sorted(archs(report)) == [DEEP, ARCH, OTHER]


def test_a_deep_folder_chain_in_a_tree_is_read_past_not_into(tmp_path: Path) -> None:
    """The contract reader listed an SGLang tree's `srt/speculative/` with `rglob`, which
    recurses once per level in Python 3.11: 5,000 nested folders there were an internal error."""
    tree = shutil.copytree(ERAS / "s2_gate", tmp_path / "s2_gate")
    expected = checked(str(tree))
    speculative = tree / "sglang" / "srt" / "speculative"
    with nested(speculative, 5000, "def get_embed_and_head(self): ...\n"):
        assert checked(str(tree)) == expected


def test_files_under_stops_at_the_depth_limit(tmp_path: Path) -> None:
    with nested(tmp_path, MAX_DEPTH + 1, "x = 1\n"):
        assert files_under(tmp_path, "*.py") == []
    (tmp_path / "a.py").write_text("")
    with nested(tmp_path, MAX_DEPTH, "x = 1\n"):
        assert files_under(tmp_path, "*.py") == [
            tmp_path / "a.py",
            tmp_path.joinpath(*["d"] * MAX_DEPTH, "model.py"),
        ]


@pytest.mark.parametrize("alone", [False, True], ids=["among-others", "alone"])
def test_an_unreadable_folder_path_is_named_and_the_others_are_checked(
    shared_tmp: Path, alone: bool
) -> None:
    """A folder PATH the user may not read was a usage box ('Path … is not readable') that
    dropped every other PATH; alone, it is named as well (not 'no model files were found')."""
    closed = model_folder(shared_tmp, "closed", DEEP)
    closed.chmod(0o000)
    paths = [closed]
    if not alone:
        paths = [model_folder(shared_tmp, "first"), closed, model_folder(shared_tmp, "last", OTHER)]
    # Root reads any folder whatever its mode: the folder is unreadable for another user.
    exit_code, report = as_user(NOBODY, lambda: checked(*map(str, paths)))
    assert exit_code == 2
    assert error_for(report, closed)["message"] == "folder not checked: permission denied"
    assert sorted(archs(report)) == ([] if alone else [ARCH, OTHER])


def test_an_unreadable_file_among_paths_is_named_and_the_others_are_checked(
    shared_tmp: Path,
) -> None:
    first, last = model_folder(shared_tmp, "first"), model_folder(shared_tmp, "last", OTHER)
    secret = shared_tmp / "secret.py"
    secret.write_text(LLAMA.replace(ARCH, DEEP))
    secret.chmod(0o000)
    exit_code, report = as_user(NOBODY, lambda: checked(str(first), str(secret), str(last)))
    assert exit_code == 2
    assert error_for(report, secret)["message"] == "permission denied"
    assert sorted(archs(report)) == [ARCH, OTHER]


def test_a_missing_path_among_paths_is_named_and_the_others_are_checked(tmp_path: Path) -> None:
    first, last = model_folder(tmp_path, "first"), model_folder(tmp_path, "last", OTHER)
    missing = tmp_path / "missing"
    exit_code, report = checked(str(first), str(missing), str(last))
    assert exit_code == 2
    assert error_for(report, missing)["message"] == "no such file or directory"
    assert sorted(archs(report)) == [ARCH, OTHER]
