"""The long forms of the draft-pairing codes (`eagle3lint explain EAG6xx`): their examples
are draft configs, shown as JSON."""

from __future__ import annotations

from eagle3lint.api import Explanation


def _explain(runtime: str, error: str, releases: str, example: str, fix: str) -> Explanation:
    return Explanation(runtime, error, releases, example, fix, language="json")


EAG601 = _explain(
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
)

EAG602 = _explain(
    "`--speculative-config` may leave `method` out. Up to 0.33 `SpeculativeConfig` keeps "
    "`eagle`, `eagle3` (and `dflash`, `dspark`) as configured and otherwise tests the model "
    'string: `"eagle-" in model.lower()` gives EAGLE-1, then `"eagle3"` EAGLE-3, then '
    "DFlash/DSpark/MTP clues; what matches none is `draft_model` (0.25 on) or refused "
    "(0.16: `NotImplementedError`). From 0.34 a configured method always stands, checked "
    "against the method the draft class declares; an unset one goes through "
    "`_CHECKPOINT_DETECTION_ORDER` and falls back to `draft_model`. An EAGLE-3 head in a "
    "folder named `my-head` or `EAGLE-3-llama` is therefore not run as EAGLE-3.",
    "```text\nNotImplementedError: Unsupported speculative method: 'None'\n```\n(0.16), "
    "`Model architectures ['EagleLlamaForCausalLMEagle3'] are not supported` (method "
    "eagle), or, method draft_model, `TypeError: Eagle3LlamaForCausalLM.forward() missing 1 "
    "required positional argument: 'hidden_states'` at the first draft (seen on vLLM's CPU "
    "build 0.32.0).",
    "All releases; the clues and the fallback per release are in docs/pairing.md.",
    '{"model": "/models/llama-head", "num_speculative_tokens": 3}\n',
    '{"method": "eagle3", "model": "/models/llama-head", "num_speculative_tokens": 3}\n',
)

EAG603 = _explain(
    "vLLM loads the drafter's `.safetensors` files with the safetensors library, which checks "
    "each header before it maps a tensor: sorted by their `data_offsets`, the tensors must "
    "tile the bytes after the header exactly, from the first to the last (no hole, no overlap, "
    "no offsets in reverse, nothing past the end of the file or left after the last tensor), "
    "and each must span its dtype's size times the product of its shape. `pair` reads only "
    "the headers, and checks the same.",
    "```text\nsafetensors_rust.SafetensorError: Error while deserializing header: "
    "MetadataIncompleteBuffer\n```\nwhen the draft's weights are loaded, after the target's "
    "(or `InvalidOffset`, `TensorInvalidInfo`, `MisalignedSlice`; newer safetensors words "
    "them `incomplete metadata, file not fully covered`, `invalid offset for tensor …`).",
    "All releases: the check is the safetensors library's.",
    '{"fc.weight": {"dtype": "BF16", "shape": [4096, 12288], "data_offsets": [0, 0]}}  '
    "// the header; no data after it\n",
    '{"fc.weight": {"dtype": "BF16", "shape": [4096, 12288], "data_offsets": [0, 100663296]}}  '
    "// and 100,663,296 bytes of data after the header (what safetensors' save_file writes)\n",
)

EAG611 = _explain(
    "The drafter sizes `fc` as `target_hidden_size x aux count` (its own `hidden_size` "
    "when `target_hidden_size` is absent) and the proposer asserts "
    "`target_hidden_states.shape[-1] == self.hidden_size` after combining them.",
    "A shape mismatch loading `fc.weight`, or `AssertionError` at the first propose, "
    "after the weights loaded (vllm#18906, vllm#37966).",
    "All releases.",
    '{"hidden_size": 4096}  // target hidden_size 7168, no target_hidden_size\n',
    '{"hidden_size": 4096, "target_hidden_size": 7168}\n',
)

EAG612 = _explain(
    "`fc` concatenates the aux hidden states the target returns (each of the target's "
    "hidden size) and projects them to the draft width; its weight's second dimension "
    "must be target hidden x the number of distinct layers the runner's ids tap.",
    "```text\nAssertionError: Attempted to load weight (torch.Size([4096, 12288])) into "
    "parameter (torch.Size([4096, 21504]))\n```\nat load, or a matmul shape error at the "
    "first forward.",
    "All releases.",
    "// fc.weight [4096, 12288] with 3 ids and a 7168-wide target\n",
    "// retrain or pick the head trained for this target: fc.weight [4096, 21504]\n",
)

EAG613 = _explain(
    "A checkpoint without `embed_tokens` shares the target's embedding. Up to 0.24 the "
    "proposer shares it whatever its width, so a draft narrower or wider than the "
    "target crashes in its first layer; from 0.25 it compares the widths and keeps the "
    "draft's own embedding, which the checkpoint never filled (reported as a warning).",
    "A shape error in the draft's first layer (≤ 0.24); from 0.25 no error, a randomly "
    "initialised embedding and near-zero acceptance *(inferred from the proposer code)*.",
    "Crashes in 0.16.0-0.24.0; silent from 0.25.0 (the proposer compares the widths).",
    '{"hidden_size": 4096}  // target 7168, no embed_tokens.weight in the checkpoint\n',
    "// ship embed_tokens.weight [vocab, 4096] with the head\n",
)

EAG621 = _explain(
    "The target returns one aux state per distinct layer id it is asked for: every "
    "decoder taps by membership (`idx in aux_hidden_state_layers`), so a repeated id is "
    "captured once; the target's default `(2, n // 2, n - 3)` is `(2, 2, 1)` on a 4-layer "
    "target, two states. The drafter sizes `fc` for a fixed 3 (0.16-0.21) or for "
    "`num_aux_hidden_states`, else the length of "
    "`eagle_config.eagle_aux_hidden_state_layer_ids`, else 3 (0.22+). The runner reads "
    "the top-level ids first, so two lists of different lengths disagree.",
    "A shape error in `fc` at the first propose, such as `shape '[-1, 384]' is invalid "
    "for input of size 1280` (a 4-layer target with the default ids, vLLM's CPU build "
    "0.25.0 and 0.32.0). When the batch's token count happens to fit, the CPU matmul "
    "reshapes the states silently and the head drafts from scrambled features.",
    "All releases.",
    '{"eagle_aux_hidden_state_layer_ids": [2, 16, 29, 30]}  // on 0.18.0 (fc fixed at 3)\n',
    '{"eagle_aux_hidden_state_layer_ids": [2, 16, 29]}\n',
)

EAG622 = _explain(
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
)

EAG623 = _explain(
    "Index k captures the stream entering layer k. A tap before each layer never sees "
    "k == num_hidden_layers (EagleModelMixin's taps after each layer do); larger or "
    "negative ids match no layer. The runner does not check: fewer aux states come "
    "back than `fc` expects.",
    "A shape error in `fc` at the first propose *(inferred)*.",
    "All releases; k == num_hidden_layers is reachable on targets using EagleModelMixin (0.18+).",
    '{"eagle_aux_hidden_state_layer_ids": [2, 30, 61]}  // 61 layers, pre-layer taps\n',
    '{"eagle_aux_hidden_state_layer_ids": [2, 30, 58]}\n',
)

EAG624 = _explain(
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
)

EAG625 = _explain(
    "Every vLLM decoder collects aux hidden states inside its layer loop "
    "(`if idx in self.aux_hidden_state_layers: aux_hidden_states.append(...)`), so they "
    "reach `combine_hidden_states` in layer order whatever order the ids are written in "
    "(from 0.30 the ids are also stored sorted). `fc` then mixes them in that order.",
    "No error: a head trained on another order drafts with permuted inputs, and acceptance drops.",
    "All releases.",
    '{"eagle_aux_hidden_state_layer_ids": [33, 18, 2]}\n',
    '{"eagle_aux_hidden_state_layer_ids": [2, 18, 33]}\n',
)

EAG626 = _explain(
    "With no layer ids in the draft config, every runner asks the target's "
    "`get_eagle3_default_aux_hidden_state_layers` (`get_eagle3_aux_hidden_state_layers` "
    "before 0.18), which returns `(2, n // 2, n - 3)` for every target of 0.10-0.34. "
    "speculators trains on `[2, n // 2, n - 3]` when given no ids "
    "(`resolve_target_layer_ids`) and writes the ids it used into the head's config; a head "
    "converted or trained elsewhere with other ids, whose config does not say so, is fed "
    "layers it was never trained on.",
    "None: the runner logs 'Using Eagle3 auxiliary layers from model' and acceptance "
    "collapses (vllm#50170: 1.21 % instead of about 59 %).",
    "All releases; `pair` names the fallback layers it read from the target's getter.",
    '{"architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama"}\n',
    '{"architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama",\n'
    ' "eagle_aux_hidden_state_layer_ids": [2, 16, 29]}\n',
)

EAG631 = _explain(
    "With a reduced draft vocabulary, `compute_logits` maps draft id i to target id "
    "i + d2t[i]. Without `d2t` in the checkpoint the mapping stays zeros: draft id i is "
    "read as target id i.",
    "None: every draft token is a wrong target token; acceptance collapses.",
    "All releases.",
    '{"draft_vocab_size": 32000}  // target vocab 163840, checkpoint without d2t\n',
    "// ship d2t [32000] (and t2d [163840]) with the head\n",
)

EAG632 = _explain(
    "`d2t` must hold `draft_vocab_size` offsets, `t2d` one flag per target token and "
    "`lm_head.weight` `draft_vocab_size` rows of the draft width.",
    "A shape mismatch when the weights load.",
    "All releases.",
    '{"draft_vocab_size": 32000}  // d2t [64000]\n',
    '{"draft_vocab_size": 64000}\n',
)

EAG633 = _explain(
    "A checkpoint without `lm_head.weight` shares the target's head, whose rows are the "
    "target vocabulary; that is valid only when the vocabularies are equal.",
    "A shape error in `compute_logits`, or logits over the wrong vocabulary *(inferred)*.",
    "All releases.",
    '{"draft_vocab_size": 32000}  // target vocab 128256, no lm_head.weight\n',
    "// ship lm_head.weight [32000, hidden] with the head\n",
)

EAG634 = _explain(
    "A drafter with a reduced vocabulary computes `targets = arange(draft_vocab_size) + "
    "draft_id_to_target_id` (the checkpoint's `d2t`) and scatters its logits there: "
    "`logits_new[:, targets] = logits`. vLLM checks `d2t`'s shape, never its values; `t2d` is "
    "skipped at load.",
    "`IndexError: index 128302 is out of bounds for dimension 0 with size 128256` (a device "
    "assert on GPU) at the first draft, after the weights loaded; negative or repeated "
    "targets, or an all-zero map, raise nothing and lower acceptance.",
    "All releases that read `d2t` (every release with EAGLE-3).",
    "d2t = [0, 5, 128300, ...]  // draft id 2 → 2 + 128300, beyond a 128256-token target\n",
    "d2t = [0, 5, 9, ...]  // i + d2t[i] strictly increasing, below the target vocabulary\n",
)

EAG641 = _explain(
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
)

EAG642 = _explain(
    "Model runner V2 shares the target's `lm_head` with the drafter unless the drafter loaded "
    "its own (`has_own_lm_head`, set by any `lm_head` weight) that differs from the target's. "
    "`draft_lm_head_quantization` quantizes the shared head; a drafter that keeps its own gets "
    "`ValueError`. A reduced draft vocabulary always keeps its own head.",
    "```text\nValueError: draft_lm_head_quantization needs a drafter that shares the target "
    "lm_head.\n```\nafter the weights loaded.",
    "0.33.0 and later, model runner V2 (V1 ignores the option).",
    '{"method": "eagle3", "model": "head-with-32k-lm_head", "draft_lm_head_quantization": "fp8"}\n',
    '{"method": "eagle3", "model": "head-with-32k-lm_head"}\n',
)

EAG643 = _explain(
    "The drafter's decoder layer takes its attention window from the config "
    '(`layer_types[i] == "sliding_attention"` then `sliding_window`) only where its code, '
    "or the target decoder layer it builds on, reads them: `Eagle3Qwen3ForCausalLM` does "
    "from 0.26.0, `Eagle3LlamaForCausalLM` through llama.py's layer, the DeepSeek drafter "
    "never.",
    "No error: the head attends over the whole context it was trained to window, and "
    "acceptance moves (reports range from -31 % to +42 %).",
    "Per drafter class and release, read from its module (docs/pairing.md).",
    '{"layer_types": ["sliding_attention"], "sliding_window": 4096}  // Qwen3 head, 0.25.0\n',
    '{"layer_types": ["full_attention"]}\n',
)

EAG644 = _explain(
    "A draft checkpoint's `max_position_embeddings` sizes its rotary cache and, through "
    "the draft's model config, its max model len; the target may be served longer "
    "(`--max-model-len`, or the target's own length). From 0.27 "
    "`_maybe_override_draft_max_position_embeddings` raises the draft's positions to the "
    "target's (from 0.33 only for cache-only RoPE types); the draft's max model len is "
    "derived before that, and model runner V1 (`effective_drafter_max_model_len`) zeroes "
    "the drafts of a batch whose longest sequence passes it. From 0.33 "
    "`_limit_max_model_len_to_draft` lowers the served context to an unraised draft's "
    "(model runner V2). Without any of these the drafter gathers past its rotary cache.",
    "No error at start-up. V1: the same output with no draft accepted past N (vLLM's CPU "
    "build, 0.25.0 and 0.32.0: a head of 64 positions at a 100-token prompt, 0 of 30 draft "
    "tokens accepted; of 512, 10 of 10; docs/end-to-end.md); V2 up to 0.25: "
    "`device-side assert triggered` or garbage drafts (vllm#48894); 0.33+: a log warning "
    "`reducing max_model_len to N`.",
    "All releases; which outcome is read per release and runner (docs/pairing.md).",
    '{"max_position_embeddings": 2048}  // target served at 131072\n',
    '{"max_position_embeddings": 131072}  // or --max-model-len 2048\n',
)

EAG645 = _explain(
    "With `eagle_config.use_aux_hidden_state` false the runner asks the target for no aux "
    "states, `combine_hidden_states` returns the last hidden state unchanged, and the "
    "drafter's `load_weights` drops every `fc.` weight (`skip_substrs` to 0.25, "
    "`orig_to_new_substr` from 0.27). A head trained on three aux states keeps its "
    "`fc.weight` [H, 3H] in the checkpoint, and it is silently thrown away.",
    "None: the head runs on the target's last hidden state, which it was not trained on, and "
    "its drafts are rarely accepted.",
    "All releases with EAGLE-3 (the drop is read from each drafter module).",
    '{"eagle_config": {"use_aux_hidden_state": false}}  // fc.weight [4096, 12288]\n',
    '{"eagle_config": {}}  // use_aux_hidden_state defaults to true\n',
)

EAG646 = _explain(
    "A speculators head's rotary comes from its `transformer_layer_config`. From 0.15 "
    "`get_rope` sets `rotary_dim = int(head_size * partial_rotary_factor)` from "
    "`rope_parameters` (a top-level factor is copied there by `patch_rope_parameters`); "
    "0.10-0.11's Llama attention passes the top-level `partial_rotary_factor` only. "
    "speculators before 0.7.0 copied the target's factor into the head's config (Qwen3.5/3.6, "
    "Gemma 4: below 1) but trained the head's layer with full rotation (speculators#613); "
    "0.7.0 rescales MRoPE sections and writes 1.0 (`draft_mrope_full_head_hack`, on by "
    "default).",
    "None: the head runs and acceptance drops to about zero.",
    "Every release that applies the factor where the config holds it: 0.15 and later for "
    "either place, 0.10-0.11 for a top-level factor only.",
    '{"speculators_version": "0.6.0", "transformer_layer_config": {"rope_parameters": '
    '{"rope_type": "default", "partial_rotary_factor": 0.25}}}\n',
    '{"speculators_version": "0.6.0", "transformer_layer_config": {"rope_parameters": '
    '{"rope_type": "default", "partial_rotary_factor": 1.0}}}\n',
)

EAG651 = _explain(
    "A speculators checkpoint records the model it was trained against under "
    "`speculators_config.verifier`; vLLM never compares it with the target it is "
    "served with.",
    "None: a head trained for another model proposes tokens that are rarely accepted.",
    "All releases with speculators support.",
    '{"speculators_config": {"verifier": {"architectures": ["Qwen3ForCausalLM"]}}}\n'
    "// target LlamaForCausalLM\n",
    '{"speculators_config": {"verifier": {"architectures": ["LlamaForCausalLM"]}}}\n',
)

EAG661 = _explain(
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
)
