"""EAG6xx draft-pairing: an EAGLE-3 drafter checked against its target in one release.

Reports only under `eagle3lint pair`, which gives the rule the draft config, its checkpoint
headers and the target config (`RuleContext.pairing`); under `check` it has nothing to pair.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from eagle3lint.api import (
    DRAFT_IDS_KEY,
    SPECULATORS_FORMAT,
    Code,
    DraftPairing,
    Example,
    Explanation,
    Finding,
    PairingAnalysis,
    Rule,
    RuleContext,
    Severity,
    Target,
    analyse_pairing,
)

Locate = Callable[[str], tuple[str, int]]
"""A key of the draft config → where a finding about it is reported (its config.json line)."""


def _explain(runtime: str, error: str, releases: str, example: str, fix: str) -> Explanation:
    return Explanation(runtime, error, releases, example, fix, language="json")


_CODES = (
    Code(
        "EAG601",
        "drafter-not-registered",
        "The drafter architecture, after the release's renaming, is not a registered "
        "speculative-decoding model (or the EAGLE-3 proposer does not accept its class).",
        Severity.ERROR,
        explain=_explain(
            "vLLM wraps an EAGLE-style draft config in `EAGLEConfig`, which renames its "
            "architecture to `Eagle3<arch>` unless it already starts or ends with `Eagle3`; a "
            "speculators config is translated by `update_eagle3`, which forces "
            "`Eagle3LlamaForCausalLM` (0.16.0-0.23.0) or maps "
            "`transformer_layer_config.model_type` (`llama`, `qwen3`) and raises for any other "
            "(0.24.0 and later). The resulting name is looked "
            "up in `_SPECULATIVE_DECODING_MODELS`; the proposer then asserts the drafter is one "
            "of the classes it knows before `combine_hidden_states`.",
            "```text\nValueError: Model architectures ['Eagle3Qwen3ForCausalLM'] are not "
            "supported for now.\n```\nor `ValueError: Unsupported model_type qwen2 for Eagle3 "
            "speculator`, or an `AssertionError` in the proposer's first propose.",
            "All releases; `Eagle3DeepseekV2/V3ForCausalLM` are registered from 0.18.0, "
            "`Eagle3Qwen3ForCausalLM` from 0.24.0.",
            '{"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3"}  // on 0.23.0\n',
            '{"architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama"}\n',
        ),
    ),
    Code(
        "EAG611",
        "target-hidden-size",
        "`target_hidden_size` (or the draft `hidden_size` when absent) differs from the "
        "target's text `hidden_size`.",
        Severity.ERROR,
        explain=_explain(
            "The drafter sizes `fc` as `target_hidden_size x aux count` (its own `hidden_size` "
            "when `target_hidden_size` is absent) and the proposer asserts "
            "`target_hidden_states.shape[-1] == self.hidden_size` after combining them.",
            "A shape mismatch loading `fc.weight`, or `AssertionError` at the first propose, "
            "after the weights loaded (vllm#18906, vllm#37966).",
            "All releases.",
            '{"hidden_size": 4096}  // target hidden_size 7168, no target_hidden_size\n',
            '{"hidden_size": 4096, "target_hidden_size": 7168}\n',
        ),
    ),
    Code(
        "EAG612",
        "fc-width",
        "`fc.weight`'s input width in the checkpoint differs from target hidden x aux count.",
        Severity.ERROR,
        explain=_explain(
            "`fc` concatenates the aux hidden states the target returns (each of the target's "
            "hidden size) and projects them to the draft width; its weight's second dimension "
            "must be target hidden x the number of ids the runner requests.",
            "```text\nAssertionError: Attempted to load weight (torch.Size([4096, 12288])) into "
            "parameter (torch.Size([4096, 21504]))\n```\nat load, or a matmul shape error at the "
            "first forward.",
            "All releases.",
            "// fc.weight [4096, 12288] with 3 ids and a 7168-wide target\n",
            "// retrain or pick the head trained for this target: fc.weight [4096, 21504]\n",
        ),
    ),
    Code(
        "EAG613",
        "draft-width-without-embedding",
        "The draft width differs from the target's and the checkpoint has no `embed_tokens` "
        "(a crash where the proposer shares the embedding blindly, silent where it compares "
        "widths).",
        Severity.ERROR,
        explain=_explain(
            "A checkpoint without `embed_tokens` shares the target's embedding. Up to 0.24 the "
            "proposer shares it whatever its width, so a draft narrower or wider than the "
            "target crashes in its first layer; from 0.25 it compares the widths and keeps the "
            "draft's own embedding, which the checkpoint never filled (reported as a warning).",
            "A shape error in the draft's first layer (≤ 0.24); from 0.25 no error, a randomly "
            "initialised embedding and near-zero acceptance *(inferred from the proposer code)*.",
            "Crashes in 0.16.0-0.24.0; silent from 0.25.0 (the proposer compares the widths).",
            '{"hidden_size": 4096}  // target 7168, no embed_tokens.weight in the checkpoint\n',
            "// ship embed_tokens.weight [vocab, 4096] with the head\n",
        ),
    ),
    Code(
        "EAG621",
        "aux-count",
        "The aux count the drafter expects differs from the number of ids the runner requests.",
        Severity.ERROR,
        explain=_explain(
            "The runner requests one aux state per layer id; the drafter sizes `fc` for a fixed "
            "3 (0.16-0.21) or for `num_aux_hidden_states`, else the length of "
            "`eagle_config.eagle_aux_hidden_state_layer_ids`, else 3 (0.22+). The runner reads "
            "the top-level ids first, so two lists of different lengths disagree.",
            "A shape error in `fc` at the first propose *(inferred)*.",
            "All releases.",
            '{"eagle_aux_hidden_state_layer_ids": [2, 16, 29, 30]}  // on 0.18.0 (fc fixed at 3)\n',
            '{"eagle_aux_hidden_state_layer_ids": [2, 16, 29]}\n',
        ),
    ),
    Code(
        "EAG622",
        "layer-ids-not-read",
        "The layer ids are absent, or only where this release's runner does not read them: "
        "the target's default layers are tapped instead.",
        Severity.WARNING,
        explain=_explain(
            "Model runner v1 reads the top-level `eagle_aux_hidden_state_layer_ids`, and from "
            "0.22 `eagle_config.eagle_aux_hidden_state_layer_ids`; model runner v2 (0.17+, "
            "`VLLM_USE_V2_MODEL_RUNNER`) reads the top level and, from 0.27, "
            "`eagle_config.layer_ids`, never `eagle_config.eagle_aux_hidden_state_layer_ids`. "
            "Found nowhere, the runner logs 'Using Eagle3 auxiliary layers from model' and "
            "taps the target's default `(2, n // 2, n - 3)`.",
            "None: acceptance collapses (vllm#50170: 1.21 % instead of about 59 %).",
            "All releases.",
            '{"eagle_config": {"eagle_aux_hidden_state_layer_ids": [2, 30, 58]}}  // on 0.18.0\n',
            '{"eagle_aux_hidden_state_layer_ids": [2, 30, 58]}\n',
        ),
    ),
    Code(
        "EAG623",
        "layer-id-unreachable",
        "A layer id the target cannot capture in this release: negative, beyond "
        "`num_hidden_layers`, or equal to it where the target's taps are pre-layer.",
        Severity.ERROR,
        explain=_explain(
            "Index k captures the stream entering layer k. A tap before each layer never sees "
            "k == num_hidden_layers (EagleModelMixin's taps after each layer do); larger or "
            "negative ids match no layer. The runner does not check: fewer aux states come "
            "back than `fc` expects.",
            "A shape error in `fc` at the first propose *(inferred)*.",
            "All releases; k == num_hidden_layers is reachable on targets using EagleModelMixin "
            "(0.18+).",
            '{"eagle_aux_hidden_state_layer_ids": [2, 30, 61]}  // 61 layers, pre-layer taps\n',
            '{"eagle_aux_hidden_state_layer_ids": [2, 30, 58]}\n',
        ),
    ),
    Code(
        "EAG624",
        "plus-one-convention",
        "The ids look written in SGLang's +1 convention (first id 1): both physical layer sets "
        "are printed.",
        Severity.WARNING,
        explain=_explain(
            "vLLM reads id k as the stream entering layer k (the output of layer k - 1) and "
            "never shifts it. SGLang historically read id k as 'the output of layer k' and "
            "added 1 when capturing; since sglang#25454 only when the first id is 1. A head "
            "trained against one convention runs one layer off in the other. Its ids usually "
            "start at 1 (SGLang's default `[1, n // 2 - 1, n - 4]` is vLLM's `[2, n // 2, "
            "n - 3]`).",
            "None: acceptance drops (vllm#43671: about 10 % instead of 45 %).",
            "All releases.",
            '{"eagle_aux_hidden_state_layer_ids": [1, 29, 57]}  // trained in SGLang\n',
            '{"eagle_aux_hidden_state_layer_ids": [2, 30, 58]}  // the same layers for vLLM\n',
        ),
    ),
    Code(
        "EAG631",
        "missing-d2t",
        "`draft_vocab_size` is below the target vocabulary and the checkpoint has no `d2t`.",
        Severity.ERROR,
        explain=_explain(
            "With a reduced draft vocabulary, `compute_logits` maps draft id i to target id "
            "i + d2t[i]. Without `d2t` in the checkpoint the mapping stays zeros: draft id i is "
            "read as target id i.",
            "None: every draft token is a wrong target token; acceptance collapses.",
            "All releases.",
            '{"draft_vocab_size": 32000}  // target vocab 163840, checkpoint without d2t\n',
            "// ship d2t [32000] (and t2d [163840]) with the head\n",
        ),
    ),
    Code(
        "EAG632",
        "vocab-tensor-shape",
        "`d2t`, `t2d` or `lm_head.weight` shapes do not match the vocabulary sizes.",
        Severity.ERROR,
        explain=_explain(
            "`d2t` must hold `draft_vocab_size` offsets, `t2d` one flag per target token and "
            "`lm_head.weight` `draft_vocab_size` rows of the draft width.",
            "A shape mismatch when the weights load.",
            "All releases.",
            '{"draft_vocab_size": 32000}  // d2t [64000]\n',
            '{"draft_vocab_size": 64000}\n',
        ),
    ),
    Code(
        "EAG633",
        "missing-lm-head",
        "No `lm_head.weight` in the checkpoint while the draft vocabulary differs from the "
        "target's.",
        Severity.ERROR,
        explain=_explain(
            "A checkpoint without `lm_head.weight` shares the target's head, whose rows are the "
            "target vocabulary; that is valid only when the vocabularies are equal.",
            "A shape error in `compute_logits`, or logits over the wrong vocabulary *(inferred)*.",
            "All releases.",
            '{"draft_vocab_size": 32000}  // target vocab 128256, no lm_head.weight\n',
            "// ship lm_head.weight [32000, hidden] with the head\n",
        ),
    ),
    Code(
        "EAG641",
        "norm-flag-ignored",
        "A norm flag set in the draft config that this release ignores, or does not pass "
        "through for this format.",
        Severity.WARNING,
        explain=_explain(
            "The drafter reads a fixed set of norm flags (`norm_before_residual`; "
            "`norm_before_fc` from 0.18; `fc_norm`, `norm_output` from 0.22). A speculators "
            "config's top-level keys reach the drafter only through `update_eagle3`, which "
            "passes `norm_before_fc` on from 0.19 (vllm#38111) and `fc_norm`/`norm_output` "
            "from 0.25. A flag nobody reads is skipped "
            "silently.",
            "None: the head runs without the norm it was trained with; acceptance drops.",
            "`norm_before_fc`: 0.16-0.17, and 0.18 for speculators configs; `fc_norm`, "
            "`norm_output`: 0.16-0.21, and 0.22-0.24 for speculators configs (vllm#42764, "
            "vllm#46488).",
            '{"norm_before_fc": true}  // on 0.17.0\n',
            "// use a release that reads the flag (eagle3lint pair --vllm 0.22.0)\n",
        ),
    ),
    Code(
        "EAG651",
        "verifier-mismatch",
        "A speculators config's `verifier.architectures` does not name the target's architecture.",
        Severity.WARNING,
        explain=_explain(
            "A speculators checkpoint records the model it was trained against under "
            "`speculators_config.verifier`; vLLM never compares it with the target it is "
            "served with.",
            "None: a head trained for another model proposes tokens that are rarely accepted.",
            "All releases with speculators support.",
            '{"speculators_config": {"verifier": {"architectures": ["Qwen3ForCausalLM"]}}}\n'
            "// target LlamaForCausalLM\n",
            '{"speculators_config": {"verifier": {"architectures": ["LlamaForCausalLM"]}}}\n',
        ),
    ),
    Code(
        "EAG661",
        "aux-over-pipeline",
        "`--pp N` > 1 and this release cannot relay aux hidden states across pipeline ranks "
        "for this target.",
        Severity.ERROR,
        explain=_explain(
            "Aux states captured on an early pipeline rank must travel to the last rank with "
            "the intermediate tensors. From 0.30 a decoder does this only if it declares "
            "`supports_aux_hidden_states_over_pp = True`, and model runner v2 refuses "
            "otherwise; earlier releases drop aux states captured on non-last ranks.",
            "```text\nValueError: KimiK25ForConditionalGeneration does not support eagle3 with "
            "pipeline parallelism\n```\n(model runner v2, 0.30+), else a shape error or wrong "
            "aux states (vllm#45985).",
            "All releases; the relay flag exists in 0.30.0 (not in 0.27.0).",
            "eagle3lint pair --pp 2 ...  // target decoder without the flag\n",
            "eagle3lint pair --pp 1 ...  // or a target whose decoder relays aux states\n",
        ),
    ),
)


class DraftPairingRule(Rule):
    slug = "draft-pairing"
    codes = _CODES
    # Model code alone never gets a pairing finding: without a draft (`check`) the family is
    # silent. Its triggering cases are draft folders, in tests/test_pair.py.
    valid = (
        Example(
            era="e3_mixin",
            source="class KimiForCausalLM(nn.Module, SupportsEagle3):\n    pass\n",
        ),
    )

    def check(self, target: Target, ctx: RuleContext) -> Iterator[Finding]:
        pairing: DraftPairing | None = ctx.pairing
        if pairing is None or not ctx.contract.root:
            return
        analysis = analyse_pairing(pairing, target)
        pairing.analysis = analysis
        draft = pairing.draft
        path = str(draft.path)

        def at(key: str) -> tuple[str, int]:
            return path, draft.line_of(key)

        yield from self._registration(analysis, at)
        yield from self._widths(analysis, pairing, at)
        yield from self._layer_ids(analysis, pairing, target, ctx, at)
        yield from self._vocabulary(analysis, pairing, at)
        yield from self._norm_flags(analysis, pairing, at)
        if draft.format == SPECULATORS_FORMAT:
            yield from self._verifier(pairing, target, at)
        if pairing.pipeline_size > 1:
            yield from self._pipeline(pairing, target, ctx)

    def _registration(self, analysis: PairingAnalysis, at: Locate) -> Iterator[Finding]:
        arch = analysis.translated.architecture
        facts = analysis.facts
        if arch is None:
            reason = analysis.translated.refusal or "the config names no architecture"
            where = facts.speculators.path if facts.speculators else "the draft config"
            yield self.report(
                "EAG601",
                f"vLLM {analysis.release} cannot build this drafter: {reason} ({where}).",
                *at(
                    "architectures" if analysis.draft_format != SPECULATORS_FORMAT else "model_type"
                ),
            )
            return
        renamed = f"{analysis.declared_arch} → {arch}" if arch != analysis.declared_arch else arch
        if analysis.drafter is None:
            yield self.report(
                "EAG601",
                f"Drafter architecture {renamed} is not registered as a speculative-decoding "
                f"model in vLLM {analysis.release}: loading fails with 'Model architectures "
                f"['{arch}'] are not supported'.",
                *at("architectures"),
                hint="Use a release that registers it, or a head of a registered architecture.",
            )
            return
        accepts = facts.proposer_accepts
        if accepts is not None and analysis.drafter.cls not in accepts:
            yield self.report(
                "EAG601",
                f"{renamed} builds {analysis.drafter.cls}, which the EAGLE-3 proposer does not "
                f"accept ({facts.proposer_path}:{facts.proposer_line} asserts one of "
                f"{', '.join(accepts)}).",
                *at("architectures"),
            )

    def _widths(
        self, analysis: PairingAnalysis, pairing: DraftPairing, at: Locate
    ) -> Iterator[Finding]:
        hidden = analysis.target_hidden
        width = analysis.draft_width
        config = analysis.translated.config
        key = "target_hidden_size" if "target_hidden_size" in config else "hidden_size"
        if hidden is not None and width is not None and width != hidden:
            yield self.report(
                "EAG611",
                f"The drafter sizes fc for {key}={width} per aux state, but the target's text "
                f"hidden_size is {hidden}: the fc weight fails to load, or the proposer's "
                "hidden-size assertion fails at the first propose.",
                *at(key),
                hint=f"Set target_hidden_size to {hidden} if the head was trained on this target.",
            )
        checkpoint = pairing.checkpoint
        if checkpoint is None or hidden is None:
            return
        provided = analysis.tapped_ids
        fc = checkpoint.weight("fc")
        if analysis.uses_aux and fc is not None and provided and len(fc.shape) == 2:
            wanted = hidden * len(provided)
            if fc.shape[1] != wanted:
                yield self.report(
                    "EAG612",
                    f"fc.weight is {list(fc.shape)} in {fc.file}: its input width "
                    f"{fc.shape[1]} is not the target hidden size {hidden} x {len(provided)} aux "
                    f"states = {wanted}.",
                    *at("target_hidden_size" if "target_hidden_size" in config else "hidden_size"),
                )
        draft_hidden = config.get("hidden_size")
        if (
            isinstance(draft_hidden, int)
            and draft_hidden != hidden
            and checkpoint.find("embed_tokens") is None
        ):
            silent = analysis.facts.embed_width_checked
            outcome = (
                "keeps the draft's own embedding, which this checkpoint never fills: acceptance "
                "collapses silently"
                if silent
                else "shares the target's embedding anyway, and the draft's first layer fails "
                "on its width"
            )
            yield self.report(
                "EAG613",
                f"The draft is {draft_hidden} wide, the target {hidden}, and the checkpoint has "
                f"no embed_tokens: vLLM {analysis.release} {outcome}.",
                *at("hidden_size"),
                severity=Severity.WARNING if silent else Severity.ERROR,
            )

    def _layer_ids(
        self,
        analysis: PairingAnalysis,
        pairing: DraftPairing,
        target: Target,
        ctx: RuleContext,
        at: Locate,
    ) -> Iterator[Finding]:
        tapped = analysis.tapped_ids
        default = (
            f"{tuple(analysis.default_ids)} ({analysis.default_source})"
            if analysis.default_ids is not None
            else "its default layers"
        )
        places = ", ".join(f"{k}={v}" for k, v in analysis.id_places.items()) or "nowhere"
        missing = [r for r in analysis.requests if r.ids is None]
        if missing:
            reads = "; ".join(
                f"{r.runner.runner} reads {', '.join(s.text() for s in r.runner.sources)} "
                f"({r.runner.path}:{r.runner.line})"
                for r in missing
            )
            first = missing[0] is analysis.requests[0]
            yield self.report(
                "EAG622",
                f"The draft config holds layer ids {places}, but {reads}: "
                f"{'the target' if first else 'with that runner the target'} taps {default} "
                "instead, with only an info log.",
                *at(next(iter(analysis.id_places), DRAFT_IDS_KEY).rsplit(".", 1)[-1]),
                hint="Put the ids at the top level as eagle_aux_hidden_state_layer_ids.",
            )
        requested = analysis.requests[0].ids if analysis.requests else None
        ids_key = analysis.requests[0].source if requested is not None else ""
        layers = analysis.target_layers
        if requested is not None and layers is not None:
            for k in requested:
                problem = ""
                if not isinstance(k, int) or isinstance(k, bool):
                    problem = "is not an integer"
                elif k < 0 or k > layers:
                    problem = f"is outside 0..{layers} ({layers} layers)"
                elif k == layers and analysis.pre_layer_taps:
                    problem = (
                        f"equals num_hidden_layers ({layers}) and {target.arch} taps before each "
                        "layer, so the last layer's output is never captured"
                    )
                if problem:
                    yield self.report(
                        "EAG623",
                        f"Layer id {k!r} {problem}: the target returns fewer aux states than "
                        f"fc expects.",
                        *at(ids_key.rsplit(".", 1)[-1] or "eagle_aux_hidden_state_layer_ids"),
                    )
            if requested and requested[0] == 1 and all(isinstance(k, int) for k in requested):
                # SGLang's convention: id k is the output of layer k, i.e. vLLM's index k + 1.
                shifted = [k + 1 for k in requested]
                yield self.report(
                    "EAG624",
                    f"The ids start at 1, as heads trained under SGLang's +1 convention write "
                    f"them: vLLM taps {analysis.physical(requested)}; if they mean 'output of "
                    f"layer k' the head was trained on the outputs of layers "
                    f"{', '.join(map(str, requested))} (vLLM ids {shifted}).",
                    *at(ids_key.rsplit(".", 1)[-1]),
                    hint="Check which convention the head was trained with; vLLM never shifts.",
                )
        expected = analysis.aux_expected
        counted = analysis.uses_aux and expected is not None and tapped is not None
        if counted and expected != len(tapped):
            yield self.report(
                "EAG621",
                f"The drafter sizes fc for {expected} aux states ({analysis.aux_source}) but "
                f"the runner requests {len(tapped)} layers {list(tapped)}.",
                *at(ids_key.rsplit(".", 1)[-1] or "architectures"),
            )

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
        if lm_head is None and draft != target:
            yield self.report(
                "EAG633",
                f"The checkpoint has no lm_head.weight, so the target's head ({target} tokens) "
                f"is shared, but the draft vocabulary has {draft}.",
                *where,
            )

    def _norm_flags(
        self, analysis: PairingAnalysis, pairing: DraftPairing, at: Locate
    ) -> Iterator[Finding]:
        facts = analysis.drafter_facts
        if facts is None:
            return
        draft = pairing.draft
        set_flags: list[tuple[str, str]] = []
        holders: list[tuple[Any, str]] = [(draft.data, "")]
        holders.append((draft.data.get("eagle_config"), "eagle_config"))
        if draft.format == SPECULATORS_FORMAT:
            holders.append((draft.layer_config(), "transformer_layer_config"))
        for holder, where in holders:
            if isinstance(holder, dict):
                set_flags += [(k, where) for k, v in holder.items() if "norm" in k and v is True]
        for name, where in set_flags:
            read_from = facts.flag_sources(name)
            if where == "transformer_layer_config":
                honoured = "" in read_from
            elif draft.format == SPECULATORS_FORMAT and where == "":
                honoured = name in analysis.translated.passed and "" in read_from
            else:
                honoured = where in read_from
            if honoured:
                continue
            if not read_from:
                why = (
                    f"{analysis.drafter.cls if analysis.drafter else 'the drafter'} never reads it"
                )
            elif draft.format == SPECULATORS_FORMAT and where == "":
                why = "the speculators translation does not pass it on to the drafter"
            else:
                places = ", ".join(s or "the top level" for s in read_from)
                why = f"the drafter reads it only from {places}"
            label = f"{where}.{name}" if where else name
            yield self.report(
                "EAG641",
                f"{label} is true, but vLLM {analysis.release} ignores it ({why}): the head runs "
                "without the norm it was trained with.",
                *at(name),
            )

    def _verifier(self, pairing: DraftPairing, target: Target, at: Locate) -> Iterator[Finding]:
        spec = pairing.draft.data.get("speculators_config")
        verifier = spec.get("verifier") if isinstance(spec, dict) else None
        archs = verifier.get("architectures") if isinstance(verifier, dict) else None
        if not isinstance(archs, list) or not archs:
            return
        names = {target.arch, target.ref.name, pairing.target_architecture()}
        if not names & set(archs):
            name = verifier.get("name_or_path", "?")
            yield self.report(
                "EAG651",
                f"The head was trained against {name} ({', '.join(map(str, archs))}), not "
                f"{target.arch}; vLLM never compares them.",
                *at("verifier"),
            )

    def _pipeline(
        self, pairing: DraftPairing, target: Target, ctx: RuleContext
    ) -> Iterator[Finding]:
        contract = ctx.contract
        owner = target.decoder_owner
        decoder = owner.inner_model
        ref = decoder or owner.ref
        if not contract.mixin_pp_relay:
            why = (
                "this release has no way to relay aux hidden states between pipeline ranks: "
                "those captured on non-last ranks are dropped"
            )
        elif not target.pp_aux_relay:
            why = (
                f"{ref.name} does not declare supports_aux_hidden_states_over_pp = True, so "
                "model runner v2 refuses the pair and nothing relays the aux states captured on "
                "earlier ranks"
            )
        else:
            return
        yield self.report(
            "EAG661",
            f"--pp {pairing.pipeline_size}: {why}.",
            ctx.path(ref),
            ref.cls.line,
            ref.cls.column,
            hint="Serve with pipeline_parallel_size 1, or use a release and target that relay "
            "aux states.",
        )


RULES = [DraftPairingRule]
