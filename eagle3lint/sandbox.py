"""Running third-party rule code: its prints kept off the report, its time bounded.

A rule plugin runs in eagle3lint's process (it reads the index, which is not cheap to hand to
another). What it can do by mistake is bounded here: `print()` goes to stderr, so JSON and SARIF
on stdout stay parseable; `sys.exit()` and any exception become an error of that rule; a rule
that runs too long on one target is interrupted. A plugin is code the user installed: this is
a guard against bugs, not a sandbox against malice (see docs/security.md).
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
import time
from collections.abc import Iterator

DEFAULT_RULE_TIMEOUT = 30.0
"""Seconds one rule may take on one target (or a plugin to load). The built-in rules take
milliseconds; the limit only stops a plugin stuck in a loop from hanging CI."""


class RuleTimeout(BaseException):
    """Raised inside plugin code whose time is up. A BaseException so that a plugin's own
    `except Exception` cannot swallow it."""


@contextlib.contextmanager
def plugin_call(seconds: float | None) -> Iterator[None]:
    """Run the block as plugin code: stdout to stderr, interrupted after `seconds`.

    The time box needs SIGALRM, so it applies in the main thread of a POSIX process (where the
    command line runs); elsewhere the block is only isolated from stdout.
    """
    timed = (
        bool(seconds)
        and hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
    )
    with contextlib.redirect_stdout(sys.stderr):
        if not timed:
            yield
            return

        def expired(*_: object) -> None:
            raise RuleTimeout(f"took longer than {seconds:g} s")

        previous = signal.signal(signal.SIGALRM, expired)
        outer, _ = signal.setitimer(signal.ITIMER_REAL, seconds)
        started = time.monotonic()
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
            if outer:
                # An alarm the caller had set goes on with the time it had left.
                left = outer - (time.monotonic() - started)
                signal.setitimer(signal.ITIMER_REAL, max(left, 0.001))
