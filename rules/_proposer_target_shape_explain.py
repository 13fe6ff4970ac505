"""The long forms of the proposer-target-shape codes (`eagle3lint explain EAG41x`)."""

from __future__ import annotations

from eagle3lint.api import Explanation

_RUNTIME = (
    "At pipeline-parallel size 1, the EAGLE proposer's `load_model` (`v1/spec_decode/eagle.py`, "
    "from 0.20.0 `llm_base_proposer.py`) shares the target's input embedding with the drafter: "
    "it takes the language model (the target, or `get_language_model()` of a multimodal one), "
    "reads its `model` (the decoder), and that decoder's `embed_tokens`, else `embedding`. It "
    "does so for every EAGLE method, right after the drafter's weights load and before the "
    "model runner checks `supports_eagle3()`, so it is the first error such a target meets. "
    "Model runner V2 (`v1/worker/gpu/spec_decode/eagle/utils.py`, the default from 0.30.0 and "
    "the only runner in 0.34.0) checks `supports_eagle3()` first: there a class that is not a "
    "SupportsEagle3 stops at EAG101's error, and the report says so, this one being what "
    "remains once it is one. Adding `SupportsEagle3` does not help: the module layout is the "
    "model's own."
)

EAG411 = Explanation(
    runtime=_RUNTIME,
    error="```text\nAttributeError: Target model does not have 'model' attribute\n```\n"
    "(0.16.0 on; before, Python's `'GPT2LMHeadModel' object has no attribute 'model'`), after "
    "both models' weights are loaded. Seen end to end on vLLM's CPU build 0.32.0 with GPT-2.",
    releases="All releases (the proposer's own message from 0.16.0).",
    example="""\
class GPT2LMHeadModel(nn.Module, SupportsPP):
    def __init__(self, *, vllm_config, prefix=""):
        self.transformer = GPT2Model(...)
""",
    fix="""\
# The decoder under the name the proposer reads (weight names follow the attribute:
# the checkpoint loader must map transformer.* to model.*)
self.model = GPT2Model(...)
""",
)

EAG412 = Explanation(
    runtime=_RUNTIME,
    error="```text\nAttributeError: Target model does not have 'embed_tokens' or 'embedding' "
    "attribute\n```\n(0.11.0 on; 0.10.0 reads `embed_tokens` unguarded), after the weights "
    "are loaded. Model runner V2 raises `RuntimeError: <drafter> needs the target input "
    "embedding, but it is unavailable on this PP stage` (0.30.0 on) only when the EAGLE-3 head "
    "has no embedding of its own (its `has_own_embed_tokens` is false), and before 0.30.0 "
    "shares nothing, silently (a warning then).",
    releases="All releases; `embedding` is accepted from 0.11.0.",
    example="""\
class GPT2Model(nn.Module):
    def __init__(self, *, vllm_config, prefix=""):
        self.wte = VocabParallelEmbedding(...)
""",
    fix="""\
self.embed_tokens = VocabParallelEmbedding(...)
""",
)


EAG413 = Explanation(
    runtime="vLLM's Transformers modeling backend builds the decoder as "
    "`AutoModel.from_config(config)`: transformers' base model of the checkpoint's model_type "
    "(`GPTNeoXModel` for `gpt_neox`). The proposer then looks for that class's `embed_tokens` or "
    "`embedding` (EAG412), so the verdict depends on transformers' code: eagle3lint reads it "
    "from the transformers installed beside the analysed vLLM, else from the release of it "
    "the vLLM's own requirement resolves to (never from the Python running eagle3lint), in "
    "`models/auto/modeling_auto.py` and `models/<type>/modeling_<type>.py`. A multimodal "
    "target of the backend takes its language model from that class too (its "
    "`language_model` or `text_model`). Where transformers is unknown (a vLLM folder with "
    "neither beside it), or the architecture name gives no model_type (the generic "
    "`TransformersForCausalLM`), the target is unverified (`eagle3_ready: null`).",
    error="None by itself; EAG412's error when the class names its embedding otherwise (GPT-NeoX's "
    "`embed_in`, GPT-BigCode's `wte`: seen end to end on vLLM's CPU build 0.32.0).",
    releases="Every release with the Transformers backend's EAGLE-3 support (0.22.0 on).",
    example="eagle3lint check --vllm 0.33.0 --arch TransformersForCausalLM\n",
    fix="eagle3lint check --vllm 0.33.0 --arch TransformersForCausalLM --model-type gpt_neox\n",
)


EAG414 = Explanation(
    runtime="The proposer builds the EAGLE-3 head with `start_layer_id` = the target's layer "
    "count (`model_executor/models/llama_eagle3.py`): the head's layers are "
    "`model.layers.<num_hidden_layers>` and on, the names that follow the target's. Each "
    "attention layer registers its name in one table for both models, and a name given twice "
    "raises. A target that names some of its own modules past its layer count (a loop model "
    "giving each loop its own KV cache as `layers.{loop_idx * num_hidden_layers + i}`) has "
    "already taken the head's names, so the head cannot be built, whatever else the target "
    "implements. The drafter is built after the target's weights are loaded, before the "
    "runner asks `supports_eagle3()`.",
    error="```text\nValueError: Duplicate layer name: model.layers.8.self_attn.attn\n```\n"
    "(an 8-layer target). Seen end to end on vLLM's CPU build 0.25.0 with "
    "IQuestLoopCoderForCausalLM.",
    releases="All releases (0.10 on) name the head so. The targets that collide, in the releases "
    "read here: IQuestLoopCoderForCausalLM (0.15 on) and OuroForCausalLM (0.15-0.25); "
    "DoryForCausalLM (0.33 on) names its loops so too, but has no `model` for the proposer "
    "(EAG411), which fails first.",
    example="""\
class LoopAttention(nn.Module):
    def __init__(self, config, prefix=""):
        for loop_idx in range(config.loop_num):
            unique = loop_idx * config.num_hidden_layers + extract_layer_index(prefix)
            name = prefix.replace(f"layers.{extract_layer_index(prefix)}", f"layers.{unique}")
            self.attn.append(Attention(..., prefix=f"{name}.attn"))
""",
    fix="""\
# The later loops' caches under a name of their own, not a layer index past the count:
name = f"{prefix}.loop{loop_idx}" if loop_idx else prefix
""",
)
