"""Shared fixtures: real vLLM releases, fetched once through eagle3lint's own `--vllm` path."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from eagle3lint.index.cache import default_cache_dir
from eagle3lint.sources.download import fetch_release

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"


@pytest.fixture(scope="session")
def release_cache() -> Path:
    """Where releases are cached: the user's eagle3lint cache, shared across test runs."""
    return default_cache_dir()


@pytest.fixture(scope="session")
def vllm_release(release_cache: Path) -> Callable[[str], Path]:
    """`vllm_release("0.16.0")` → the release's `vllm/` folder (downloaded on first use)."""

    def get(version: str) -> Path:
        return fetch_release(version, release_cache)

    return get


@pytest.fixture
def release_copy(vllm_release: Callable[[str], Path], tmp_path: Path) -> Callable[[str], Path]:
    """A writable copy of a release's `vllm/` folder, for tests that rewrite files."""

    def copy(version: str) -> Path:
        target = tmp_path / version / "vllm"
        shutil.copytree(vllm_release(version), target)
        return target

    return copy


@pytest.fixture(autouse=True)
def _plain_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")


@pytest.fixture
def shared_tmp() -> Iterator[Path]:
    """A folder another user may enter (pytest's own tmp folders are private to root)."""
    with tempfile.TemporaryDirectory() as name:
        os.chmod(name, 0o755)
        yield Path(name)


@pytest.fixture
def models(tmp_path: Path) -> Path:
    """An out-of-tree folder holding one good model file."""
    from vllm_tree import LLAMA

    folder = tmp_path / "models"
    folder.mkdir()
    (folder / "good.py").write_text(LLAMA)
    return folder


@pytest.fixture
def era_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A writable copy of the e2_stub era fixture (a vLLM checkout), the working directory."""
    shutil.copytree(FIXTURES / "eras" / "e2_stub", tmp_path / "tree")
    monkeypatch.chdir(tmp_path / "tree")
    return tmp_path / "tree"
