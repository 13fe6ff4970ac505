"""SGL1xx sglang-target: what SGLang calls on an EAGLE-3 target, which has no protocol to
inherit, only methods it must have (duck typing): the capture method the model runner calls
once the weights are loaded, and the embedding/head accessor the draft worker binds."""

from __future__ import annotations

from collections.abc import Iterator

from eagle3lint.api import (
    AddEmbedHeadAccessor,
    Code,
    Example,
    Expected,
    Explanation,
    Finding,
    Rule,
    RuleContext,
    Severity,
    SglangCallSite,
    SglangContract,
    SglangPairing,
    SglangTarget,
)

_CAPTURE_RUNTIME = (
    "With `--speculative-algorithm EAGLE3` (and a drafter whose config does not turn "
    "`use_aux_hidden_state` off), SGLang's model runner calls "
    "`model.set_eagle3_layers_to_capture(layer_ids)` on the target right after loading its "
    "weights, before the CUDA graphs are captured; the method turns on the capture of the "
    "chosen layers' hidden states in the decoder's forward. SGLang has no protocol class: the "
    "method is looked up on the instance (behind `hasattr` in 0.5.23, a plain call in 0.5.20 "
    "and earlier)."
)

_SGL101 = Explanation(
    runtime=_CAPTURE_RUNTIME,
    error="```text\nValueError: Model LlamaForCausalLM does not implement "
    "set_eagle3_layers_to_capture, which EAGLE3 aux hidden-state capture requires.\n```\n"
    "(0.5.23); in 0.5.20 and earlier, `AttributeError: 'X' object has no attribute "
    "'set_eagle3_layers_to_capture'`. Either after the whole weight load.",
    releases="Every SGLang release with EAGLE-3 (the method's name has not changed).",
    example="""\
class MyModelForCausalLM(nn.Module):
    def get_embed_and_head(self):
        return self.model.embed_tokens.weight, self.lm_head.weight
""",
    fix="""\
class MyModelForCausalLM(nn.Module):
    def set_eagle3_layers_to_capture(self, layer_ids: Optional[List[int]] = None):
        if not self.pp_group.is_last_rank:
            return
        self.capture_aux_hidden_states = True
        if layer_ids is None:
            num_layers = self.config.num_hidden_layers
            self.model.layers_to_capture = [2, num_layers // 2, num_layers - 3]
        else:
            # SGLang taps a layer's input: the output of layer i is the input of i + 1
            self.model.layers_to_capture = [val + 1 for val in layer_ids]
""",
)

_SGL102 = Explanation(
    runtime="The EAGLE-3 draft worker shares the target's input embedding (and, for heads "
    "that ask, its LM head) with the draft model: it calls `target.get_embed_and_head()` "
    "(from 0.5.22: `get_embed_and_head_for_draft(...)` when the target has it) while the draft is "
    "set up, after both models are loaded.",
    error="```text\nAttributeError: 'Qwen2MoeForCausalLM' object has no attribute "
    "'get_embed_and_head'\n```",
    releases="Every SGLang release with EAGLE-3.",
    example="""\
class MyModelForCausalLM(nn.Module):
    def set_eagle3_layers_to_capture(self, layer_ids=None): ...
""",
    fix="""\
class MyModelForCausalLM(nn.Module):
    def set_eagle3_layers_to_capture(self, layer_ids=None): ...

    def get_embed_and_head(self):
        return self.model.embed_tokens.weight, self.lm_head.weight
""",
)

_SGL103 = Explanation(
    runtime=_CAPTURE_RUNTIME + " A method that does nothing leaves the decoder returning no "
    "aux hidden states; one that raises `NotImplementedError` stops the server.",
    error="`NotImplementedError` after the weight load, or an EAGLE-3 draft fed no aux hidden "
    "states (its first forward fails on their shape).",
    releases="Every SGLang release with EAGLE-3.",
    example="""\
class MyModelForCausalLM(nn.Module):
    def set_eagle3_layers_to_capture(self, layer_ids=None):
        raise NotImplementedError
""",
    fix="""\
class MyModelForCausalLM(nn.Module):
    def set_eagle3_layers_to_capture(self, layer_ids=None):
        self.capture_aux_hidden_states = True
        self.model.layers_to_capture = [val + 1 for val in layer_ids]
""",
)

_SGL104 = Explanation(
    runtime="Releases up to 0.5.10 also call the capture method with no argument: the model "
    "runner when it captures CUDA graphs (`cuda_graph_runner.py`) and in its dummy run, so that "
    "the graphs hold the capture path with the model's default layers.",
    error="```text\nTypeError: MyModelForCausalLM.set_eagle3_layers_to_capture() missing 1 "
    "required positional argument: 'layer_ids'\n```\nwhen the CUDA graphs are captured.",
    releases="The releases whose runner calls the method bare: 0.5.8 and 0.5.10 among those "
    "read (0.5.12 passes the layer ids everywhere); `check` reads the calls from the tree.",
    example="""\
class MyModelForCausalLM(nn.Module):
    def set_eagle3_layers_to_capture(self, layer_ids: List[int]): ...
""",
    fix="""\
class MyModelForCausalLM(nn.Module):
    def set_eagle3_layers_to_capture(self, layer_ids: Optional[List[int]] = None): ...
""",
)

_VALID = """
import torch
from torch import nn


class GoodForCausalLM(nn.Module):
    def set_eagle3_layers_to_capture(self, layer_ids=None):
        self.capture_aux_hidden_states = True
        self.model.layers_to_capture = [val + 1 for val in layer_ids or [1]]

    def get_embed_and_head(self):
        return self.model.embed_tokens.weight, self.lm_head.weight


EntryClass = GoodForCausalLM
"""


_NO_ACCESSOR = """
from torch import nn


class NoAccessorForCausalLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.model = Decoder(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size)

    def set_eagle3_layers_to_capture(self, layer_ids=None):
        self.model.layers_to_capture = [val + 1 for val in layer_ids]


class Decoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)


EntryClass = NoAccessorForCausalLM
"""


class SglangTargetContract(Rule):
    slug = "sglang-target"
    engines = ("sglang",)
    codes = (
        Code(
            "SGL101",
            "missing-capture-method",
            "The target has no set_eagle3_layers_to_capture(), which SGLang calls for EAGLE-3.",
            Severity.ERROR,
            explain=_SGL101,
        ),
        Code(
            "SGL102",
            "missing-embed-head-accessor",
            "The target has no get_embed_and_head(), through which the draft worker shares its "
            "embedding and head.",
            Severity.ERROR,
            fixable=True,
            explain=_SGL102,
        ),
        Code(
            "SGL103",
            "stub-capture-method",
            "The target's set_eagle3_layers_to_capture() does nothing or raises.",
            Severity.ERROR,
            explain=_SGL103,
        ),
        Code(
            "SGL104",
            "capture-method-requires-layers",
            "The release calls set_eagle3_layers_to_capture() with no argument; the target's "
            "requires one.",
            Severity.ERROR,
            explain=_SGL104,
        ),
    )
    valid = (Example(era="s2_gate", source=_VALID), Example(era="s1_bare", source=_VALID))
    invalid = (
        Example(
            era="s2_gate",
            expect=(
                Expected(
                    "SGL101", line=4, message="stops with ValueError: Model NoCaptureForCausalLM"
                ),
                Expected("SGL102", line=4, message="get_embed_and_head_for_draft()"),
            ),
            source="""
from torch import nn


class NoCaptureForCausalLM(nn.Module):
    def forward(self, input_ids, positions, forward_batch):
        return self.model(input_ids, positions, forward_batch)


EntryClass = NoCaptureForCausalLM
""",
        ),
        Example(
            era="s1_bare",
            expect=(
                Expected("SGL102", line=4, message="has no get_embed_and_head()"),
                Expected("SGL104", line=5, message="cuda_graph_runner.py:9"),
            ),
            source="""
from torch import nn


class CaptureOnlyForCausalLM(nn.Module):
    def set_eagle3_layers_to_capture(self, layers_to_capture):
        self.model.layers_to_capture = layers_to_capture


EntryClass = [CaptureOnlyForCausalLM]
""",
        ),
        Example(
            era="s2_gate",
            expect=(Expected("SGL102", line=4, message="has no get_embed_and_head_for_draft()"),),
            source=_NO_ACCESSOR,
            expected_replacement=_NO_ACCESSOR.replace(
                "val in layer_ids]\n",
                "val in layer_ids]\n\n    def get_embed_and_head(self):\n"
                "        return self.model.embed_tokens.weight, self.lm_head.weight\n",
            ),
        ),
        Example(
            era="s2_gate",
            expect=(Expected("SGL103", line=5, message="is a stub"),),
            source="""
from torch import nn


class StubForCausalLM(nn.Module):
    def set_eagle3_layers_to_capture(self, layer_ids=None):
        raise NotImplementedError

    def get_embed_and_head(self):
        return self.model.embed_tokens.weight, self.lm_head.weight


EntryClass = StubForCausalLM
""",
        ),
    )

    def check(self, target: SglangTarget, ctx: RuleContext) -> Iterator[Finding]:  # type: ignore[override]
        contract: SglangContract = ctx.contract  # type: ignore[assignment]
        if not contract.capture_method:
            return  # the tree serves no EAGLE-3 capture: nothing to ask of a target
        cls = target.ref.cls
        path = ctx.path(target.ref)
        capture = target.capture
        pairing = ctx.pairing
        if isinstance(pairing, SglangPairing) and not pairing.uses_aux_hidden_states():
            pass  # `pair` with a head that turns aux states off: the method is never called
        elif capture is None:
            # The call that passes the layers is the one a server start makes first.
            calls = sorted(contract.capture_calls, key=lambda c: c.bare)
            where = _first(tuple(calls))
            yield self.report(
                "SGL101",
                f"{cls.name} has no {contract.capture_method}(): after loading the weights "
                f"SGLang stops with {contract.capture_message(cls.name).rstrip('.')} ({where}).",
                path,
                cls.line,
                cls.column,
                hint=f"Add {contract.capture_method}(self, layer_ids=None) to {cls.name}, setting "
                "the layers its decoder's forward collects aux hidden states from.",
            )
        elif capture.is_stub and capture.method is not None:
            yield self.report(
                "SGL103",
                f"{capture.owner.name}.{contract.capture_method}() is a stub (`pass`, `...` or "
                "`raise NotImplementedError`): EAGLE-3 gets no aux hidden states from this "
                "target.",
                ctx.path(capture.owner),
                capture.method.line,
                capture.method.column,
            )
        elif capture.method is not None and capture.method.required_args:
            bare = [c for c in contract.capture_calls if c.bare]
            if bare:
                yield self.report(
                    "SGL104",
                    f"{capture.owner.name}.{contract.capture_method}() requires "
                    f"{capture.method.required_args} argument(s), but this release also calls "
                    f"it with none ({', '.join(str(c) for c in bare)}): a TypeError when the "
                    "CUDA graphs are captured.",
                    ctx.path(capture.owner),
                    capture.method.line,
                    capture.method.column,
                    hint="Give the layer ids a default (`layer_ids=None`) that picks the "
                    "model's default layers.",
                )
        if contract.embed_head and target.embed_head is None:
            names = " nor ".join(f"{name}()" for name in contract.embed_head)
            parts = target.accessor_parts()
            repair = None
            if not isinstance(parts, str):
                owner, embed, head = parts
                repair = AddEmbedHeadAccessor(
                    ctx.path(owner), cls=owner.name, embed=embed, head=head
                )
            yield self.report(
                "SGL102",
                f"{cls.name} has no {names}: the EAGLE-3 draft worker binds the target's "
                f"embedding through it ({_first(contract.embed_head_calls)}) and stops with "
                f"AttributeError: '{cls.name}' object has no attribute "
                f"'{contract.embed_head[-1]}'.",
                path,
                cls.line,
                cls.column,
                hint="Add get_embed_and_head(self) returning (embed_tokens.weight, "
                "lm_head.weight).",
                repair=repair,
                fix_refused=parts if isinstance(parts, str) else "",
            )


def _first(calls: tuple[SglangCallSite, ...]) -> str:
    return str(calls[0]) if calls else "the model runner"


RULES = [SglangTargetContract]
