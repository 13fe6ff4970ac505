"""Signals as Python sees them: SIGTERM and SIGHUP end a run the way Ctrl-C does, and a short
stretch of work can hold all three off until it is done.

By default SIGTERM kills the process where it stands, running no `finally`: a `fix` killed so
in the middle of its renames would leave half a target repaired. Raised as an exception
instead, it unwinds through the same clean-up as Ctrl-C.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

STOPPING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised where the main thread was (a KeyboardInterrupt, so every
    handler of Ctrl-C handles it too)."""


def _raise(signum: int, _frame: object) -> None:
    raise Terminated(signal.Signals(signum).name)


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM and SIGHUP raise `Terminated` (main thread only; elsewhere the
    block runs as it is)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, _raise) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@contextlib.contextmanager
def held() -> Iterator[None]:
    """Hold SIGINT, SIGTERM and SIGHUP off for the block: they are delivered when it ends, so
    the block (a batch of renames, putting files back) is never cut in the middle."""
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, STOPPING)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
