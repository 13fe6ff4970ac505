"""The runtime suite runs last, and missing oracle venvs start installing at collection time,
so that on a fresh machine the downloads overlap the rest of the test suite."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from venvs import RELEASES, install, is_ready

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(session: pytest.Session, items: list[pytest.Item]) -> None:
    runtime = [item for item in items if HERE in Path(str(item.path)).parents]
    if not runtime:
        return
    items[:] = [item for item in items if item not in runtime] + runtime
    missing = [version for version in RELEASES if not is_ready(version)]
    if missing and len(runtime) < len(items):
        # Serial on purpose (each install is disk-bound and ~12 GB); the fixture that needs a
        # release waits on the same per-release lock, so nothing is installed twice.
        threading.Thread(target=lambda: [install(v) for v in missing], daemon=True).start()
