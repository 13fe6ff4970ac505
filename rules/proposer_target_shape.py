"""EAG41x proposer-target-shape: what the EAGLE proposer takes from the target must exist, and
what the drafter it builds beside the target adds must not collide with it.

The proposer's `load_model` shares the target's embedding with the drafter: it reads
`<language model>.model` and that decoder's `embed_tokens` (or `embedding`), before the model
runner ever asks whether the target supports EAGLE-3. A target built another way (GPT-2 keeps
its decoder in `self.transformer`, its embedding in `wte`) fails there, whatever interfaces it
implements. Building the drafter, it names the head's layers after the target's
(`model.layers.<num_hidden_layers>`): a target that names layers of its own there fails first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from eagle3lint.api import (
    DECIDE_WITH_MODEL_TYPE,
    ClassRef,
    Code,
    Example,
    Expected,
    ExternalRef,
    Finding,
    Rule,
    RuleContext,
    Severity,
    Target,
    TargetEmbedding,
    Unverified,
)

from . import _proposer_target_shape_explain as explained

OPAQUE_BASES = frozenset({"Module", "Protocol", "Generic", "object", "ABC"})
"""Bases outside the analysed trees that add no attribute an instance could be asked for: any
other unread base might supply one, and the rule then stays silent."""
DYNAMIC = ("__getattr__", "__getattribute__")


class ProposerTargetShape(Rule):
    slug = "proposer-target-shape"
    codes = (
        Code(
            "EAG411",
            "language-model-without-decoder",
            "The target's language model has no `model` attribute, which the EAGLE proposer "
            "reads to share the target's embedding.",
            Severity.ERROR,
            explain=explained.EAG411,
        ),
        Code(
            "EAG412",
            "decoder-without-embedding",
            "The target's decoder has neither `embed_tokens` nor `embedding`, which the EAGLE "
            "proposer shares with the drafter.",
            Severity.ERROR,
            explain=explained.EAG412,
        ),
        Code(
            "EAG413",
            "transformers-decoder-unread",
            "The target runs on vLLM's Transformers backend and transformers' model class that "
            "decides its input embedding could not be read here.",
            Severity.INFO,
            explain=explained.EAG413,
        ),
        Code(
            "EAG414",
            "layer-names-taken-from-head",
            "The target names modules with layer indices past its layer count, which vLLM gives "
            "the EAGLE-3 head's layers: building the head raises 'Duplicate layer name'.",
            Severity.ERROR,
            explain=explained.EAG414,
        ),
    )

    valid = (
        Example(
            era="e2_stub",
            source="""
from torch import nn
class ShapedModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed_tokens = nn.Embedding(8, 4)
class ShapedForCausalLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = ShapedModel()
""",
        ),
    )
    invalid = (
        Example(
            era="e3_mixin",
            expect=(
                Expected(
                    "EAG411", line=12, message="(its language model, MarkedModel) has no `model`"
                ),
            ),
            source="""
from torch import nn

from .interfaces import SupportsMultiModal


class MarkedModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed_tokens = nn.Embedding(8, 4)


class MarkedForCausalLM(nn.Module, SupportsMultiModal):
    def __init__(self, vllm_config):
        super().__init__()
        with self._mark_language_model(vllm_config):
            self.model = MarkedModel()
""",
        ),
        Example(
            era="e2_stub",
            expect=(Expected("EAG411", line=6, message="has no attribute 'model'"),),
            source="""
from torch import nn
class GPTLikeModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed_tokens = nn.Embedding(8, 4)
class GPTLikeLMHeadModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.transformer = GPTLikeModel()
""",
        ),
        Example(
            era="e2_stub",
            expect=(
                Expected("EAG412", line=6, message="as WteModel, which has none of embed_tokens"),
            ),
            source="""
from torch import nn
class WteModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(8, 4)
class WteForCausalLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = WteModel()
""",
        ),
        # The decoder class as an `__init__` parameter (InternLM2): vLLM's loader builds its
        # default; a subclass passing another builds that one.
        Example(
            era="e2_stub",
            expect=(
                Expected("EAG412", line=6, message="as TokModel, which has none of embed_tokens"),
            ),
            source="""
from torch import nn
class TokModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok_embeddings = nn.Embedding(8, 4)
class TokForCausalLM(nn.Module):
    def __init__(self, *, vllm_config, prefix="", model_type: type[TokModel] = TokModel):
        super().__init__()
        self.model = model_type(vllm_config=vllm_config, prefix=prefix)
class EmbedModel(TokModel):
    def __init__(self):
        super().__init__()
        self.embed_tokens = self.tok_embeddings
class EmbedForCausalLM(TokForCausalLM):
    def __init__(self, *, vllm_config, prefix=""):
        super().__init__(vllm_config=vllm_config, prefix=prefix, model_type=EmbedModel)
class BackForCausalLM(EmbedForCausalLM):
    def __init__(self, *, vllm_config, prefix=""):
        super().__init__(vllm_config=vllm_config, prefix=prefix)
""",
        ),
        # A loop model's later loops name their attention past the layer count (IQuest-Coder's
        # loop model): the head's layer names are taken.
        Example(
            era="e3_mixin",
            expect=(
                Expected(
                    "EAG414",
                    line=27,
                    message="LoopAttention (line 7) puts `unique = loop_idx * total + base` in",
                ),
            ),
            source="""
from torch import nn

from ..layers.attention.attention import Attention


class LoopAttention(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()
        total = config.num_hidden_layers
        base = int(prefix.rsplit(".", 1)[1])
        self.attn = nn.ModuleList()
        for loop_idx in range(2):
            unique = loop_idx * total + base
            named = prefix.replace(f"layers.{base}", f"layers.{unique}")
            self.attn.append(Attention(prefix=f"{named}.attn", vllm_config=None))


class LoopModel(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.embed_tokens = nn.Embedding(8, 4)
        self.layers = nn.ModuleList(
            [LoopAttention(config, prefix=f"{prefix}.layers.{i}") for i in range(2)]
        )


class LoopForCausalLM(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.model = LoopModel(config, prefix="model")
""",
        ),
    )

    def check(self, target: Target, ctx: RuleContext) -> Iterator[Finding]:
        # Every runner reads `.model` and its embedding; the default runner's proposer is quoted.
        shape = (
            ctx.contract.embedding_for(target.runner)
            if target.runner
            else ctx.contract.target_embedding
        )
        if shape is None:
            return
        # The proposer asks `supports_multimodal()`; before the protocol was read (0.10) the
        # wrapper's own `get_language_model` says the same.
        wrapper = target.is_multimodal or target.method("get_language_model") is not None
        if not wrapper:
            yield from self._head_layer_names(target, ctx)
        language = target.configured_language_model(ctx.config_for(target)) if wrapper else target
        if language is None and target.builds_auto_model:
            # The backend's multimodal wrapper: its language model is the `language_model` or
            # `text_model` of the class AutoModel builds, which that class decides as well.
            found = target.auto_model(ctx.model_type)
            if isinstance(found, str):
                yield self._unread_decoder(target, found, ctx)
            return
        if language is None or not _closed(language.mro):
            return
        path, cls = ctx.path(target.ref), target.ref.cls
        where = f"{shape.path}:{shape.line}"
        own = language is target
        name = language.ref.name
        of = "" if own else f" (its language model, {name})"
        earlier = _stopped_earlier(target, ctx)
        if not _provides(language, shape.holder):
            raised = _holder_raises(shape, name)
            others = _other_runners(ctx, shape, lambda each: _holder_raises(each, name))
            reads = f"{target.ref.name}{of} has no `{shape.holder}`"
            yield self.report(
                "EAG411",
                f"{reads}, which the EAGLE proposer ({where}) reads to share the target's "
                f"embedding. {earlier}once it is one, the proposer raises {raised}{others}."
                if earlier
                else f"{reads}: the EAGLE proposer ({where}) reads it to share the target's "
                f"embedding and raises {raised}{others}, after the weights are loaded.",
                path,
                cls.line,
                cls.column,
                hint=(
                    f"Keep the decoder in `self.{shape.holder}`, as vLLM's Llama does"
                    if own
                    else f"Make the language model a class holding its decoder in "
                    f"`self.{shape.holder}` (as LlamaForCausalLM holds LlamaModel), or return one "
                    "from get_language_model"
                )
                + "; adding SupportsEagle3 alone does not make this target run.",
            )
            return
        decoder = language.part(shape.holder)
        if decoder is None:
            if language.builds_auto_model:
                yield from self._auto_model(target, language, shape, ctx)
            return
        if not _closed(decoder.mro) or any(_provides(decoder, a) for a in shape.embeddings):
            return
        built = decoder.ref.name
        consequence = _embedding_consequence(shape, built)
        consequence += _other_runners(ctx, shape, lambda each: _embedding_consequence(each, built))
        builds = (
            f"{target.ref.name}{of} builds `{shape.holder}` as {built}, which has none of "
            f"{', '.join(shape.embeddings)}"
        )
        yield self.report(
            "EAG412",
            f"{builds}, from which the EAGLE proposer ({where}) shares the target's embedding. "
            f"{earlier}once it is one, the proposer {consequence}."
            if earlier
            else f"{builds}: the EAGLE proposer ({where}) shares the target's embedding from it "
            f"and {consequence}.",
            path,
            cls.line,
            cls.column,
            hint=f"Name the decoder's input embedding {' or '.join(shape.embeddings)}.",
            **_raising_runners(ctx, shape),
        )

    def _head_layer_names(self, target: Target, ctx: RuleContext) -> Iterator[Finding]:
        """EAG414. Only a target that is its own language model: a wrapper's decoder sits
        under another prefix (`language_model.model.layers`) than the head's."""
        head = ctx.contract.head_layers
        if head is None:
            return
        renamed = target.renamed_layers()
        if not renamed:
            return
        owner, index = renamed[0]
        line = owner.cls.methods["__init__"].line
        path, cls = ctx.path(target.ref), target.ref.cls
        at = f"line {line}" if ctx.path(owner) == path else f"{ctx.path(owner)}:{line}"
        exception, _, message = f"{head.refusal}model.layers.[...]".partition(": ")
        yield self.report(
            "EAG414",
            f"{target.ref.name} names modules past its layer count: {owner.name} ({at}) puts "
            f"`{index}` in a `layers.` prefix, and from num_hidden_layers on the names are the "
            f"EAGLE-3 head's ({_in_release(ctx, head.path)}:{head.line}): building the head "
            f"raises {exception}: '{message}', after the target's weights are loaded.",
            path,
            cls.line,
            cls.column,
            hint="Name those modules without a layer index past num_hidden_layers (a suffix "
            "of their own); the other fixes do not make this target run.",
        )

    def _unread_decoder(self, target: Target, found: str, ctx: RuleContext) -> Finding:
        """EAG413: transformers' class AutoModel builds is not known here, for the reason
        `found` (the target is then unverified)."""
        path, cls = ctx.path(target.ref), target.ref.cls
        return self.report(
            "EAG413",
            f"{target.ref.name} builds its decoder with transformers' AutoModel, whose class "
            f"decides the embedding the EAGLE proposer shares; not read: {found}.",
            path,
            cls.line,
            cls.column,
            hint="Pass --hf-config (its model_type), or check a vLLM installed with "
            "transformers beside it.",
            unverified=Unverified(
                f"the input embedding of transformers' model for {target.arch}",
                found,
                DECIDE_WITH_MODEL_TYPE
                if "model_type" in found
                else ("a vLLM tree with transformers installed beside it",),
            ),
        )

    def _auto_model(
        self, target: Target, language: Target, shape: TargetEmbedding, ctx: RuleContext
    ) -> Iterator[Finding]:
        """The Transformers backend's decoder is transformers' base model of the checkpoint's
        model_type: its embedding is looked for there."""
        found = language.auto_model(ctx.model_type)
        if isinstance(found, str):
            yield self._unread_decoder(target, found, ctx)
            return
        if found.open_by is not None or any(a in found.attributes for a in shape.embeddings):
            return
        path, cls = ctx.path(target.ref), target.ref.cls
        where = f"{shape.path}:{shape.line}"
        consequence = _embedding_consequence(shape, found.name)
        consequence += _other_runners(
            ctx, shape, lambda each: _embedding_consequence(each, found.name)
        )
        yield self.report(
            "EAG412",
            f"{target.ref.name} runs on the Transformers backend, whose decoder is transformers' "
            f"{found.name} (model_type {found.model_type!r}), which has none of "
            f"{', '.join(shape.embeddings)}: the EAGLE proposer ({where}) shares the target's "
            f"embedding from it and {consequence}.",
            path,
            cls.line,
            cls.column,
            hint=f"{found.name} keeps its input embedding under another name ({found.path}); "
            "the backend would have to expose it as embed_tokens.",
            **_raising_runners(ctx, shape),
        )


def _in_release(ctx: RuleContext, path: str) -> str:
    """`path`, a file of the analysed vLLM, as `vllm/...` (where the release is cached is
    noise in a message)."""
    root = Path(ctx.contract.root)
    return str(Path(path).relative_to(root.parent)) if Path(path).is_relative_to(root) else path


def _raising_runners(ctx: RuleContext, shape: TargetEmbedding) -> dict[str, Any]:
    """EAG412's severity and runners: an error where the default runner's proposer raises; an
    error on the path of the other runners whose proposer raises, where the default runner's
    only runs the drafter with its own embedding (vLLM 0.25.0's V2 shares it without a check,
    V1 raises; the CPU build runs V1); else a warning."""
    if shape.embedding_exception:
        return {}
    raising = tuple(e.runner for e in ctx.contract.target_embeddings if e.embedding_exception)
    if raising:
        return {"runners": raising}
    return {"severity": Severity.WARNING}


def _stopped_earlier(target: Target, ctx: RuleContext) -> str:
    """For a target that is not a SupportsEagle3, where the runner that runs it refuses it
    before its proposer reads the target (V2), that sentence ("vLLM stops earlier ... ; "),
    the later error being what remains once it is one; else ""."""
    if target.implements_eagle3 or not ctx.contract.runtime_check:
        return ""
    refusal = ctx.contract.refusal_for(target.runner)
    if refusal is None or not refusal.before_proposer:
        return ""
    code = "EAG102" if target.language_model is not None else "EAG101"
    return (
        f"vLLM stops earlier, as {target.ref.name} is not a SupportsEagle3: "
        f"{refusal.quoted()} ({code}); "
    )


def _holder_raises(shape: TargetEmbedding, name: str) -> str:
    """What a proposer raises for a language model with no decoder attribute."""
    return "AttributeError: " + (
        shape.holder_error or f"'{name}' object has no attribute '{shape.holder}'"
    )


def _embedding_consequence(shape: TargetEmbedding, built: str) -> str:
    """What a proposer does with a decoder that has none of its embedding attributes."""
    if not shape.embedding_exception:
        return (
            "finds nothing to share, so the drafter runs with its own embedding (never loaded "
            "when its checkpoint has none, as EAGLE-3 heads sharing the target's)"
        )
    raised = shape.embedding_error or f"'{built}' object has no attribute '{shape.embeddings[0]}'"
    unless = (
        f" if the EAGLE-3 head has no embedding of its own (`{shape.unless_head_has}` false)"
        if shape.unless_head_has
        else ""
    )
    return f"raises {shape.embedding_exception}: '{raised}'{unless}"


def _other_runners(
    ctx: RuleContext, shape: TargetEmbedding, said: Callable[[TargetEmbedding], str]
) -> str:
    """What the other runners' proposers do instead, where they say otherwise."""
    others = [
        f"model runner {each.runner.upper()}: {said(each)}"
        for each in ctx.contract.target_embeddings
        if each.runner != shape.runner and said(each) != said(shape)
    ]
    return f" ({'; '.join(others)})" if others else ""


def _closed(mro: list[ClassRef | ExternalRef]) -> bool:
    """Every class of `mro` is read (or adds nothing), and none makes attributes up on access:
    only then can an attribute be said to be missing."""
    for entry in mro:
        if isinstance(entry, ExternalRef):
            if entry.text.rsplit(".", 1)[-1] not in OPAQUE_BASES:
                return False
        elif any(method in entry.cls.methods for method in DYNAMIC):
            return False
    return True


def _provides(target: Target, name: str) -> bool:
    """An instance of `target` may have attribute `name`: a method, property or class value in
    its MRO, or an assignment to `self.<name>` in any of its classes' methods."""
    return target.has_attribute(name) or any(
        isinstance(e, ClassRef) and name in e.cls.assigned_attrs for e in target.mro
    )


RULES = [ProposerTargetShape]
