"""The draft-pairing checks of the layer ids each model runner requests (EAG622-EAG625, EAG621)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from eagle3lint.api import (
    DRAFT_IDS_KEY,
    DraftPairing,
    Finding,
    PairingAnalysis,
    Rule,
    RuleContext,
    Severity,
    Target,
)

if TYPE_CHECKING:  # loading the rules must not load the contract's reader
    from eagle3lint.api import BackendCapture

Locate = Callable[[str], tuple[str, int]]
"""A key of the draft config → where a finding about it is reported (its config.json line)."""


class LayerIdChecks(Rule):
    """The layer-id half of the draft-pairing rule (mixed into it)."""

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
        places = (
            ", ".join(f"{k}={analysis.listed(v)}" for k, v in analysis.id_places.items())
            or "nowhere"
        )
        yield from self._absent_ids(analysis, default, at)
        missing = [r for r in analysis.requests if r.ids is None] if analysis.id_places else []
        if missing:
            reads = "; ".join(
                f"{r.runner.runner} reads {', '.join(s.text() for s in r.runner.sources)} "
                f"({r.runner.path}:{r.runner.line})"
                for r in missing
            )
            every = len(missing) == len(analysis.requests)
            yield self.report(
                "EAG622",
                f"The draft config holds layer ids {places}, but {reads}: "
                f"{'the target' if every else 'with that runner the target'} taps {default} "
                "instead, with only an info log.",
                *at(next(iter(analysis.id_places), DRAFT_IDS_KEY).rsplit(".", 1)[-1]),
                hint="Put the ids at the top level as eagle_aux_hidden_state_layer_ids.",
                runners=() if every else tuple(r.runner.runner.rsplit(" ", 1)[-1] for r in missing),
            )
        # The Transformers backend records the input of layer `id - offset`: id 0 names none.
        backend = ctx.contract.backend_capture
        if backend is not None and target.backend_capture(ctx.model_type) is None:
            backend = None
        for runners, request in self._id_groups(analysis):
            yield from self._requested_ids(analysis, request, runners, target, at, backend)

    def _absent_ids(self, analysis: PairingAnalysis, default: str, at: Locate) -> Iterator[Finding]:
        """EAG626: a head whose config names no ids anywhere runs on the target's fallback."""
        if (
            analysis.id_places
            or any(r.ids is not None for r in analysis.requests)
            or not analysis.requests
            or not analysis.uses_aux
            or analysis.resolution.method != "eagle3"
        ):
            return
        layers = analysis.target_layers
        # speculators' `resolve_target_layer_ids` takes these when given no ids (the one
        # trainer whose source was read): a head trained on them is served right by an equal
        # fallback.
        trained = [2, layers // 2, layers - 3] if layers is not None else None
        differs = trained is not None and analysis.default_ids not in (None, trained)
        head = (
            f"The draft config names no layer ids: vLLM {analysis.release} taps the target's "
            f"fallback layers {default}, with only an info log"
        )
        if differs:
            text = (
                f"{head}. They differ from {analysis.listed(trained)}, speculators' default "
                f"for {layers} layers: a head trained on those defaults reads other layers than "
                "it learnt from, and acceptance collapses with no error."
            )
        else:
            text = (
                f"{head}. That is right only if the head was trained on exactly these layers "
                "(speculators' default); a head trained with other ids, whose config does not "
                "say so, accepts almost nothing (vllm#50170: 1.2 % instead of 58.9 %), with no "
                "error."
            )
        shown = analysis.listed(trained) if trained is not None else "[2, n // 2, n - 3]"
        # Only a known disagreement warns: the standard id-less head (issue 29) is trained on
        # the fallback, so the generic case is a note.
        yield self.report(
            "EAG626",
            text,
            *at(DRAFT_IDS_KEY),
            severity=Severity.WARNING if differs else Severity.INFO,
            hint="Write the ids the head was trained on into its config.json as "
            f"eagle_aux_hidden_state_layer_ids ({shown} if its trainer used its defaults).",
        )

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
        backend: BackendCapture | None,
    ) -> Iterator[Finding]:
        requested = request.ids
        where = at(request.key if requested is not None else DRAFT_IDS_KEY)
        who = f"model runner {'/'.join(r.upper() for r in runners)}" if runners else "the runner"
        layers = analysis.target_layers
        if requested is not None and layers is not None:
            fewer = "the target returns fewer aux states than fc expects"
            for k in requested:
                problem = ""
                if not isinstance(k, int) or isinstance(k, bool):
                    problem = f"is not an integer: {fewer}"
                elif k < 0 or k > layers:
                    problem = f"is outside 0..{layers} ({layers} layers): {fewer}"
                elif k == layers and analysis.pre_layer_taps:
                    problem = (
                        f"equals num_hidden_layers ({layers}) and {target.arch} taps before each "
                        f"layer, so the last layer's output is never captured: {fewer}"
                    )
                elif backend is not None and k < backend.input_offset:
                    problem = (
                        f"names no layer on the Transformers backend, which records the input "
                        f"of layer id - {backend.input_offset}: its set_aux_hidden_state_layers "
                        f"({backend.path}:{backend.line}) raises KeyError: {k - 1}"
                    )
                if problem:
                    yield self.report(
                        "EAG623", f"Layer id {k!r} {problem}.", *where, runners=runners
                    )
            if requested and requested[0] == 1 and all(isinstance(k, int) for k in requested):
                # SGLang's convention: id k is the output of layer k, i.e. vLLM's index k + 1.
                shifted = [k + 1 for k in requested]
                yield self.report(
                    "EAG624",
                    f"The ids start at 1, as heads trained under SGLang's +1 convention write "
                    f"them: vLLM taps {analysis.physical(requested)}; if they mean 'output of "
                    f"layer k' the head was trained on the outputs of layers "
                    f"{analysis.listed(requested, str, brackets=False, noun='layers')} (vLLM ids "
                    f"{analysis.listed(shifted)}).",
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
                f"The ids {analysis.listed(ids)} are not in layer order: the target appends aux "
                "states as its layer loop reaches them, so fc receives layers "
                f"{analysis.listed(captured)} in that order. A head trained on the config's order "
                "sees its inputs permuted.",
                *where,
                hint=f"Write the ids as {analysis.listed(captured)} if that is the order the head "
                "was trained on.",
                runners=runners,
            )
        expected = analysis.aux_expected
        if analysis.uses_aux and expected is not None and expected != count:
            asked = f"{who} requests {len(ids)} layers {analysis.listed(ids)}"
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
