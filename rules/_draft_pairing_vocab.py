"""The draft-pairing checks of the vocabulary mapping (EAG631-EAG634)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from eagle3lint.api import (
    DraftPairing,
    Finding,
    PairingAnalysis,
    Rule,
    Severity,
)

Locate = Callable[[str], tuple[str, int]]
"""A key of the draft config → where a finding about it is reported (its config.json line)."""


class VocabularyChecks(Rule):
    """The vocabulary half of the draft-pairing rule (mixed into it)."""

    def _vocabulary(
        self, analysis: PairingAnalysis, pairing: DraftPairing, at: Locate
    ) -> Iterator[Finding]:
        checkpoint = pairing.checkpoint
        draft, target = analysis.draft_vocab, analysis.target_vocab
        if checkpoint is None or draft is None or target is None:
            return
        where = at("draft_vocab_size")
        d2t, t2d = checkpoint.find("d2t"), checkpoint.find("t2d")
        if draft < target and d2t is None:
            yield self.report(
                "EAG631",
                f"draft_vocab_size {draft} is below the target's {target} but the checkpoint "
                "has no d2t: the draft-to-target map stays zeros and draft id i is read as "
                "target id i.",
                *where,
            )
        lm_head = checkpoint.weight("lm_head")
        # Each tensor's first dimension; the maps are vectors.
        expected = [(d2t, draft, "draft_vocab_size", 1), (t2d, target, "target vocab", 1)]
        expected.append((lm_head, draft, "draft_vocab_size", 2))
        for tensor, rows, what, dims in expected:
            if tensor is not None and (tensor.shape[:1] != (rows,) or len(tensor.shape) != dims):
                yield self.report(
                    "EAG632",
                    f"{tensor.name} is {list(tensor.shape)} in {tensor.file}, expected {rows} "
                    f"{'rows' if dims == 2 else 'entries'} ({what}).",
                    *where,
                )
        if d2t is not None and d2t.shape == (draft,):
            yield from self._d2t_values(d2t, target, where)
        if lm_head is None and draft != target:
            yield self.report(
                "EAG633",
                f"The checkpoint has no lm_head.weight, so the target's head ({target} tokens) "
                f"is shared, but the draft vocabulary has {draft}.",
                *where,
            )

    def _d2t_values(self, d2t: Any, target: int, where: tuple[str, int]) -> Iterator[Finding]:
        """The drafter scatters its logits to `arange(draft_vocab) + d2t`."""
        values = d2t.integers()
        if values is None:
            return
        mapped = [i + offset for i, offset in enumerate(values)]
        outside = [(i, t) for i, t in enumerate(mapped) if t >= target or t < -target]
        negative = [(i, t) for i, t in enumerate(mapped) if -target <= t < 0]
        for found, outcome in (
            (
                outside,
                f"outside the target vocabulary ({target}): the first draft raises an "
                "IndexError where the drafter scatters its logits",
            ),
            (
                negative,
                "negative: indexing wraps it to the end of the target vocabulary, so "
                "those draft tokens are proposed as other tokens",
            ),
        ):
            if found:
                i, t = found[0]
                yield self.report(
                    "EAG634",
                    f"d2t in {d2t.file} maps {len(found)} draft id{'s' if len(found) > 1 else ''} "
                    f"to target ids {outcome} (draft id {i} → {i} + d2t[{i}] = {t}).",
                    *where,
                )
        if outside or negative:
            return
        if not any(values):
            yield self.report(
                "EAG634",
                f"d2t in {d2t.file} is all zeros: draft id i is read as target id i, which is "
                "right only if the draft vocabulary is the first target ids.",
                *where,
                severity=Severity.WARNING,
            )
            return
        repeated = len(mapped) - len(set(mapped))
        if repeated:
            yield self.report(
                "EAG634",
                f"d2t in {d2t.file} maps {repeated} draft ids onto target ids another draft id "
                "already has: their logits overwrite each other and those tokens are never "
                "proposed.",
                *where,
                severity=Severity.WARNING,
            )
