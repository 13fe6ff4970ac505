"""A `fix` run stopped at any point leaves every file as it was or fully repaired (issue 24
item 4, issue 25 item 3): Ctrl-C and SIGTERM are undone by the run itself, kill -9 by
`fix --recover`, and no temporary, lock or journal file stays behind.

The kill points are random (seeded, printed on failure): most fall where files are replaced
(from the moment the run's journal appears until it is gone), the rest anywhere in the run. The
fast tier stops the first few runs of each signal; the rest of the sweep is `slow` (docs/testing.md,
"Tests"), run by the whole suite.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_fix_transaction import KIMI_CONFIG, KIMI_FILE, snapshot
from test_hostile import no_hang
from typer.testing import CliRunner, Result
from vllm_tree import LLAMA, write_vllm_tree

from eagle3lint import journal, storage
from eagle3lint.cli import app

RUNS = 20
"""Runs per signal and tree (the issues' acceptance)."""

FAST_RUNS = 3
"""The first runs of each signal's sweep, the fast tier's share: with the seeds below, each
signal's first three runs stop two runs where files are replaced and one anywhere."""

SIGNALS = {"SIGINT": signal.SIGINT, "SIGTERM": signal.SIGTERM, "SIGKILL": signal.SIGKILL}


def sixty_targets(root: Path) -> Path:
    """A vLLM-shaped tree with 60 registered Llama-like architectures, each in its own file and
    each needing taps and aux-layer methods: `fix --require '*'` rewrites 60 files."""
    write_vllm_tree(root)
    models = root / "vllm" / "model_executor" / "models"
    (models / "llama.py").unlink()
    entries = []
    for i in range(60):
        (models / f"llama{i}.py").write_text(LLAMA.replace("Llama", f"Llama{i}"))
        entries.append(f'    "Llama{i}ForCausalLM": ("llama{i}", "Llama{i}ForCausalLM"),')
    (models / "registry.py").write_text(
        "_TEXT_GENERATION_MODELS = {\n" + "\n".join(entries) + "\n}\n\n"
        "_VLLM_MODELS = {\n    **_TEXT_GENERATION_MODELS,\n}\n"
    )
    return root


def leftovers(root: Path) -> list[str]:
    """Temporary, lock and journal files anywhere under `root`."""
    return sorted(
        str(p.relative_to(root))
        for p in root.rglob(".*")
        if p.name.endswith(storage.TEMP_SUFFIX)
        or p.name in (storage.LOCK_NAME, journal.JOURNAL_NAME)
    )


def eagle3lint(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """A run in a process of its own, as after a real kill."""
    return subprocess.run(
        [sys.executable, "-m", "eagle3lint", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@dataclass
class Case:
    """A tree to fix, the command that fixes it, and the tree before and fully repaired."""

    template: Path
    args: tuple[str, ...]
    before: dict[str, bytes]
    after: dict[str, bytes]
    window: float
    """Seconds the journal of an uninterrupted run is on disk (where files are replaced)."""
    total: float


def calibrate(template: Path, args: tuple[str, ...], work: Path) -> Case:
    """Fix a copy once, uninterrupted, timing when its journal is there."""
    tree = work / "calibration"
    shutil.copytree(template, tree, symlinks=True)
    before = snapshot(tree)
    start = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "eagle3lint", "fix", *args],
        cwd=tree,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    appeared = gone = None
    while process.poll() is None:
        present = (tree / journal.JOURNAL_NAME).exists()
        if present and appeared is None:
            appeared = time.monotonic()
        elif not present and appeared is not None and gone is None:
            gone = time.monotonic()
        time.sleep(0.001)
    end = time.monotonic()
    assert process.returncode in (0, 1), process.returncode
    assert appeared is not None, "the run wrote no journal"
    after = snapshot(tree)
    assert after != before and not leftovers(tree)
    return Case(template, args, before, after, (gone or end) - appeared, end - start)


def interrupt(case: Case, how: str, rng: random.Random, tree: Path) -> str:
    """One run of `fix` on a fresh copy, stopped by `how` at a random point; what was done,
    for the failure message."""
    shutil.copytree(case.template, tree, symlinks=True)
    journal_path = tree / journal.JOURNAL_NAME
    # stderr to a file: a pipe would also wait for whatever else holds it open.
    log = tree.parent / f"{tree.name}.stderr"
    with log.open("w") as stderr_file:
        process = subprocess.Popen(
            [sys.executable, "-m", "eagle3lint", "fix", *case.args],
            cwd=tree,
            stdout=subprocess.DEVNULL,
            stderr=stderr_file,
        )
    start = time.monotonic()
    if rng.random() < 0.25:
        delay = rng.uniform(0, case.total)
        when = f"{delay:.3f} s after start"
        deadline = start + delay
    else:
        # Skewed to the start of the window, where files are staged and renamed (the rest of
        # it is the check after writing).
        delay = case.window * rng.random() ** 2
        when = f"{delay:.3f} s after the journal appeared"
        while process.poll() is None and not journal_path.exists():
            time.sleep(0.0005)
        deadline = time.monotonic() + delay
    while process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.0005)
    finished = process.poll() is not None
    if not finished:
        process.send_signal(SIGNALS[how])
    process.wait(timeout=300)
    stderr = log.read_text()
    log.unlink()
    code = process.returncode
    what = f"{how} {when}{' (the run had ended)' if finished else ''}, exit {code}"
    if how != "SIGKILL" or finished:
        # Ctrl-C and SIGTERM undo the run themselves: nothing is left to recover.
        assert not journal_path.exists(), f"{what}: journal left\n{stderr}"
        # Killed by the signal itself only before Python handles it (start-up) or after the
        # run is over (finalisation); otherwise the run says it was interrupted.
        if code == 2:
            said = "interrupted" in stderr or f"terminated ({how})" in stderr
            assert "Traceback" not in stderr and said, f"{what}\n{stderr}"
        else:
            assert code in (0, 1, -SIGNALS[how]), f"{what}\n{stderr}"
    else:
        recovered = eagle3lint("fix", "--recover", *case.args, cwd=tree)
        assert recovered.returncode == 0, f"{what}: --recover\n{recovered.stderr}"
        what += f"; --recover: {recovered.stderr.strip()}"
    return what


def check_runs(case: Case, how: str, work: Path, seed: int, runs: range) -> None:
    """Interrupted runs (numbered by `runs`, which seed them), two at a time (the machine's
    cores), each on its own copy."""

    def one(run: int) -> str:
        tree = work / f"{how}-{run}"
        what = interrupt(case, how, random.Random(seed * 1000 + run), tree)
        state = snapshot(tree)
        where = f"seed {seed} run {run}: {what}"
        assert not leftovers(tree), f"{where}: left {leftovers(tree)}"
        names = state.keys() | case.before.keys()
        if all(state.get(n) == case.before.get(n) for n in names):
            outcome = "before"
        elif all(state.get(n) == case.after.get(n) for n in names):
            outcome = "repaired"
        else:
            mixed = sorted(n for n in names if state.get(n) != case.before.get(n))
            pytest.fail(f"{where}: half-applied, changed: {mixed}")
        shutil.rmtree(tree)
        return outcome

    with ThreadPoolExecutor(max_workers=2) as pool:
        outcomes = list(pool.map(one, runs))
    print(f"{how}: {outcomes.count('before')} as before, {outcomes.count('repaired')} repaired")


@pytest.fixture(scope="module")
def sixty(tmp_path_factory: pytest.TempPathFactory) -> Case:
    work = tmp_path_factory.mktemp("sixty")
    template = sixty_targets(work / "template")
    return calibrate(template, ("--require", "*", "."), work)


SWEEP = [
    pytest.param(how, runs, id=f"{how}-{part}", marks=marks)
    for how in sorted(SIGNALS)
    for part, runs, marks in (
        ("first", range(FAST_RUNS), ()),
        ("rest", range(FAST_RUNS, RUNS), pytest.mark.slow),
    )
]
"""Each signal's `RUNS` runs, split in two: the whole suite runs both parts, the same runs as
one sweep."""


@pytest.mark.parametrize(("how", "runs"), SWEEP)
def test_a_sixty_file_fix_stopped_anywhere_is_undone_or_complete(
    sixty: Case, how: str, runs: range, tmp_path: Path
) -> None:
    check_runs(sixty, how, tmp_path, seed=sorted(SIGNALS).index(how) + 2500, runs=runs)


@pytest.fixture(scope="module")
def kimi_chain(
    vllm_release: Callable[[str], Path], tmp_path_factory: pytest.TempPathFactory
) -> Case:
    work = tmp_path_factory.mktemp("kimi")
    template = work / "template"
    shutil.copytree(vllm_release("0.16.0"), template / "vllm")
    return calibrate(template, (KIMI_FILE, "--hf-config", str(KIMI_CONFIG)), work)


def test_the_kimi_chain_stopped_anywhere_is_undone_or_complete(
    kimi_chain: Case, tmp_path: Path
) -> None:
    """The seed's chain: kimi_k25.py, deepseek_v2.py, the gate and the proposer (4 files)."""
    assert len([n for n in kimi_chain.after if kimi_chain.after[n] != kimi_chain.before[n]]) == 4
    check_runs(kimi_chain, "SIGKILL", tmp_path, seed=2412, runs=range(RUNS))


# What the journal promises on its own: it is read as untrusted input. The runs are in-process:
# a process of their own would only add its start-up, which the kill sweep above covers.


def fix_in(root: Path, *args: str) -> Result:
    """`eagle3lint fix ARGS` run from `root`."""
    with contextlib.chdir(root):
        return CliRunner().invoke(app, ["fix", *args])


def fixable_tree(root: Path) -> Path:
    write_vllm_tree(root)
    return root


def own_key() -> bytes:
    """The key this user's `fix` runs seal their journals with."""
    key = journal.user_key(create=True)
    assert key is not None
    return key


def plant(root: Path, document: object, key: bytes | None = None) -> Path:
    """`document` as `root`'s journal, sealed with `key` (by default as this user's run would)."""
    path = root / journal.JOURNAL_NAME
    path.write_bytes(journal.sealed(json.dumps(document).encode(), key or own_key()))
    return path


def journal_of(root: Path, path: str, original: bytes, written: bytes) -> dict[str, object]:
    """What a run on `root` that wrote `written` into `path`, which held `original`, journals."""
    return {
        "format": journal.JOURNAL_FORMAT,
        "run": "abc123",
        "pid": 1,
        "root": str(root.resolve()),
        "files": [
            {
                "path": path,
                "original": base64.b64encode(original).decode(),
                "written": [journal.digest(written)],
            }
        ],
    }


def test_recover_with_nothing_to_recover_says_so(tmp_path: Path) -> None:
    root = fixable_tree(tmp_path)
    result = fix_in(root, "--recover", ".")
    assert result.exit_code == 0, result.stderr
    assert "nothing to recover" in result.stderr
    assert not leftovers(root)


@pytest.mark.parametrize("name", ["../outside.py", "/etc/hostname", "vllm/../../outside.py"])
def test_a_journal_naming_a_file_outside_the_tree_is_refused(tmp_path: Path, name: str) -> None:
    """A checkout may carry a journal: it never writes outside the tree it is in."""
    root = fixable_tree(tmp_path / "tree")
    outside = tmp_path / "outside.py"
    outside.write_bytes(b"written\n")
    plant(root, journal_of(root, name, b"planted\n", b"written\n"))
    result = fix_in(root, "--recover", ".")
    assert result.exit_code == 2 and isinstance(result.exception, SystemExit), result.stderr
    assert "outside" in result.stderr
    assert outside.read_bytes() == b"written\n"


@pytest.mark.parametrize(
    "document", [[], {"format": 99}, {"format": 1, "run": "x", "files": [{"path": 3}]}, "x" * 9]
)
def test_a_journal_eagle3lint_did_not_write_is_refused_by_name(
    tmp_path: Path, document: object
) -> None:
    root = fixable_tree(tmp_path)
    plant(root, document)
    before = snapshot(root)
    result = fix_in(root, ".", "--require", "*")
    assert result.exit_code == 2, result.stderr
    assert "is not a journal eagle3lint wrote" in result.stderr
    assert snapshot(root) == before  # the journal stays, for the user to look at


def test_a_journal_others_can_write_is_not_used(tmp_path: Path) -> None:
    root = fixable_tree(tmp_path)
    model = root / "vllm" / "model_executor" / "models" / "llama.py"
    path = plant(
        root, journal_of(root, "vllm/model_executor/models/llama.py", b"x\n", LLAMA.encode())
    )
    path.chmod(0o666)
    result = fix_in(root, "--recover", ".")
    assert result.exit_code == 2 and "not written by you" in result.stderr, result.stderr
    assert model.read_text() == LLAMA


def test_a_file_saved_since_the_interrupted_run_is_left_and_named(tmp_path: Path) -> None:
    root = fixable_tree(tmp_path)
    model = root / "vllm" / "model_executor" / "models" / "llama.py"
    model.write_text(LLAMA + "# saved by the user\n")
    plant(root, journal_of(root, "vllm/model_executor/models/llama.py", LLAMA.encode(), b"fixed\n"))
    result = fix_in(root, "--recover", ".")
    assert result.exit_code == 0, result.stderr
    assert "left as they are (saved since that run" in result.stderr and "llama.py" in result.stderr
    assert model.read_text().endswith("# saved by the user\n")
    assert not leftovers(root)


def test_fix_recover_undoes_a_killed_run_then_fix_repairs(tmp_path: Path) -> None:
    """What kill -9 leaves (a file written, a temporary file staged, the journal, the lock) is
    undone by `fix --recover` (a plain `fix` stops at it: tests/test_hostile_journal.py); the
    next `fix` then repairs the tree whole."""
    root = fixable_tree(tmp_path)
    model = root / "vllm" / "model_executor" / "models" / "llama.py"
    plant(root, journal_of(root, "vllm/model_executor/models/llama.py", LLAMA.encode(), b"half\n"))
    model.write_text("half\n")
    (model.parent / ".llama.py.fix-abc123-0000.eagle3lint").write_text("staged")
    (root / storage.LOCK_NAME).write_text("999999\n")
    result = CliRunner().invoke(app, ["fix", "--recover", str(root), "--require", "*"])
    assert result.exit_code == 0, result.output
    assert "undid the interrupted fix run abc123: restored 1 file(s)" in result.output
    assert "removed 1 temporary file(s)" in result.output
    assert model.read_text() == LLAMA
    result = CliRunner().invoke(app, ["fix", str(root), "--require", "*"])
    assert result.exit_code == 0, result.output
    assert "1 file(s) changed" in result.output
    assert "set_aux_hidden_state_layers" in model.read_text()
    assert not leftovers(root)


def test_fix_diff_warns_of_an_interrupted_run(tmp_path: Path) -> None:
    root = fixable_tree(tmp_path)
    plant(root, journal_of(root, "vllm/model_executor/models/llama.py", b"x\n", b"y\n"))
    result = fix_in(root, "--diff", ".", "--require", "*")
    assert result.exit_code == 1, result.stderr
    assert "interrupted fix run" in result.stderr and "fix --recover" in result.stderr


FORKS_WHILE_LOCKED = """
import os, sys, time
from pathlib import Path
from eagle3lint import storage
with storage.tree_lock(Path(sys.argv[1]), print, print):
    child = os.fork()
    if child == 0:  # as a parse worker started while fix holds the lock
        time.sleep(60)
        os._exit(0)
    print(child, flush=True)
    time.sleep(60)
"""


def test_a_worker_forked_while_fix_holds_the_lock_does_not_keep_it(tmp_path: Path) -> None:
    """Parse workers forked during a locked run share its descriptors: killed, the run's lock
    must still be free for the next run at once (it waited forever before)."""
    process = subprocess.Popen(
        [sys.executable, "-c", FORKS_WHILE_LOCKED, str(tmp_path)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    child = int(process.stdout.readline())
    try:
        process.kill()
        process.wait(timeout=30)
        with no_hang(20), storage.tree_lock(tmp_path, print, print):
            pass
    finally:
        os.kill(child, signal.SIGKILL)
