"""EAG6xx draft-pairing: an EAGLE-3 drafter checked against its target in one release.

Reports only under `eagle3lint pair`, which gives the rule the draft config, its checkpoint
headers and the target config (`RuleContext.pairing`); under `check` it has nothing to pair.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from eagle3lint.api import (
    SPECULATORS_FORMAT,
    DraftPairing,
    Example,
    Finding,
    PairingAnalysis,
    RuleContext,
    Severity,
    Target,
    analyse_pairing,
)

from ._draft_pairing_codes import CODES
from ._draft_pairing_context import ContextChecks
from ._draft_pairing_ids import LayerIdChecks, Locate
from ._draft_pairing_rotary import RotaryChecks
from ._draft_pairing_vocab import VocabularyChecks

_HEADS = {"eagle3": "EAGLE-3", "dflash": "DFlash", "dspark": "DSpark", "peagle": "P-EAGLE"}


class DraftPairingRule(LayerIdChecks, VocabularyChecks, ContextChecks, RotaryChecks):
    slug = "draft-pairing"
    codes = CODES
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
        draft = pairing.draft
        path = str(draft.path)

        def at(key: str) -> tuple[str, int]:
            return path, draft.line_of(key)

        # A checkpoint the loader refuses fails to load whatever method runs the draft.
        for file, refusal in pairing.checkpoint.refused.items() if pairing.checkpoint else ():
            yield self.report(
                "EAG603",
                f"The safetensors library refuses {file}: {refusal}. vLLM cannot load the "
                "draft's weights.",
                path,
                1,
                hint="Fetch the file again (a download cut short ends inside its tensors), or "
                "save the weights again with safetensors' save_file.",
            )
        if analysis.unregistered is not None:
            yield self.report(
                "EAG601",
                f"The draft's architecture {analysis.unregistered} is not registered in vLLM "
                f"{analysis.release}: its model config fails before a method is chosen "
                f"('Model architectures ['{analysis.unregistered}'] are not supported for now').",
                *at("architectures"),
                hint="Use a release that registers it.",
            )
            return
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
        yield from self._head_quantization(analysis, pairing, ctx, at)
        yield from self._sliding_window(analysis, at)
        yield from self._context(analysis, pairing, at)
        yield from self._rotary(analysis, at)
        if draft.format == SPECULATORS_FORMAT:
            yield from self._verifier(pairing, target, at)
        if pairing.pipeline_size > 1:
            yield from self._pipeline(pairing, target, ctx)

    def _method(
        self, analysis: PairingAnalysis, pairing: DraftPairing, at: Locate
    ) -> Iterator[Finding]:
        resolution = analysis.resolution
        settings = pairing.settings
        made_for = pairing.draft.made_for() or "eagle3"
        # P-EAGLE heads run under method eagle3.
        suggest = made_for if made_for in ("dflash", "dspark") else "eagle3"
        where = at("method") if settings.given else at("architectures")
        choice = analysis.facts.method_choice
        place = f" ({choice.path}:{choice.line})" if choice else ""
        if resolution.method is None:
            yield self.report(
                "EAG602",
                f"vLLM {analysis.release} refuses the speculative config: "
                f'{resolution.refusal}{place}. Set "method": "{suggest}".',
                *where,
                hint=f'Set "method": "{suggest}" in --speculative-config.',
            )
            return
        method = resolution.method
        if method == made_for:
            if not analysis.checked:
                yield self.report(
                    "EAG602",
                    f"vLLM {analysis.release} runs this draft with method {method} "
                    f"({resolution.how}); pair reads no drafter class for it, so its {method} "
                    "pairing (layer ids, vocabulary) is not checked.",
                    *where,
                    severity=Severity.WARNING,
                )
            return
        if method == "eagle3":
            return  # another head renamed for EAGLE-3: EAG601 says whether it exists
        arch = analysis.translated.architecture
        if method in analysis.facts.renamings and analysis.drafter is None:
            # EAGLEConfig renames the head for that method; the name is then looked up.
            outcome = (
                f"EAGLEConfig renames its architecture to {arch}, which is not registered: "
                f"'Model architectures ['{arch}'] are not supported for now'"
            )
        else:
            cls = analysis.drafter.cls if analysis.drafter else "the head's class"
            outcome = {
                "draft_model": "it loads the head as an independent draft model and calls its "
                "forward without the target's hidden states (vLLM's CPU build: 'TypeError: "
                f"{cls}.forward() missing 1 required positional argument: 'hidden_states'')",
                "eagle": "it runs as an EAGLE-1 head, and the target's aux hidden states are "
                "never requested",
            }.get(method, f"it runs as {method}, not as a {_HEADS.get(made_for, made_for)} head")
        yield self.report(
            "EAG602",
            f"vLLM {analysis.release} chooses method {method} for this "
            f"{_HEADS.get(made_for, made_for)} head ({resolution.how}){place}: {outcome}. "
            f'Set "method": "{suggest}".',
            *where,
            hint=f'Set "method": "{suggest}" in --speculative-config.',
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
        accepts = facts.proposer_accepts if analysis.resolution.method == "eagle3" else None
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
        yield from self._fc_dropped(analysis, fc, hidden, at)
        draft_hidden = config.get("hidden_size")
        if analysis.resolution.method == "eagle3" and (
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

    def _fc_dropped(
        self, analysis: PairingAnalysis, fc: Any, hidden: int, at: Locate
    ) -> Iterator[Finding]:
        """A head trained on several aux states (an fc wider than one state) whose config
        turns them off: the loader drops fc and the head reads the last hidden state bare."""
        facts = analysis.drafter_facts
        if analysis.uses_aux or fc is None or facts is None or not facts.fc_dropped_line:
            return
        if len(fc.shape) != 2 or fc.shape[1] <= hidden or fc.shape[1] % hidden:
            return
        yield self.report(
            "EAG645",
            f'The draft config sets "use_aux_hidden_state": false, but {fc.file} holds '
            f"fc.weight {list(fc.shape)}, trained on {fc.shape[1] // hidden} aux states: vLLM "
            f"{analysis.release} drops fc when it loads the head ({facts.path}:"
            f"{facts.fc_dropped_line}) and feeds it the target's last hidden state instead, "
            "which it was never trained on: drafts are rarely accepted, with no error. Remove "
            '"use_aux_hidden_state" if the head was trained on aux states.',
            *at("use_aux_hidden_state"),
            severity=Severity.WARNING,
            hint='Remove "use_aux_hidden_state" from eagle_config (it defaults to true) if the '
            "head was trained on the target's aux states.",
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

    def _head_quantization(
        self, analysis: PairingAnalysis, pairing: DraftPairing, ctx: RuleContext, at: Locate
    ) -> Iterator[Finding]:
        asked = pairing.settings.options.get("draft_lm_head_quantization")
        refusal = analysis.facts.head_quantization_refusal
        checkpoint = pairing.checkpoint
        if asked is None or not refusal or checkpoint is None:
            return
        own = checkpoint.weight("lm_head")
        if own is None:
            return
        differs = analysis.draft_vocab != analysis.target_vocab
        runners = ctx.contract.runners
        yield self.report(
            "EAG642",
            f'"draft_lm_head_quantization": {asked!r} with a checkpoint that ships its own '
            f"lm_head ({list(own.shape)} in {own.file}): model runner V2 keeps a head that "
            + (
                "differs from the target's (another vocabulary)"
                if differs
                else "differs from the target's, unless it holds the target's very weights"
            )
            + f", and raises '{refusal}' ({analysis.facts.head_quantization_path}).",
            *at("method" if pairing.settings.given else "architectures"),
            severity=Severity.ERROR if differs else Severity.WARNING,
            runners=("v2",) if runners is not None and "v1" in runners.present else (),
            hint="Drop draft_lm_head_quantization for a head with its own lm_head.",
        )

    def _sliding_window(self, analysis: PairingAnalysis, at: Locate) -> Iterator[Finding]:
        facts, config = analysis.drafter_facts, analysis.translated.config
        if facts is None or facts.window_read:
            return
        layers = config.get("num_hidden_layers")
        types = config.get("layer_types")
        count = layers if isinstance(layers, int) and layers > 0 else 1
        windowed = isinstance(types, list) and "sliding_attention" in types[:count]
        if config.get("use_sliding_window") is True:
            windowed = True
        window = config.get("sliding_window")
        if not windowed or not isinstance(window, int) or isinstance(window, bool):
            return
        cls = analysis.drafter.cls if analysis.drafter else "the drafter"
        yield self.report(
            "EAG643",
            f"The draft config gives its layers a sliding window of {window} tokens, but "
            f"vLLM {analysis.release}'s {cls} never reads layer_types or sliding_window "
            f"({facts.path}): the head runs full attention, not the window it was trained with.",
            *at("layer_types" if "layer_types" in config else "sliding_window"),
            hint="Use a release whose drafter class reads the window (docs/pairing.md).",
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
        elif (relay := target.pp_relay).declared is not None and not relay.relays:
            assert relay.unrelayed_forward is not None
            ref = relay.unrelayed_forward
            why = (
                f"{ref.name} inherits supports_aux_hidden_states_over_pp = True from "
                f"{relay.declared.name} but overrides forward without relaying (it calls no "
                "collect_remote_aux_hidden_states / pack_local_aux_hidden_states), so the "
                "runner starts and the aux states captured on earlier ranks never reach the "
                "last one"
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
