"""The tiers' own machinery: what a fast-tier test changes in the process must not reach the
runtime venv installs that run beside it."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType


def _load_installer() -> ModuleType:
    """tests/venvs.py, loaded at collection as the runtime conftest loads it (before any test)."""
    if "venvs" in sys.modules:
        return sys.modules["venvs"]
    spec = importlib.util.spec_from_file_location("venvs", Path(__file__).parent / "venvs.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["venvs"] = module
    spec.loader.exec_module(module)
    return module


venvs = _load_installer()


def test_runtime_installs_do_not_take_the_fast_tiers_offline_proxy() -> None:
    # Seen on a fresh CI run: the install started at collection ran uv while a fast-tier test had
    # the proxies pointed at a closed port, and every runtime venv failed to install.
    offline = os.environ["HTTPS_PROXY"]  # set by the fast tier's hook (conftest.py)
    assert offline.startswith("http://127.0.0.1:")
    environment = venvs.uv_environment()
    assert all(environment.get(name) != offline for name in ("HTTPS_PROXY", "https_proxy"))
    assert environment["UV_LINK_MODE"] == "hardlink"
