"""Which code path the forward-taps findings are on: a decoder the checkpoint picks, and the
model runners that run a decoder's taps under pipeline parallelism."""

from __future__ import annotations

from typing import Any

from eagle3lint.api import RuleContext, Target, analyse_pairing


def _checkpoint_chooses(owner: Target) -> bool:
    """`self.language_model = init_vllm_registered_model(...)` with no `architectures=`: the
    checkpoint's text config names the language model's architecture."""
    found = owner.init_assign("language_model")
    if found is None:
        return False
    assign = found[1]
    callee = (assign.callee or "").rsplit(".", 1)[-1]
    return callee == "init_vllm_registered_model" and not assign.architectures


def pp_runners(target: Target, ctx: RuleContext) -> tuple[str, ...] | None:
    """The runners that run this decoder's taps under pipeline parallelism: () for every
    runner; V1 alone where V2 refuses a decoder that does not declare the relay (0.30 on);
    None where V2 is the only runner and refuses it, or where `pair` was told of one pipeline
    rank (every index is then global). V2 asks the flag, not the forward: a subclass that
    inherits it over a forward that does not relay still runs there (`pp_relay`)."""
    if ctx.pairing is not None and ctx.pairing.pipeline_size == 1:
        return None
    runners = ctx.contract.runners
    if runners is None or not runners.v2_pp_needs_relay or target.pp_relay.declared is not None:
        return ()
    return tuple(r for r in runners.present if r != "v2") or None


def requested_ids(target: Target, ctx: RuleContext, option: Any) -> list[int] | None:
    """The layer ids the drafter requests: the rule's `aux-layers` option, else under `pair`
    the ids its runner takes from the draft config (or the target's default)."""
    if option is not None or ctx.pairing is None:
        return option
    tapped = analyse_pairing(ctx.pairing, target).tapped_ids
    return tapped if tapped is not None and all(isinstance(k, int) for k in tapped) else None


def unresolved_decoder_note(owner: Target) -> tuple[str, str] | None:
    """An info note (message, hint) for a decoder built where no vLLM class says which: by
    transformers' `AutoModel` (the Transformers backend) or by the checkpoint's text config;
    None when neither explains it (EAG308 then warns)."""
    name = owner.ref.name
    if owner.builds_auto_model:
        return (
            f"{name} builds its decoder with transformers' AutoModel (vLLM's Transformers "
            "backend): the backend records the aux hidden states with transformers' output "
            "recorders, not with taps in a layer loop of vLLM's code.",
            "What transformers' model decides is checked by EAG412/EAG413 (its embedding) and "
            "EAG421-EAG424 (its capture).",
        )
    if _checkpoint_chooses(owner):
        return (
            f"{name} builds its language model with init_vllm_registered_model from the "
            "checkpoint's text config: the decoder whose forward taps run is the one of the text "
            "architecture the checkpoint names, checked as its own target.",
            "Check that architecture: `--arch <text_config.architectures[0]>`.",
        )
    return None
