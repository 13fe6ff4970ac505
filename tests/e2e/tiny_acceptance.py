"""Speculative acceptance with vLLM's CPU build, for `tiny.py accept` (run in the build's venv).

Random heads are rarely accepted by a random target, so acceptance says nothing about a pairing
until the two agree by construction. Here both read one hidden direction (`DIRECTION`): the
target's embeddings hold a positive constant there and no layer writes to it, the head's fc sums
the three aux states' copies of it and its layer writes nothing there either; both final norms
keep that direction alone and both lm_heads map it to one token (`TOKEN`). Target and head then
emit `TOKEN` at every step, and every draft the drafter makes is accepted. A runner that drafts
nothing verifies placeholder ids 0 instead (model runner V1's `_input_fits_in_drafter`): none is
accepted. Acceptance measures exactly whether the drafter drafts.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

COUNTERS = {
    "vllm:spec_decode_num_drafts": "drafts",
    "vllm:spec_decode_num_draft_tokens": "draft_tokens",
    "vllm:spec_decode_num_accepted_tokens": "accepted_tokens",
}
MAX_MODEL_LEN = 256
MAX_TOKENS = 16
SPECULATIVE_TOKENS = 2


DIRECTION = 0
TOKEN = 5
"""Not 0: the placeholder drafts of a runner that does not draft are ids 0."""


def _agree(weights: dict[str, Any]) -> None:
    """Make a tiny Llama target or EAGLE-3 head (`tiny.write_target`/`write_head` layouts) emit
    `TOKEN` whatever its input: see the module's docstring."""
    prefix = "model." if "model.norm.weight" in weights else ""
    for name, tensor in weights.items():
        if name.endswith(("o_proj.weight", "down_proj.weight")):
            tensor[DIRECTION] = 0  # no layer writes to the direction
    if "model.embed_tokens.weight" in weights:
        weights["model.embed_tokens.weight"][:, DIRECTION] = 10.0
    if "fc.weight" in weights:
        fc = weights["fc.weight"]
        fc[DIRECTION] = 0
        for state in range(fc.shape[1] // fc.shape[0]):
            fc[DIRECTION, state * fc.shape[0] + DIRECTION] = 1.0
    norm = weights[f"{prefix}norm.weight"]
    norm.zero_()
    norm[DIRECTION] = 1.0
    head = weights["lm_head.weight"]
    head.zero_()
    head[TOKEN, DIRECTION] = 1.0


def agreeing_copy(folder: Path, scratch: Path) -> Path:
    """A copy of a model folder (the same config) whose weights emit `TOKEN` at every step."""
    from safetensors.torch import load_file, save_file

    copy = scratch / f"agreeing-{folder.name}"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(folder, copy)
    for file in copy.glob("*.safetensors"):
        weights = load_file(str(file))
        _agree(weights)
        save_file(weights, str(file), metadata={"format": "pt"})
    return copy


def accept(target: Path, head: Path, prompt_length: int) -> dict[str, Any]:
    """Greedy generation after a prompt of `prompt_length` tokens, with speculation from `head`;
    the spec-decode counters of `llm.get_metrics()`, or the exception vLLM raised."""
    from vllm import LLM, SamplingParams

    scratch = Path.cwd()
    speculative = {
        "method": "eagle3",
        "model": str(agreeing_copy(head, scratch)),
        "num_speculative_tokens": SPECULATIVE_TOKENS,
    }
    prompt = [(7 * i + 3) % 1000 + 1 for i in range(prompt_length)]
    try:
        llm = LLM(
            model=str(agreeing_copy(target, scratch)),
            skip_tokenizer_init=True,
            speculative_config=speculative,
            max_model_len=MAX_MODEL_LEN,
            max_num_seqs=1,
            enforce_eager=True,
            dtype="float32",
            disable_log_stats=False,
            distributed_executor_backend="uni",
        )
        outputs = llm.generate(
            [{"prompt_token_ids": prompt}],
            SamplingParams(max_tokens=MAX_TOKENS, temperature=0, detokenize=False, ignore_eos=True),
        )
    except Exception as error:  # the point is to record it
        return {"error": f"{type(error).__name__}: {str(error).strip()[:300]}"}
    counts = {name: 0 for name in COUNTERS.values()}
    for metric in llm.get_metrics():
        if metric.name in COUNTERS:
            counts[COUNTERS[metric.name]] += int(metric.value)
    return {"tokens": list(outputs[0].outputs[0].token_ids), **counts}
