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
    Finding,
    PairingAnalysis,
    Rule,
    RuleContext,
    Severity,
    Target,
)

from . import _draft_pairing_explain as explained

Locate = Callable[[str], tuple[str, int]]
"""A key of the draft config → where a finding about it is reported (its config.json line)."""


_CODES = (
    Code(
        "EAG601",
        "drafter-not-registered",
        "The drafter architecture, after the release's renaming, is not a registered "
        "speculative-decoding model (or the EAGLE-3 proposer does not accept its class).",
        Severity.ERROR,
        explain=explained.EAG601,
    ),
    Code(
        "EAG602",
        "method-not-eagle3",
        "The speculative method this release chooses for the draft is not the one it was made "
        "for (no `method` and a model string without `eagle3` runs it as `draft_model`, "
        "`eagle-` in the string as EAGLE-1), or the release refuses the choice.",
        Severity.ERROR,
        explain=explained.EAG602,
    ),
    Code(
        "EAG611",
        "target-hidden-size",
        "`target_hidden_size` (or the draft `hidden_size` when absent) differs from the "
        "target's text `hidden_size`.",
        Severity.ERROR,
        explain=explained.EAG611,
    ),
    Code(
        "EAG612",
        "fc-width",
        "`fc.weight`'s input width in the checkpoint differs from target hidden x aux count.",
        Severity.ERROR,
        explain=explained.EAG612,
    ),
    Code(
        "EAG613",
        "draft-width-without-embedding",
        "The draft width differs from the target's and the checkpoint has no `embed_tokens` "
        "(a crash where the proposer shares the embedding blindly, silent where it compares "
        "widths).",
        Severity.ERROR,
        explain=explained.EAG613,
    ),
    Code(
        "EAG621",
        "aux-count",
        "The aux count the drafter expects differs from the number of distinct layers the "
        "runner's ids tap.",
        Severity.ERROR,
        explain=explained.EAG621,
    ),
    Code(
        "EAG622",
        "layer-ids-not-read",
        "The draft config holds layer ids, but only where this release's runner does not read "
        "them: the target's default layers are tapped instead.",
        Severity.WARNING,
        explain=explained.EAG622,
    ),
    Code(
        "EAG623",
        "layer-id-unreachable",
        "A layer id the target cannot capture in this release: negative, beyond "
        "`num_hidden_layers`, or equal to it where the target's taps are pre-layer.",
        Severity.ERROR,
        explain=explained.EAG623,
    ),
    Code(
        "EAG624",
        "plus-one-convention",
        "The ids look written in SGLang's +1 convention (first id 1): both physical layer sets "
        "are printed.",
        Severity.WARNING,
        explain=explained.EAG624,
    ),
    Code(
        "EAG625",
        "layer-id-order",
        "The layer ids are not in layer order: the target returns the aux states in its loop's "
        "order, not the config's.",
        Severity.WARNING,
        explain=explained.EAG625,
    ),
    Code(
        "EAG631",
        "missing-d2t",
        "`draft_vocab_size` is below the target vocabulary and the checkpoint has no `d2t`.",
        Severity.ERROR,
        explain=explained.EAG631,
    ),
    Code(
        "EAG632",
        "vocab-tensor-shape",
        "`d2t`, `t2d` or `lm_head.weight` shapes do not match the vocabulary sizes.",
        Severity.ERROR,
        explain=explained.EAG632,
    ),
    Code(
        "EAG633",
        "missing-lm-head",
        "No `lm_head.weight` in the checkpoint while the draft vocabulary differs from the "
        "target's.",
        Severity.ERROR,
        explain=explained.EAG633,
    ),
    Code(
        "EAG641",
        "norm-flag-ignored",
        "A norm flag set in the draft config that this release ignores, or does not pass "
        "through for this format.",
        Severity.WARNING,
        explain=explained.EAG641,
    ),
    Code(
        "EAG651",
        "verifier-mismatch",
        "A speculators config's `verifier.architectures` does not name the target's architecture.",
        Severity.WARNING,
        explain=explained.EAG651,
    ),
    Code(
        "EAG661",
        "aux-over-pipeline",
        "`--pp N` > 1 and this release cannot relay aux hidden states across pipeline ranks "
        "for this target.",
        Severity.ERROR,
        explain=explained.EAG661,
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
        analysis: PairingAnalysis = pairing.analysed(target)
        draft = pairing.draft
        path = str(draft.path)

        def at(key: str) -> tuple[str, int]:
            return path, draft.line_of(key)

        if analysis.translated.architecture is not None:
            chosen = list(self._method(analysis, pairing, at))
            yield from chosen
            if chosen:
                # The EAGLE-3 checks below assume the release runs the draft as eagle3.
                return
        yield from self._registration(analysis, at)
        yield from self._widths(analysis, pairing, ctx, at)
        yield from self._layer_ids(analysis, pairing, target, ctx, at)
        yield from self._vocabulary(analysis, pairing, at)
        yield from self._norm_flags(analysis, pairing, at)
        if draft.format == SPECULATORS_FORMAT:
            yield from self._verifier(pairing, target, at)
        if pairing.pipeline_size > 1:
            yield from self._pipeline(pairing, target, ctx)

    def _method(
        self, analysis: PairingAnalysis, pairing: DraftPairing, at: Locate
    ) -> Iterator[Finding]:
        resolution = analysis.resolution
        settings = pairing.settings
        made_for = pairing.draft.eagle3_method()
        where = at("method") if settings.given else at("architectures")
        choice = analysis.facts.method_choice
        place = f" ({choice.path}:{choice.line})" if choice else ""
        if resolution.method is None:
            yield self.report(
                "EAG602",
                f"vLLM {analysis.release} refuses the speculative config: "
                f"{resolution.refusal}{place}.",
                *where,
                hint='Set "method": "eagle3" in --speculative-config.',
            )
            return
        if resolution.method == "eagle3":
            return
        if made_for not in (None, "eagle3"):
            yield self.report(
                "EAG602",
                f"vLLM {analysis.release} runs this draft with method {resolution.method} "
                f"({resolution.how}); pair checks EAGLE-3 pairs, so its {made_for} pairing "
                "(layer ids, vocabulary) is not checked.",
                *where,
                severity=Severity.WARNING,
            )
            return
        arch = analysis.translated.architecture
        if resolution.method in analysis.facts.renamings and analysis.drafter is None:
            # EAGLEConfig renames the head for that method; the name is then looked up.
            outcome = (
                f"EAGLEConfig renames its architecture to {arch}, which is not registered: "
                f"'Model architectures ['{arch}'] are not supported for now'"
            )
        else:
            outcome = {
                "draft_model": "it runs as an independent draft model, without the target's "
                "hidden states: the EAGLE-3 head does not run as trained",
                "eagle": "it runs as an EAGLE-1 head, and the target's aux hidden states are "
                "never requested",
            }.get(resolution.method, f"it runs as {resolution.method}, not as an EAGLE-3 head")
        yield self.report(
            "EAG602",
            f"vLLM {analysis.release} chooses method {resolution.method} for this EAGLE-3 "
            f"head ({resolution.how}){place}: {outcome}.",
            *where,
            hint='Set "method": "eagle3" in --speculative-config.',
        )

    def _registration(self, analysis: PairingAnalysis, at: Locate) -> Iterator[Finding]:
        arch = analysis.translated.architecture
        facts = analysis.facts
        if arch is None:
            reason = analysis.translated.refusal or "the config names no architecture"
            where = facts.speculators_path or "the draft config"
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
        self, analysis: PairingAnalysis, pairing: DraftPairing, ctx: RuleContext, at: Locate
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
        provided, expected = analysis.aux_provided, analysis.aux_expected
        fc = checkpoint.weight("fc")
        if analysis.uses_aux and fc is not None and provided and len(fc.shape) == 2:
            wanted = hidden * provided
            # A checkpoint that matches the drafter's own count is EAG621's case: the target,
            # not the weights, is what differs.
            drafters = expected is not None and expected != provided
            if fc.shape[1] != wanted and not (drafters and fc.shape[1] == hidden * expected):
                yield self.report(
                    "EAG612",
                    f"fc.weight is {list(fc.shape)} in {fc.file}: its input width "
                    f"{fc.shape[1]} is not the target hidden size {hidden} x {provided} aux "
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
            # The width check is V1's proposer's; model runner V2 shares the embedding with no
            # such check (`maybe_share_target_embed`), so there the first layer fails.
            runners = ctx.contract.runners
            v2 = runners is not None and "v2" in runners.present and silent
            yield self.report(
                "EAG613",
                f"The draft is {draft_hidden} wide, the target {hidden}, and the checkpoint has "
                f"no embed_tokens: vLLM {analysis.release}"
                + (" (model runner V1)" if v2 else "")
                + f" {outcome}.",
                *at("hidden_size"),
                severity=Severity.WARNING if silent else Severity.ERROR,
                runners=("v1",) if v2 else (),
            )
            if v2:
                yield self.report(
                    "EAG613",
                    f"The draft is {draft_hidden} wide, the target {hidden}, and the checkpoint "
                    f"has no embed_tokens: vLLM {analysis.release}'s model runner V2 shares the "
                    "target's embedding with no width check, and the draft's first layer fails "
                    "on its width.",
                    *at("hidden_size"),
                    runners=("v2",),
                )

    def _layer_ids(
        self,
        analysis: PairingAnalysis,
        pairing: DraftPairing,
        target: Target,
        ctx: RuleContext,
        at: Locate,
    ) -> Iterator[Finding]:
        default = (
            f"{tuple(analysis.default_ids)} ({analysis.default_source})"
            if analysis.default_ids is not None
            else "its default layers"
        )
        places = ", ".join(f"{k}={v}" for k, v in analysis.id_places.items()) or "nowhere"
        # A head with no ids anywhere was trained on the target's defaults (the standard
        # EAGLE-3 heads are): only ids the runner overlooks are a trap.
        missing = [r for r in analysis.requests if r.ids is None] if analysis.id_places else []
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
        for runners, request in self._id_groups(analysis):
            yield from self._requested_ids(analysis, request, runners, target, at)

    @staticmethod
    def _id_groups(analysis: PairingAnalysis) -> list[tuple[tuple[str, ...], Any]]:
        """The runners' requests, one per distinct list of ids (and its key), each with the
        runners it holds for: () when it holds for every runner."""
        groups: dict[tuple[str, str], list[Any]] = {}
        for request in analysis.requests:
            ids = analysis.ids_of(request)
            groups.setdefault((repr(ids), request.source), []).append(request)
        if len(groups) <= 1:
            return [((), members[0]) for members in groups.values()]
        return [
            (tuple(r.runner.runner.rsplit(" ", 1)[-1] for r in members), members[0])
            for members in groups.values()
        ]

    def _requested_ids(
        self,
        analysis: PairingAnalysis,
        request: Any,
        runners: tuple[str, ...],
        target: Target,
        at: Locate,
    ) -> Iterator[Finding]:
        requested = request.ids
        ids_key = request.source if requested is not None else ""
        where = at(ids_key.rsplit(".", 1)[-1] or DRAFT_IDS_KEY)
        who = f"model runner {'/'.join(r.upper() for r in runners)}" if runners else "the runner"
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
                        *where,
                        runners=runners,
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
                    *where,
                    hint="Check which convention the head was trained with; vLLM never shifts.",
                    runners=runners,
                )
        ids = analysis.ids_of(request)
        if ids is None:
            return
        captured = analysis.captured(ids)
        count = analysis.states_for(ids)
        unique = list(dict.fromkeys(ids))
        if requested is not None and unique != captured and len(unique) == len(ids):
            yield self.report(
                "EAG625",
                f"The ids {list(ids)} are not in layer order: the target appends aux states as "
                f"its layer loop reaches them, so fc receives layers {captured} in that order. "
                "A head trained on the config's order sees its inputs permuted.",
                *where,
                hint=f"Write the ids as {captured} if that is the order the head was trained on.",
                runners=runners,
            )
        expected = analysis.aux_expected
        if analysis.uses_aux and expected is not None and expected != count:
            asked = f"{who} requests {len(ids)} layers {list(ids)}"
            if count != len(ids):
                asked += (
                    f", which the target captures as {count} states (each layer is tapped "
                    "once, however often its id repeats)"
                )
            yield self.report(
                "EAG621",
                f"The drafter sizes fc for {expected} aux states ({analysis.aux_source}) but "
                f"{asked}.",
                *(where if requested is not None else at("architectures")),
                runners=runners,
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
