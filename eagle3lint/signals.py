"""SIGTERM as an interruption, and worker processes that do not outlive the run.

A run is stopped by Ctrl-C (SIGINT, which Python raises as `KeyboardInterrupt`) or by SIGTERM
(a CI job cancelled, `timeout`, a container stopped), whose default is to die on the spot: no
`finally` block runs, nothing is cleaned up, and the parser processes, blocked on a queue whose
other end died, live on. Here:

- `terminate_as_interrupt()`: while it is active, SIGTERM raises `Terminated` (a
  `KeyboardInterrupt`) in the main thread, so every cleanup that Ctrl-C gets runs for SIGTERM
  too; the command line then exits 2 with "terminated". Code that must finish a step before it
  can stop (`fix`'s renames) catches `KeyboardInterrupt` and tells the two apart by type. Both
  signals are held while the main thread is inside the process pool's own code (starting a
  worker, a thread or shutting them down), which an exception raised there leaves half done
  ("cannot join thread before it is started"): they are raised a moment later, once it is out.
  When the block is left by an interruption, every pool still open is stopped (`stop_pool`), so
  that no worker outlives the run and no pool is left for the interpreter to close at exit,
  where CPython 3.11 races with the pool's own thread ("Bad file descriptor").
- `worker_pool()`: a process pool whose workers die with the process that started them,
  however it dies (kill -9 included): on Linux the kernel kills them (`PR_SET_PDEATHSIG`),
  elsewhere a thread in each watches its parent. Workers ignore SIGINT (a terminal sends it to
  every process of the job: the parent decides what stops) and die of SIGTERM.
- `stop_pool()`: cancel what a pool has not started and end its workers now, for a pool whose
  tasks are long (`matrix` checks a whole release in each).
- `held()`: a stretch of work no interruption may cut (`fix` renaming files, or putting them
  back): a signal arriving in it is raised when it ends.

SIGHUP (the terminal closed) stops a run as SIGTERM does.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

PR_SET_PDEATHSIG = 1
"""prctl(2): the signal a process gets when the thread that created it ends."""
WATCH_EVERY = 1.0
"""Seconds between two looks at the parent, where the kernel cannot be asked to do it."""
HELD_FOR = 0.01
"""Seconds before a signal held out of the pool's code is delivered again."""
POOL_CODE = (
    os.sep + os.path.join("concurrent", "futures", "process.py"),
    os.sep + "multiprocessing" + os.sep,
)
"""Where an interruption is held: the process pool's own code and what it calls."""
INTERRUPTIONS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

_deferred: list[int] = []
"""Signals that arrived where they could not be raised, to be raised as soon as they can."""
_holding = 0
"""How many `held()` blocks the main thread is in."""

_pools: weakref.WeakSet[ProcessPoolExecutor] = weakref.WeakSet()
"""The pools `worker_pool` made that are not garbage yet (closed ones included: stopping a
closed pool does nothing)."""


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP arrived (raised in the main thread, like Ctrl-C's KeyboardInterrupt)."""


@contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM raises `Terminated`, and SIGINT `KeyboardInterrupt`, in the main thread while
    the block runs, out of the process pool's code (elsewhere than in the main thread, where
    Python runs no signal handler, it does nothing)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    wake = threading.Event()
    finished = threading.Event()
    main = threading.main_thread().ident

    def deliver_again() -> None:
        # Started beforehand (a signal handler that starts a thread could deadlock); a real
        # signal, not `interrupt_main`, so that a blocking wait of the main thread ends.
        while wake.wait() and not finished.is_set():
            wake.clear()
            time.sleep(HELD_FOR)
            while _deferred and not _holding and not finished.is_set():
                signal.pthread_kill(main, _deferred.pop())  # type: ignore[arg-type]

    def interrupt(signum: int, frame: FrameType | None) -> None:
        if _holding or _in_pool_code(frame):
            _deferred.append(signum)
            if not _holding:  # `held()` raises its own when it ends
                wake.set()
        elif signum == signal.SIGINT:
            raise KeyboardInterrupt
        else:
            raise Terminated(f"terminated ({signal.Signals(signum).name})")

    threading.Thread(target=deliver_again, name="eagle3lint-signals", daemon=True).start()
    previous = {number: signal.signal(number, interrupt) for number in INTERRUPTIONS}
    try:
        yield
    except KeyboardInterrupt:
        for pool in list(_pools):
            stop_pool(pool)
        raise
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        finished.set()
        wake.set()


@contextmanager
def held() -> Iterator[None]:
    """Within the block, an interruption (under `terminate_as_interrupt`) waits: it is raised
    as the block ends, so the block (renaming a batch of files, putting them back) is never
    cut in the middle. Blocking the signals would not do: the kernel hands a signal to any
    thread that does not block it, and Python runs its handler in the main thread anyway."""
    global _holding
    _holding += 1
    try:
        yield
    finally:
        _holding -= 1
        if not _holding and _deferred:
            signal.raise_signal(_deferred.pop())


def _in_pool_code(frame: FrameType | None) -> bool:
    while frame is not None:
        if any(part in frame.f_code.co_filename for part in POOL_CODE):
            return True
        frame = frame.f_back
    return False


def worker_pool(
    workers: int,
    initializer: Callable[..., object] | None = None,
    initargs: tuple[Any, ...] = (),
) -> ProcessPoolExecutor:
    """`ProcessPoolExecutor(workers, initializer, initargs)` whose workers die with this
    process. Create it from the main thread: the kernel kills the workers when the thread that
    started them ends."""
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(
        workers, initializer=_start_worker, initargs=(os.getpid(), initializer, initargs)
    )
    _pools.add(pool)
    return pool


def stop_pool(pool: ProcessPoolExecutor) -> None:
    """Cancel the tasks `pool` has not started, end its workers without waiting for the
    running ones, and close it."""
    # The executor has no public way to end running tasks before Python 3.14.
    for worker in list((getattr(pool, "_processes", None) or {}).values()):
        if worker.is_alive():
            worker.terminate()
    pool.shutdown(wait=True, cancel_futures=True)  # its thread sees the workers gone: at once
    _pools.discard(pool)


def _start_worker(
    parent: int, initializer: Callable[..., object] | None, initargs: tuple[Any, ...]
) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the parent's handler, inherited by fork
    _die_with(parent)
    if initializer is not None:
        initializer(*initargs)


def _die_with(parent: int) -> None:
    """End this process when process `parent` ends (at once, if it already has)."""
    if not _kernel_kills_us_with_parent():
        threading.Thread(target=_watch, args=(parent,), daemon=True).start()
    if os.getppid() != parent:  # it died before we asked
        os._exit(1)


def _kernel_kills_us_with_parent() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(WATCH_EVERY)
    os._exit(1)
