"""Whether a decoder relays its aux hidden states across pipeline-parallel ranks.

vLLM's runner trusts `supports_aux_hidden_states_over_pp`, found through the decoder's MRO; the
relay itself is done by the forward that runs, which takes earlier ranks' aux states out of its
`IntermediateTensors` and puts its own in. A subclass that overrides `forward` without doing so
inherits the flag but not the relay: the runner starts, and the aux states captured on earlier
ranks are lost.
"""

from __future__ import annotations

from dataclasses import dataclass

from eagle3lint.engines.vllm.names import PP_RELAY_FLAG, PP_RELAY_METHODS
from eagle3lint.index.project import ProjectIndex
from eagle3lint.index.refs import ClassRef


@dataclass(frozen=True, slots=True)
class PpRelay:
    """What a decoder says of the relay and what its forward does."""

    declared: ClassRef | None
    """The class whose `supports_aux_hidden_states_over_pp = True` the decoder has; None when
    it has no such True."""
    unrelayed_forward: ClassRef | None = None
    """The class below `declared` whose forward runs without relaying (the flag is inherited,
    the relay is not); None when the forward that runs is the declaring class's or a base's,
    or relays itself."""

    @property
    def relays(self) -> bool:
        return self.declared is not None and self.unrelayed_forward is None


def pp_relay(index: ProjectIndex, decoder: ClassRef) -> PpRelay:
    """The relay of `decoder`: the nearest flag in its MRO, and whether the forward that runs
    is one the flag speaks for. A forward from the declaring class or a base of it is trusted
    (its author set the flag over it); a subclass's forward must call the relay itself."""
    mro = index.mro(decoder)
    declared = next(
        (e for e in mro if isinstance(e, ClassRef) and PP_RELAY_FLAG in e.cls.attrs), None
    )
    if declared is None or declared.cls.attrs[PP_RELAY_FLAG].value != "True":
        return PpRelay(None)
    found = index.forward_of(decoder)
    if found is None or mro.index(found[0]) >= mro.index(declared):
        return PpRelay(declared)
    owner, forward = found
    helper = owner.cls.methods.get(forward.loop_helper or "")
    calls = {
        name
        for method in (owner.cls.methods.get("forward"), helper)
        if method is not None
        for name in method.calls_self
    }
    return PpRelay(declared, None if set(PP_RELAY_METHODS) <= calls else owner)
