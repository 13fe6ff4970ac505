"""Control characters shown as escapes, so that a file name or a message cannot forge output.

A file named `x\n::error file=a.py::…` printed as is would put a workflow command of its own
on a line of a CI log (GitHub Actions reads them from any output), or a fake summary in the
text report; ANSI escape sequences would restyle or erase the terminal, and bidirectional
overrides would show a name other than the real one.
"""

from __future__ import annotations

import re

_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """`text` with every control, line-separator and bidi-override character written as its
    Python escape (`\\n`, `\\x1b`, `\\u202e`): one line, shown as it really is."""
    return _UNPRINTABLE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)
