"""The draft-pairing check of the draft's positions against the served context (EAG644).

What a release does with a draft shorter than the served context is read from its sources
(`DrafterContract.context`): it raises the draft's positions, model runner V1 drafts nothing
past them, or the served context is lowered to them; where none applies, the draft's rotary
cache is read past its end. None of these fails at start-up.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from eagle3lint.api import DraftPairing, Finding, PairingAnalysis, Rule, Severity

Locate = Callable[[str], tuple[str, int]]

_NOT_RUN = (
    " (model runner V2: read from its source, not run: vLLM's CPU build enables V2 only with a "
    "Triton that has a CPU backend)"
)


class ContextChecks(Rule):
    """The context half of the draft-pairing rule (mixed into it)."""

    def _context(
        self, analysis: PairingAnalysis, pairing: DraftPairing, at: Locate
    ) -> Iterator[Finding]:
        positions, serving = analysis.draft_positions, analysis.served
        if analysis.resolution.method != "eagle3" or positions is None or serving is None:
            return
        length = serving.length
        if positions >= length:
            return
        facts, release = analysis.facts.context, analysis.release
        runner = analysis.runner or ""
        where = at("max_position_embeddings")
        head = (
            f"The draft holds {positions} positions (max_position_embeddings) and the target "
            f"is served at {length} ({serving.source})"
        )
        fix = (
            f"Use a head trained at {length} positions or more, or serve with --max-model-len "
            f"{positions}"
        )
        raised = facts.raises(analysis.draft_rope)
        if facts.limits(runner) and not raised:
            yield self.report(
                "EAG644",
                f"{head}: vLLM {release} lowers the served context to {positions} "
                f"({facts.limit_path}:{facts.limit_line}, a warning in its log): prompts "
                f"longer than {positions} tokens are refused and none is served past it"
                f"{_NOT_RUN if runner == 'v2' else ''}. {fix}.",
                *where,
                severity=Severity.WARNING,
                hint=f"{fix}, if the context matters more than the speed-up.",
            )
            return
        if runner == "v1" and facts.gate_path:
            tokens = pairing.settings.options.get("num_speculative_tokens")
            k = tokens if isinstance(tokens, int) else "k"
            edit = (
                f', or set "max_position_embeddings": {length} in the draft config (what vLLM '
                "does itself for model runner V2; the head then sees positions it was not "
                "trained at)"
            )
            yield self.report(
                "EAG644",
                f"{head}: vLLM {release}'s model runner V1 caps the drafter at the draft's "
                f"max model len ({facts.gate_path}:{facts.gate_line}): once the batch's longest "
                f"sequence plus {k} draft tokens passes {positions} it stops drafting and has "
                "the target verify placeholder ids 0, which it rejects: speculation is off past "
                f"{positions} tokens of context, for every request batched with such a "
                f"sequence, with no message. {fix}.",
                *where,
                severity=Severity.WARNING,
                hint=f"{fix}{edit if raised else ''}.",
            )
            return
        if raised:
            return
        rope = "/".join(sorted(set(analysis.draft_rope)))
        why = (
            f"raises only {', '.join(facts.raised_rope_types or [])} RoPE"
            if facts.raise_path
            else "does not raise it"
        )
        yield self.report(
            "EAG644",
            f"{head}: vLLM {release} sizes the draft's rotary cache from them and {why} "
            f"(this draft: {rope}), so past {positions} tokens of context the drafter reads "
            "past the cache's end: a device-side assert under CUDA graphs, garbage drafts "
            f"(none accepted) in eager mode (vllm#48894){_NOT_RUN if runner == 'v2' else ''}. "
            f"{fix}.",
            *where,
            hint=f"{fix}.",
        )
