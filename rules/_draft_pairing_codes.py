"""The draft-pairing codes (EAG6xx): one table, read by the rule and its docs."""

from __future__ import annotations

from eagle3lint.api import Code, Severity

from . import _draft_pairing_explain as explained

CODES = (
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
        "`eagle-` in the string as EAGLE-1), or the release refuses the choice; a warning for "
        "a head whose drafter class `pair` cannot read, whose pairing is then not checked.",
        Severity.ERROR,
        explain=explained.EAG602,
    ),
    Code(
        "EAG603",
        "weights-not-loadable",
        "A drafter weight file the safetensors library refuses to load: data offsets out of "
        "order, overlapping, leaving bytes to no tensor or running past the end of the file, or "
        "a tensor whose offsets do not span its dtype x shape.",
        Severity.ERROR,
        explain=explained.EAG603,
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
        "EAG626",
        "layer-ids-absent",
        "The draft config names no layer ids: the runner taps the target's fallback layers, "
        "right only for a head trained on them (a note; a warning where they differ from the "
        "speculators' default `[2, n // 2, n - 3]`).",
        Severity.WARNING,
        explain=explained.EAG626,
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
        "EAG634",
        "d2t-values",
        "`d2t` maps a draft id outside the target vocabulary (an IndexError at the first "
        "draft), to a negative id (wrapped to the end of the vocabulary), or is all zeros or "
        "maps two draft ids to one target id (warnings).",
        Severity.ERROR,
        explain=explained.EAG634,
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
        "EAG642",
        "lm-head-quantization",
        "`draft_lm_head_quantization` is set but the checkpoint ships its own `lm_head`, which "
        "model runner V2 keeps: the release raises at load.",
        Severity.ERROR,
        explain=explained.EAG642,
    ),
    Code(
        "EAG643",
        "sliding-window-ignored",
        "The draft config gives its layers a sliding window that this release's drafter class "
        "never reads: the head runs full attention.",
        Severity.WARNING,
        explain=explained.EAG643,
    ),
    Code(
        "EAG644",
        "draft-context-short",
        "The draft's `max_position_embeddings` is below the served context and the release "
        "does not raise it: past it the drafter reads beyond its rotary cache (an error), or "
        "model runner V1 drafts nothing, or the served context is lowered to it (warnings).",
        Severity.ERROR,
        explain=explained.EAG644,
    ),
    Code(
        "EAG645",
        "fc-dropped",
        "`use_aux_hidden_state` is false but the checkpoint's `fc` takes several aux states: "
        "the release drops `fc` at load and the head reads the bare last hidden state.",
        Severity.WARNING,
        explain=explained.EAG645,
    ),
    Code(
        "EAG646",
        "partial-rotary-untrained",
        "A head written by speculators before 0.7.0 keeps the target's `partial_rotary_factor` "
        "below 1 in its `transformer_layer_config`, which this release applies: it was trained "
        "with full rotation.",
        Severity.WARNING,
        explain=explained.EAG646,
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
