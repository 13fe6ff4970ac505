"""The runtime suite runs last, and missing oracle venvs start installing at collection time,
so that on a fresh machine the downloads overlap the rest of the test suite."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from venvs import RELEASES, install_all, is_ready

HERE = Path(__file__).resolve().parent


# Last, after `-m`/`-k` deselected: a run that deselects the runtime tests installs nothing.
@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session: pytest.Session, items: list[pytest.Item]) -> None:
    runtime = [item for item in items if HERE in Path(str(item.path)).parents]
    if not runtime:
        return
    items[:] = [item for item in items if item not in runtime] + runtime
    missing = [version for version in RELEASES if not is_ready(version)]
    if missing and len(runtime) < len(items):
        # The fixture that needs a release waits on the same per-release lock, so nothing is
        # installed twice.
        threading.Thread(target=install_all, args=(missing,), daemon=True).start()
