"""SGL2xx sglang-pairing: an EAGLE-3 head against an SGLang target (`eagle3lint pair` on an
SGLang tree): where SGLang reads the head's layer ids, what the target's model file makes of
them, and whether the decoder ever reaches the layers it is asked to tap."""

from __future__ import annotations

from collections.abc import Iterator

from eagle3lint.api import (
    SGLANG_IDS_KEY,
    Code,
    Example,
    Explanation,
    Finding,
    Rule,
    RuleContext,
    Severity,
    SglangPairing,
    SglangTarget,
    analyse_sglang_pairing,
)

_IDS_RUNTIME = (
    "When the server starts with `--speculative-algorithm EAGLE3`, SGLang's model runner reads "
    "the head's layer ids from its config's `eagle_config` "
    '(`eagle_config["eagle_aux_hidden_state_layer_ids"]`, in a `try` whose bare `except` sets '
    "them to None) and passes them to the target's `set_eagle3_layers_to_capture`. With None "
    "the target taps its default layers `[2, L // 2, L - 3]`."
)

_SGL201 = Explanation(
    runtime=_IDS_RUNTIME,
    error="None: the head is fed the default layers' hidden states instead of those it was "
    "trained on, and accepts fewer draft tokens.",
    releases="Every SGLang release read (0.5.8 to 0.5.23).",
    example="""\
{"architectures": ["LlamaForCausalLMEagle3"], "eagle_aux_hidden_state_layer_ids": [1, 23, 44]}
""",
    fix="""\
{"architectures": ["LlamaForCausalLMEagle3"],
 "eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 23, 44]}}
""",
    language="json",
)

_SGL202 = Explanation(
    runtime=_IDS_RUNTIME + " The target's decoder collects the state entering layer c for each "
    "c of `layers_to_capture`; most model files set it to the ids plus one (id i: the output "
    "of layer i). An index above L is never reached, nor L itself unless the decoder collects "
    "the last layer's output at its final norm (GPT-OSS and MiniMax-M3 in 0.5.23, Gemma-3's "
    "and Gemma-4's causal models). A decoder whose capture method marks each layer it is "
    "given (`self.layers[layer_id]`: Qwen2-MoE's and Qwen3-MoE's in every release read, "
    "Qwen3-Next's, Qwen3.5's and Mellum's in 0.5.23) fails on an index of L or more instead.",
    error="The head receives fewer aux hidden states than its `fc` expects: a shape error in "
    "its first forward, after both models are loaded. The last layer's id (L - 1, which vLLM "
    "0.18+ taps) is such an id in SGLang's +1 convention. Where the capture method indexes "
    "the layers, `IndexError: index L is out of range` stops the server at start-up, once the "
    "weights are loaded.",
    releases="Every SGLang release read (0.5.8 and 0.5.23, with 0.5.10 and 0.5.12's GPT-OSS and "
    "Qwen2-MoE files); GPT-OSS reaches index L in 0.5.23, not up to 0.5.12.",
    example="""\
{"eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 16, 31]}}  # a 32-layer Llama
""",
    fix="""\
{"eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 16, 30]}}
""",
    language="json",
)

_SGL203 = Explanation(
    runtime="vLLM reads an id i as the state entering layer i (the output of layer i - 1); "
    "SGLang's model files mostly add one first (the output of layer i), DeepSeek-V2's only when "
    "the first id is 1. A head trained for one engine taps neighbouring layers in the other.",
    error="None: acceptance drops when a head is served by the engine it was not trained for.",
    releases="Every SGLang release read; vLLM 0.10 and later.",
    example="eagle3lint pair --sglang 0.5.23 --target llama/ --draft head/\n",
    fix="# Write the ids for the engine that serves the head (or train it for that engine).\n",
    language="shell",
)


_SGL204 = Explanation(
    runtime=_IDS_RUNTIME + " SGLang 0.5.8 and 0.5.10 also call the method with no ids while "
    "the CUDA graphs are captured (`cuda_graph_runner.py`), before the call with the head's "
    "ids: the graphs keep the default layers. From 0.5.12 the ids are set once, before the "
    "graphs are captured.",
    error="None: decode steps, replayed from the CUDA graphs, feed the head the default layers' "
    "states while prefill feeds it those it was trained on; it accepts fewer draft tokens.",
    releases="SGLang 0.5.8 and 0.5.10 (read: 0.5.8, 0.5.10, 0.5.12, 0.5.23).",
    example="""\
{"eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 15, 28]}}  # served by SGLang 0.5.8
""",
    fix="""\
{"eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 15, 28]}}  # served by SGLang 0.5.12+
""",
    language="json",
)


class SglangPairingRule(Rule):
    slug = "sglang-pairing"
    engines = ("sglang",)
    codes = (
        Code(
            "SGL201",
            "ids-outside-eagle-config",
            "The head's layer ids are at its config's top level, where SGLang does not read them.",
            Severity.WARNING,
            explain=_SGL201,
        ),
        Code(
            "SGL202",
            "capture-layer-unreachable",
            "SGLang would tap a layer the target does not have.",
            Severity.ERROR,
            explain=_SGL202,
        ),
        Code(
            "SGL203",
            "taps-differ-from-vllm",
            "The same head taps other layers in SGLang than in vLLM.",
            Severity.INFO,
            explain=_SGL203,
        ),
        Code(
            "SGL204",
            "cuda-graphs-tap-defaults",
            "The release captures its CUDA graphs with the target's default layers, not the "
            "head's.",
            Severity.WARNING,
            explain=_SGL204,
        ),
    )
    # A check without a head (`check`) has nothing for this rule: `pair` gives it one
    # (tests/test_sglang.py pairs real heads).
    valid = (
        Example(
            era="s2_gate",
            source="""
from torch import nn


class GoodForCausalLM(nn.Module):
    def set_eagle3_layers_to_capture(self, layer_ids=None):
        self.model.layers_to_capture = [val + 1 for val in layer_ids]

    def get_embed_and_head(self):
        return self.model.embed_tokens.weight, self.lm_head.weight


EntryClass = GoodForCausalLM
""",
        ),
    )

    def check(self, target: SglangTarget, ctx: RuleContext) -> Iterator[Finding]:  # type: ignore[override]
        pairing = ctx.pairing
        if not isinstance(pairing, SglangPairing) or target.capture is None:
            return
        if not pairing.uses_aux_hidden_states():
            return  # SGLang never calls the capture method for this head: no taps to judge
        if target.arch != pairing.target_architecture():
            return
        analysis = analyse_sglang_pairing(pairing, target)
        pairing.analysis = analysis
        path = str(pairing.draft_path)
        line = pairing.line_of(SGLANG_IDS_KEY)
        if analysis.ids is None and analysis.top_level_ids is not None:
            yield self.report(
                "SGL201",
                f"{SGLANG_IDS_KEY} {analysis.listed(analysis.top_level_ids)} is at the top level "
                "of the head's config: SGLang reads it only under eagle_config and taps the "
                f"target's default layers {analysis.listed(analysis.captured)} instead.",
                path,
                line,
                hint=f'Move it into "eagle_config": {{"{SGLANG_IDS_KEY}": [...]}}.',
            )
        if not analysis.read:
            return  # the ids go to a model class not read: what it taps is not known
        if analysis.out_of_range:
            release = f"SGLang {target.contract.version or '(version unknown)'}"
            yield self.report(
                "SGL202",
                f"{target.ref.name} has {analysis.layers} layers; with its "
                f"{analysis.convention_owner}'s convention ({analysis.convention}) SGLang "
                f"collects the states entering layers {analysis.listed(analysis.captured)}, and "
                f"{analysis.reading.raises}.set_eagle3_layers_to_capture indexes its layers "
                f"with each: {release} stops with IndexError at start-up, once the weights are "
                f"loaded, on {analysis.listed(analysis.out_of_range)}.",
                path,
                line,
            )
        elif analysis.unreachable:
            yield self.report(
                "SGL202",
                f"{target.ref.name} has {analysis.layers} layers; with its "
                f"{analysis.convention_owner}'s convention ({analysis.convention}) SGLang "
                f"collects the states entering layers {analysis.listed(analysis.captured)}, and "
                f"{analysis.listed(analysis.unreachable)} is never reached: the head gets fewer "
                "aux hidden states than it expects.",
                path,
                line,
            )
        bare = [c for c in target.contract.capture_calls if c.bare]
        defaults = analysis.default_captured()
        # A server that stops at start-up (SGL202's IndexError) replays no graph.
        starts = not analysis.out_of_range
        if bare and starts and analysis.ids is not None and analysis.captured != defaults:
            release = f"SGLang {target.contract.version or '(version unknown)'}"
            graphs = analysis.layers_listed(analysis.outputs_of(defaults))
            yield self.report(
                "SGL204",
                f"{release} captures its CUDA graphs after calling set_eagle3_layers_to_capture() "
                f"with no ids ({bare[0]}): decode steps replayed from them tap the outputs of "
                f"{target.ref.name}'s default layers {graphs}, not "
                f"{analysis.layers_listed(analysis.outputs)} as prefill does for this head.",
                path,
                line,
                hint="Serve the head with SGLang 0.5.12 or later, or with --disable-cuda-graph.",
            )
        vllm = analysis.vllm_outputs()
        if vllm is not None and analysis.outputs != vllm:
            yield self.report(
                "SGL203",
                f"SGLang taps the outputs of layers {analysis.layers_listed(analysis.outputs)} "
                f"of {target.ref.name} for this head ({analysis.convention_owner}: "
                f"{analysis.convention}); vLLM would tap {analysis.layers_listed(vllm)} for the "
                "same ids.",
                path,
                line,
            )


RULES = [SglangPairingRule]
