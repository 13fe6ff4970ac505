"""The one exception the codemod raises."""

from __future__ import annotations


class CodemodRefused(Exception):
    """A rewrite was declined because the source has a shape it cannot change safely.

    `reason` is a sentence for a human: what was expected, and what was found instead.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
