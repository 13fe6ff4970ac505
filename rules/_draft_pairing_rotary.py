"""The draft-pairing check of a head's rotary against the rotation it was trained with (EAG646).

speculators before 0.7.0 trained its heads with full rotation while their config kept the
target's `partial_rotary_factor` (`PairingAnalysis.head_rotary`); where the release applies that
factor (`DrafterContract.rotary`, read from its sources) the head is served a rotation it never
saw. Nothing fails: the drafts are just rejected.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from eagle3lint.api import Finding, PairingAnalysis, Rule

Locate = Callable[[str], tuple[str, int]]


class RotaryChecks(Rule):
    """The rotary half of the draft-pairing rule (mixed into it)."""

    def _rotary(self, analysis: PairingAnalysis, at: Locate) -> Iterator[Finding]:
        head = analysis.head_rotary
        if head is None or analysis.resolution.method != "eagle3":
            return
        applied = analysis.facts.rotary.reads(head.place)
        if applied is None:
            return
        where = "transformer_layer_config" + (
            ".rope_parameters" if head.place == "rope_parameters" else ""
        )
        yield self.report(
            "EAG646",
            f"The head was written by speculators {head.version}, which trained it with full "
            f"rotation although its {where} keeps the target's partial_rotary_factor "
            f"{head.factor:g} (speculators#613): vLLM {analysis.release} applies the factor "
            f"({applied[0]}:{applied[1]}) and rotates only part of each attention head. The "
            "head drafts, and almost none of its drafts is accepted, with no error.",
            *at("transformer_layer_config"),
            hint=f"Set {where}.partial_rotary_factor to 1.0, the rotation the head was trained "
            "with (an MRoPE config also scales mrope_section by 1 / factor, as speculators 0.7.0 "
            "does), or retrain it with speculators 0.7.0 or later.",
        )
