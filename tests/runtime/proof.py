"""Run fixed decoders for real: their own `Model.forward` and decoder-layer `forward` code, with
tiny stand-in sublayers on CPU (run by a release venv's python, never by eagle3lint).

Input (stdin, JSON): {"overlay": {module: file} | null, "targets": [[arch, module, class]],
"models": [[module, class]], "baseline": path}. With an overlay, each named module is loaded from
its file (the fixed copy) instead of the installed one; every other module stays the installed
release's. Without one (the unfixed run), each model's outputs with no aux layers requested are
saved to `baseline`; with one, they are compared with what was saved there.

Output (stdout): one JSON object per target (`supports_eagle3()` on the class) and per model and
decoder-layer class: {"model", "layer", "status", "why", "own_tap"}, status one of "proved",
"failed", "release-tap" (fix added methods only: the forward and its tap are the release's own,
so what they do is reported, not held against fix) and "cannot-construct".

A model and its layers are built by their own `__init__`, from the defaults of the model's config
class at a tiny width, with every vLLM sublayer class they name replaced by a placeholder (so the
values their forwards read, such as DeepseekV2's `use_mha`, are the ones `__init__` sets; where
that `__init__` cannot run here, bare objects with stand-in values); the model's layers are then
the proof's own, and the other classes of the model file it builds (Gemma 4's self-decoder, which
embeds the input ids) are built the same way. Every sublayer those forwards call (attention,
MLP, norms, embeddings) is a seeded stand-in; a norm a model file defines itself (Cohere's
LayerNorm, which returns the residual it is given) runs its own code. A stand-in norm honours the
fused call `norm(x, residual)` -> `(normed x + residual, x + residual)`. The residual stream
entering layer k is what the first sublayer inside layer k reads (for a fused norm, `x + residual`);
after the last layer, what the model's final norm reads (for a model without one, what it returns).
Each layer index is requested alone on four pipeline layouts (one rank; first, middle and last of
three, each rank fed what the one before returned), and the aux states the forward collected (read
from its frame when it returns, so non-last ranks count too) must be exactly the streams entering
the requested layers; with none requested, every layout must return exactly what the unfixed model
returned. A pipeline layout the unfixed forward cannot serve (it raises there, or returns no
IntermediateTensors from a rank before the last) is not run, nor are the ranks after it; the single
rank always is.
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.abc
import importlib.util
import inspect
import json
import os
import sys
import textwrap
import traceback
import types
import zlib
from collections.abc import Iterator
from typing import Any, ClassVar

os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
os.environ["CUDA_VISIBLE_DEVICES"] = ""
os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")

import torch
from oracle import StubFinder, missing_module
from torch import nn

NUM_LAYERS = 4
HIDDEN = 8
TOKENS = 3
VOCAB = 16
ONE_RANK = "one rank"
LAYOUTS: dict[str, tuple[int, int, bool, bool]] = {
    ONE_RANK: (0, 4, True, True),
    "first of 3": (0, 1, True, False),
    "middle of 3": (1, 3, False, False),
    "last of 3": (3, 4, False, True),
}
"""Pipeline layouts: start_layer, end_layer, is_first_rank, is_last_rank."""
INSTANCE_ATTRS = frozenset({"layers", "start_layer", "end_layer", "aux_hidden_state_layers"})
NORM_HINTS = ("norm", "ln")
EMBED_HINTS = ("embed", "wte")
NUMBER_HINTS = ("multiplier", "scale", "normalizer", "factor")
"""Plain numbers some forwards read (Granite's residual_multiplier, Gemma's normalizer)."""
NEVER_STUBBED = frozenset({"vllm", "torch", "transformers"})
MAX_STUBS = 4
STUBS = StubFinder(set())
LAYER_INDEX_NAMES = frozenset({"layer_idx", "layer_id", "layer_index", "idx", "block_idx"})
"""The per-layer indices a model hands its layers (Zamba2's `block_idx`: which shared block)."""
TINY: dict[str, int] = {
    "hidden_size": HIDDEN,
    "num_hidden_layers": NUM_LAYERS,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "head_dim": HIDDEN // 2,
    # Gemma 4's per-layer input embeddings, off (a setting of its config): their widths are
    # not the stand-ins'.
    "hidden_size_per_layer_input": 0,
}
"""A config's sizes at the stand-ins' width and depth, the heads dividing the width as the
real ones do, for what a layer's `__init__` computes from them."""
SET_ELSEWHERE: dict[str, dict[str, Any]] = {
    # Read by ArcticDecoderLayer, absent from vLLM's ArcticConfig: Snowflake Arctic's
    # config.json sets it (its dense-MoE residual MLP, on every second layer).
    "ArcticConfig": {"use_residual": True},
    # `attention_type` is set per layer by MiniMaxText01Model's layer builder from
    # `attn_type_list`: 1 (softmax attention) is what it gives every layer when the list is
    # absent. `max_model_len` is set by MiniMaxText01ForCausalLM from vLLM's model config.
    "MiniMaxConfig": {"attention_type": 1, "max_model_len": 2 * TOKENS},
}
"""Per config class, settings a layer's `__init__` reads that the class does not define, with
the value real checkpoints or the model's own code give them before the layer is built."""


class CannotConstruct(Exception):
    """The stand-in model cannot be built for this class: reported with the reason."""


def _seed(*parts: object) -> torch.Generator:
    generator = torch.Generator().manual_seed(zlib.crc32("/".join(map(str, parts)).encode()))
    return generator


class Recorder:
    """Where the streams entering each layer are written as the forward runs."""

    def __init__(self) -> None:
        self.layer: int | None = None
        self.streams: dict[int, torch.Tensor] = {}
        self.layers_run = 0
        self.after_loop: torch.Tensor | None = None

    def saw(self, stream: torch.Tensor) -> None:
        if self.layer is not None:
            self.streams.setdefault(self.layer, stream.detach().clone())
        elif self.layers_run and self.after_loop is None:
            self.after_loop = stream.detach().clone()


RECORDER = Recorder()


class StandIn(nn.Module):
    """A seeded sublayer: `norm` (RMS norm, fused with a residual when one is passed), `embed`
    (a lookup table) or `op` (tanh of a linear map, for attention, MLP and the rest)."""

    def __init__(self, kind: str, seed: str, arity: int, width: int = HIDDEN) -> None:
        super().__init__()
        self.kind, self.arity = kind, arity
        gen = _seed(seed)
        self.weight = nn.Parameter(1 + 0.1 * torch.randn(HIDDEN, generator=gen))
        self.matrix = nn.Parameter(torch.randn(HIDDEN, width, generator=gen) / HIDDEN**0.5)
        self.table = nn.Parameter(torch.randn(VOCAB, HIDDEN, generator=gen))

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        values = list(args) + list(kwargs.values())
        if self.kind == "embed":
            ids = next(v for v in values if isinstance(v, torch.Tensor))
            return self.table[ids]
        floats = [
            v
            for v in values
            if isinstance(v, torch.Tensor) and v.is_floating_point() and v.shape[-1] == HIDDEN
        ]
        if not floats:
            raise CannotConstruct(f"a {self.kind} stand-in got no [tokens, {HIDDEN}] tensor")
        x = floats[0]
        residual = kwargs.get("residual", args[1] if len(args) > 1 else None)
        if self.kind == "norm":
            if isinstance(residual, torch.Tensor):
                stream = x + residual
                RECORDER.saw(stream)
                return self._norm(stream), stream
            RECORDER.saw(x)
            return self._norm(x)
        RECORDER.saw(x)
        out = torch.tanh(x @ self.matrix)
        if self.arity == 0:
            floats[-1].copy_(out)
        return (out, *[None] * (self.arity - 1)) if self.arity > 1 else out

    def _norm(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight


class Config:
    """`self.config` for the forwards that read settings from it: Solar's skip connections,
    scaled to four layers, else the default of the model's config class where one is known
    (Granite's embedding_multiplier); any other setting means the model cannot be built here."""

    VALUES: ClassVar[dict[str, Any]] = {
        "bskcn_1": [1],
        "bskcn_2": [1],
        "bskcn_3": [2],
        "bskcn_4": [2],
        "bskcn_tv": [0.9, 0.8],
    }

    def __init__(self, defaults: Any) -> None:
        self.defaults = defaults

    def __getattr__(self, name: str) -> Any:
        if name in self.VALUES:
            return self.VALUES[name]
        if self.defaults is not None:
            # As the real config answers: `getattr(config, "x", default)` gets its default.
            return getattr(self.defaults, name)
        raise CannotConstruct(f"the forward reads config.{name}, which has no stand-in")


class Group:
    """A process group as vLLM's code asks about it: this rank's place and the group's size."""

    def __init__(self, first: bool, last: bool, world_size: int) -> None:
        self.is_first_rank, self.is_last_rank = first, last
        self.world_size, self.rank_in_group = world_size, 0


ALONE = Group(True, True, 1)
"""The tensor- and data-parallel groups: one rank each."""


def _function_ast(func: Any) -> ast.FunctionDef | ast.AsyncFunctionDef:
    tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    node = tree.body[0]
    assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    return node


def _self_uses(cls: type, func: Any, seen: set[str]) -> dict[str, tuple[str, int]]:
    """`self.X` that `func` (and the methods of `cls` it calls on self) reads from the instance:
    X -> (how: "call" | "value" | "attr", tuple arity of the call's result)."""
    uses: dict[str, tuple[str, int]] = {}
    node = _function_ast(func)
    parents: dict[ast.AST, ast.AST] = {}
    for parent in ast.walk(node):
        for child in ast.iter_child_nodes(parent):
            parents[child] = parent
    for sub in ast.walk(node):
        if not (isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name)):
            continue
        if sub.value.id != "self":
            continue
        name, parent = sub.attr, parents.get(sub)
        static = inspect.getattr_static(cls, name, None)
        if static is not None:
            method = static.__func__ if isinstance(static, staticmethod | classmethod) else static
            if inspect.isfunction(method) and name not in seen and _is_model_code(method):
                seen.add(name)
                for key, value in _self_uses(cls, method, seen).items():
                    uses.setdefault(key, value)
            continue
        if isinstance(parent, ast.Call) and parent.func is sub:
            grand = parents.get(parent)
            arity = 1
            if isinstance(grand, ast.Assign) and isinstance(grand.targets[0], ast.Tuple):
                arity = len(grand.targets[0].elts)
            elif isinstance(grand, ast.Expr):
                arity = 0  # `self.mamba(hidden_states, output)` writes into its last argument
            known = uses.get(name)
            uses[name] = ("call", arity if known is None else max(arity, known[1]))
        elif isinstance(parent, ast.Subscript) and isinstance(parents.get(parent), ast.Call):
            uses.setdefault(name, ("list", 1))
        elif isinstance(parent, ast.Attribute):
            uses.setdefault(name, ("attr", 1))
        else:
            uses.setdefault(name, ("value", 1))
    return uses


def _is_model_code(func: Any) -> bool:
    """vLLM's own model code (a decoder, a mixin), not torch's `nn.Module` machinery."""
    return getattr(func, "__module__", "").startswith("vllm.")


def _stand_in_for(
    owner_obj: nn.Module, owner: str, name: str, how: str, arity: int, layer_index: int, config: Any
) -> Any:
    owner_cls = type(owner_obj)
    low = name.lower()
    kind = (
        "norm"
        if any(h in low for h in NORM_HINTS)
        else "embed"
        if any(h in low for h in EMBED_HINTS)
        else "op"
    )
    if how == "call":
        built = _from_config(owner_cls, name, config)
        if (
            isinstance(built, nn.Module)
            and type(built).__module__.startswith("torch.")
            and "Norm" not in type(built).__name__  # norms are where the stream is read
            and not any(True for _ in built.parameters())
        ):
            # A weightless torch module (Sarvam's embedding dropout), as at inference.
            return built.eval()
        if _is_model_norm(type(built)):
            return _own_norm(built, f"{owner}.{name}")
        local = _model_local_class(owner_cls, name)
        if local is not None:
            return _real_sublayer(local, f"{owner}.{name}", layer_index, config)
        return StandIn(kind, f"{owner}.{name}", arity, _output_width(owner_obj, name))
    if how == "list":
        return nn.ModuleList(StandIn(kind, f"{owner}.{name}.{i}", 1) for i in range(2))
    if name == "config":
        return Config(config)
    if how == "value":
        if "eps" in low:
            return 1e-6
        if low in ("weight", "bias"):
            gen = _seed(owner, name)
            return nn.Parameter((low == "weight") + 0.1 * torch.randn(HIDDEN, generator=gen))
        if name in LAYER_INDEX_NAMES:
            return layer_index
        if any(h in low for h in NUMBER_HINTS):
            return 0.5
    derived = _from_config(owner_cls, name, config)
    if derived is not None:
        return derived
    raise CannotConstruct(
        f"{owner}.forward reads self.{name} ({'a value' if how == 'value' else 'its attributes'}),"
        " which has no stand-in"
    )


def _output_width(owner: nn.Module, name: str) -> int:
    """How wide a stand-in's output is: the stand-ins' width, except for vLLM's fused q/k/v
    projection in a layer that splits it itself by the sizes its `__init__` set (Jamba's and
    Bamba's attention layers: `qkv.split([self.q_size, self.kv_size, self.kv_size])`)."""
    q_size, kv_size = getattr(owner, "q_size", None), getattr(owner, "kv_size", None)
    if name == "qkv_proj" and isinstance(q_size, int) and isinstance(kv_size, int):
        return q_size + 2 * kv_size
    return HIDDEN


def _from_config(owner_cls: type, name: str, config: Any) -> Any:
    """What the owner's `__init__` assigns to `self.<name>` where that needs the config and
    vLLM's default settings alone (DeepseekV2Model's `self.hidden_size = config.hidden_size`,
    Gemma 4's `self.fast_prefill_enabled`, off by default; with no config class, only what
    needs none of its fields, as Sarvam's `nn.Dropout(getattr(config, "embedding_dropout",
    0.0))`), and the local names bound before it that do (Cohere2-MoE's `norm_cls, norm_eps =
    select_norm_impl(config)`); None where it needs more."""
    for init in _model_inits(owner_cls):
        bound: dict[str, Any] = {"config": config, "vllm_config": _vllm_config(config)}
        for node in ast.walk(_function_ast(init)):
            target = node.targets[0] if isinstance(node, ast.Assign) else None
            if isinstance(node, ast.AnnAssign):
                target = node.target
            if target is None or node.value is None:
                continue
            names = target.elts if isinstance(target, ast.Tuple) else [target]
            local = all(isinstance(n, ast.Name) for n in names)
            mine = (
                isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.value.id == "self"
                and target.attr == name
            )
            if not (local or mine):
                continue
            code = compile(ast.fix_missing_locations(ast.Expression(node.value)), name, "eval")
            try:
                value = eval(code, init.__globals__, bound)
            except Exception:  # it needs more than the config
                continue
            if mine:
                return value
            if len(names) == 1:
                bound[names[0].id] = value
            elif isinstance(value, tuple) and len(value) == len(names):
                bound.update((n.id, v) for n, v in zip(names, value, strict=True))
    return None


def _populate(
    obj: nn.Module,
    owner: str,
    layer_index: int,
    config: Any,
    unbuilt: str | None = None,
    funcs: list[Any] | None = None,
) -> None:
    """Give `obj` everything its forward (or `funcs`) reads: a sublayer it calls is always a
    stand-in; a value or parameter its real `__init__` set is kept; anything else gets a
    stand-in value. `unbuilt` is why the real `__init__` did not run ("" when it did, None
    when not tried)."""
    built = unbuilt == ""
    cls = type(obj)
    uses: dict[str, tuple[str, int]] = {}
    for func in funcs or [cls.forward]:
        for name, use in _self_uses(cls, func, {func.__name__}).items():
            uses.setdefault(name, use)
    for name, (how, arity) in sorted(uses.items()):
        held = obj._modules.get(name)
        if how == "call" and _is_model_norm(type(held)):
            _own_norm(held, f"{owner}.{name}")
            continue
        if _is_model_module(held):
            # A part the model built for real, whose methods it calls (Gemma 4's self-decoder,
            # which embeds the input ids): its own sublayers get stand-ins in turn.
            _populate(held, f"{owner}.{name}", layer_index, config, "", _methods(type(held)))
            continue
        if name in INSTANCE_ATTRS or (built and _set_to_none(obj, name)):
            # None from the real `__init__`: a sublayer this config does not have (Gemma 4's
            # per-layer embeddings), which the forward checks for before calling it.
            continue
        # `config` always gets its stand-in, which holds Solar's skip connections.
        if name != "config" and how not in ("call", "list") and _was_set(obj, name):
            continue
        try:
            stand_in = _stand_in_for(obj, owner, name, how, arity, layer_index, config)
        except CannotConstruct as exc:
            if built:
                # What the real `__init__` left unset, the forward reads on a path the config
                # does not take (Qwen3-Next's layer scales); if it does, it raises, reported.
                continue
            raise CannotConstruct(f"{exc}{unbuilt or ''}") from None
        setattr(obj, name, stand_in)


def _is_model_module(value: Any) -> bool:
    """A module of a model file's own class, built by its real `__init__`."""
    return (
        isinstance(value, nn.Module)
        and not isinstance(value, Placeholder)
        and type(value).__module__.startswith("vllm.model_executor.models.")
    )


def _methods(cls: type) -> list[Any]:
    """The class's own methods but `__init__`: what its owner may call on it."""
    return [
        func
        for name, func in vars(cls).items()
        if inspect.isfunction(func) and name != "__init__" and _is_model_code(func)
    ]


def _set_to_none(obj: nn.Module, name: str) -> bool:
    return obj.__dict__.get(name, obj._modules.get(name, False)) is None


def _was_set(obj: nn.Module, name: str) -> bool:
    held = obj._modules.get(name)
    return (
        name in obj.__dict__
        or name in obj._parameters
        or name in obj._buffers
        or (held is not None and not isinstance(held, Placeholder))
    )


def _model_local_class(owner_cls: type, name: str) -> type | None:
    """The model file's own norm class that `__init__` stores in `self.<name>` (Cohere's
    LayerNorm, which returns the residual it is given instead of adding it)."""
    init = _undecorated(owner_cls.__dict__.get("__init__"))
    if init is None or not _is_model_code(init):
        return None
    for node in ast.walk(_function_ast(init)):
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
            continue
        target, callee = node.targets[0], node.value.func
        if not (
            isinstance(target, ast.Attribute)
            and target.attr == name
            and isinstance(callee, ast.Name)
        ):
            continue
        found = init.__globals__.get(callee.id)
        if (
            isinstance(found, type)
            and issubclass(found, nn.Module)
            and found.__module__ == owner_cls.__module__
            and any(h in name.lower() for h in NORM_HINTS)
        ):
            return found
    return None


def _real_sublayer(cls: type, owner: str, layer_index: int, config: Any) -> nn.Module:
    """A model-local norm whose construction needs more than the config: bare, its own forward
    fed stand-in values; it reports what it reads."""
    module = object.__new__(cls)
    nn.Module.__init__(module)
    _populate(module, owner, layer_index, config)
    module.register_forward_hook(_saw_normed_stream)
    return module


def _own_norm(module: nn.Module, owner: str) -> nn.Module:
    """A model's own norm as built by its `__init__` (it runs its own code, as vLLM's generic
    layers are what the stand-ins replace): seeded, and what it normalizes recorded."""
    _seed_parameters(module, owner)
    module.register_forward_hook(_saw_normed_stream)
    return module


def _saw_normed_stream(module: nn.Module, args: Any, output: Any) -> None:
    """The stream a model's own norm normalizes: from a fused call, the new residual it returns
    (Nemotron's `x + residual`), unless it hands back the residual it was given (Cohere's, which
    normalizes `x` alone); else its input."""
    if (
        isinstance(output, tuple)
        and len(output) == 2
        and isinstance(output[1], torch.Tensor)
        and not any(output[1] is value for value in args)
    ):
        RECORDER.saw(output[1])
        return
    for value in args:
        if isinstance(value, torch.Tensor) and value.is_floating_point():
            RECORDER.saw(value)
            return


def _patch_distributed(funcs: list[Any], group: Group) -> None:
    """The module globals vLLM's code asks about the process groups (`group`: the pipeline's)
    and the forward context (which a model reads attention metadata from, for its layers'
    attention: a stand-in here)."""
    answers = {
        "get_pp_group": lambda: group,
        "get_tp_group": lambda: ALONE,
        "get_dp_group": lambda: ALONE,
        "get_tensor_model_parallel_world_size": lambda: ALONE.world_size,
        "get_tensor_model_parallel_rank": lambda: ALONE.rank_in_group,
        # What a collective over one tensor-parallel rank returns: its input.
        "tensor_model_parallel_all_reduce": lambda tensor: tensor,
        "get_forward_context": lambda: Settings(),
    }
    for func in funcs:
        namespace = func.__globals__
        for name, answer in answers.items():
            if name in namespace:
                namespace[name] = answer


def _layer_classes(model_cls: type) -> list[type]:
    """The decoder-layer classes the model's `__init__` can build (all of a hybrid's kinds),
    not the containers it builds around its layers (Gemma 4's cross-decoder, given
    `self.layers[k:]`)."""
    for init in _model_inits(model_cls):
        namespace = init.__globals__
        tree = _function_ast(init)
        containers = _built_from_layers(tree)
        found: list[type] = []
        for node in ast.walk(tree):
            value: Any = None
            if isinstance(node, ast.Name) and node.id not in containers:
                value = namespace.get(node.id)
            candidates = list(value.values()) if isinstance(value, dict) else [value]
            for candidate in candidates:
                if _is_layer_class(candidate, model_cls) and candidate not in found:
                    found.append(candidate)
        signature = inspect.signature(init)
        for param in signature.parameters.values():
            default = param.default
            if _is_layer_class(default, model_cls) and default not in found:
                found.append(default)
        if found:
            called = _layer_call(model_cls)
            return [c for c in found if called is None or _accepts(c.forward, *called)]
    return []


def _layer_call(model_cls: type) -> tuple[int, set[str]] | None:
    """How the model's forward calls each layer of its loop over `self.layers`: the number of
    positional arguments and the keywords (None when no such call is found)."""
    for node in ast.walk(_function_ast(model_cls.forward)):
        if not (isinstance(node, ast.For) and "self.layers" in ast.unparse(node.iter)):
            continue
        bound = {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
        for call in ast.walk(node):
            if (
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Name)
                and call.func.id in bound
                and not any(isinstance(a, ast.Starred) for a in call.args)
            ):
                return len(call.args), {k.arg for k in call.keywords if k.arg is not None}
    return None


def _accepts(forward: Any, positional: int, keywords: set[str]) -> bool:
    """Whether `forward` can be called as the model's loop calls its layers (Zamba2's shared
    attention block, which the hybrid layers call with its block index, cannot)."""
    try:
        inspect.signature(forward).bind(None, *[None] * positional, **dict.fromkeys(keywords))
    except TypeError:
        return False
    return True


def _built_from_layers(tree: ast.AST) -> set[str]:
    """The names called with `self.layers` (or a slice of it) among their arguments."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        for arg in [*node.args, *(k.value for k in node.keywords)]:
            base = arg.value if isinstance(arg, ast.Subscript) else arg
            if (
                isinstance(base, ast.Attribute)
                and base.attr == "layers"
                and isinstance(base.value, ast.Name)
                and base.value.id == "self"
            ):
                names.add(node.func.id)
    return names


def _undecorated(func: Any) -> Any:
    """The class's own `__init__` under vLLM's `support_torch_compile`, which replaces it with
    a wrapper holding the original in its closure."""
    if func is None or func.__qualname__.split(".")[0] != "_support_torch_compile":
        return func
    for cell in func.__closure__ or ():
        inner = cell.cell_contents
        if inspect.isfunction(inner) and inner.__name__ == "__init__":
            return _undecorated(inner)
    return func


def _is_layer_class(value: Any, model_cls: type) -> bool:
    if not (isinstance(value, type) and issubclass(value, nn.Module)) or value is model_cls:
        return False
    if not value.__module__.startswith("vllm.model_executor.models."):
        return False
    if value.__name__ == "PPMissingLayer" or "Norm" in value.__name__:
        return False
    params = inspect.signature(value.forward).parameters
    return "hidden_states" in params or "x" in params


def _build(model_cls: type, layer_cls: type, layout: tuple[int, int, bool, bool]) -> nn.Module:
    start, end, first, last = layout
    group = Group(first, last, 3)
    config = _tiny_config(layer_cls, model_cls)
    utils = importlib.import_module("vllm.model_executor.models.utils")
    # Also for the `__init__`s, which may ask the parallel sizes.
    _patch_distributed([_undecorated(layer_cls.__init__), *_model_inits(model_cls)], group)
    model, model_unbuilt = _constructed(model_cls, config, -1, _containers(model_cls, layer_cls))
    layers = []
    for k in range(NUM_LAYERS):
        if not start <= k < end:
            layers.append(utils.PPMissingLayer())
            continue
        layer, unbuilt = _constructed(layer_cls, config, k)
        _populate(layer, layer_cls.__name__, k, config, unbuilt)
        layer.register_forward_pre_hook(_enter(k))
        layer.register_forward_hook(_leave)
        layers.append(layer)
    model.layers = nn.ModuleList(layers)
    model.start_layer, model.end_layer = start, end
    model.aux_hidden_state_layers = ()
    _populate(model, model_cls.__name__, -1, config, model_unbuilt)
    _patch_distributed([model_cls.forward, layer_cls.forward], group)
    return model


class Placeholder(nn.Module):
    """What a vLLM sublayer class builds while a layer's real `__init__` runs: its arguments
    are dropped, as `_populate` puts a stand-in in its place for what the forward calls."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()


class Settings:
    """`vllm_config` and its parts for a model's and a layer's real `__init__`: the values given
    here, else what `defaults` (vLLM's own default config) holds, else None (an option left
    unset)."""

    def __init__(self, defaults: Any = None, **values: Any) -> None:
        self.__dict__.update(values, _defaults=defaults)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self._defaults, name, None)


def _vllm_config(config: Any) -> Settings:
    """What a model or layer `__init__` is given as `vllm_config`: the model's config as the
    model config's, the rest vLLM's defaults (one rank of each kind, Gemma 4's fast prefill
    off)."""
    model_config = Settings(hf_config=config, hf_text_config=config)
    return Settings(_default_vllm_config(), model_config=model_config)


@functools.cache
def _default_vllm_config() -> Any:
    """vLLM's default config, on CPU."""
    config = importlib.import_module("vllm.config")
    return config.VllmConfig(device_config=config.DeviceConfig(device="cpu"))


def _constructed(
    cls: type, config: Any, layer_index: int, real: frozenset[type] = frozenset()
) -> tuple[nn.Module, str]:
    """The layer (or, at index -1, the model) as its own `__init__` builds it from the model's
    config class (defaults, at the stand-ins' width) with every vLLM sublayer class a
    `Placeholder` (but the classes of `real`, built the same way), so that the values its
    forward reads (`self.use_mha`, a layer-scale parameter) are the ones `__init__` sets.
    Where that `__init__` cannot run here, a bare instance and why (for the report)."""
    try:
        return _run_init(cls, config, layer_index, real), ""
    except Exception as exc:
        module = object.__new__(cls)
        nn.Module.__init__(module)
        return module, f" (its __init__ did not run with stand-ins: {_short(exc)[:200]})"


def _containers(model_cls: type, layer_cls: type) -> frozenset[type]:
    """The classes of the model's file that its `__init__` builds for real: those that are
    neither its decoder layers nor the model (Gemma 4's YOCO halves, which hold its
    embedding)."""
    layers = {layer_cls, *_layer_classes(model_cls)}
    return frozenset(
        value
        for value in vars(sys.modules[model_cls.__module__]).values()
        if _is_vllm_module(value)
        and value.__module__ == model_cls.__module__
        and value not in layers
        and not issubclass(model_cls, value)
        and not issubclass(value, model_cls)
    )


def _run_init(
    cls: type, config: Any, layer_index: int, real: frozenset[type] = frozenset()
) -> nn.Module:
    init = _undecorated(cls.__init__)
    if not _is_model_code(init):
        raise CannotConstruct(f"{cls.__name__} has no __init__ of its own")
    if config is None:
        raise CannotConstruct("no config class is named in the model file or registered for it")
    vllm_config = _vllm_config(config)
    given = {
        "config": config,
        "vllm_config": vllm_config,
        "model_config": vllm_config.model_config,
        "prefix": "model" if layer_index < 0 else f"model.layers.{layer_index}",
        **dict.fromkeys(LAYER_INDEX_NAMES, layer_index),
    }
    kwargs: dict[str, Any] = {}
    for param in list(inspect.signature(init).parameters.values())[1:]:
        per_layer = getattr(config, f"{param.name}s", None)
        if param.name in given:
            kwargs[param.name] = given[param.name]
        elif isinstance(per_layer, list | tuple) and len(per_layer) > layer_index:
            # Qwen3-Next's `layer_type`, which the model takes from `config.layer_types`.
            kwargs[param.name] = per_layer[layer_index]
        elif _is_vllm_module(_annotation(param, init)):
            # A sublayer the model builds and hands in (Zamba2's shared attention block).
            kwargs[param.name] = Placeholder()
        elif param.default is inspect.Parameter.empty and param.kind not in (
            param.VAR_POSITIONAL,
            param.VAR_KEYWORD,
        ):
            raise CannotConstruct(f"{cls.__name__}.__init__ needs {param.name}")
    with _current_vllm_config():
        module = _instantiate(cls, (), kwargs, real)
    _seed_parameters(module, cls.__name__)
    return module


def _instantiate(
    cls: type, args: tuple[Any, ...], kwargs: dict[str, Any], real: frozenset[type]
) -> nn.Module:
    """`cls(*args, **kwargs)` by its own `__init__` (not the compile decorator's), with every
    vLLM sublayer class it names a `Placeholder` but the classes of `real`, which are built
    this way in turn (their own sublayers placeholders)."""
    init = _undecorated(cls.__init__)
    namespace = dict(init.__globals__)
    for name in _global_names(init.__code__):
        found = namespace.get(name)
        if name == "make_layers":
            # The layers are the proof's own (`_build`): vLLM's builder makes placeholders.
            namespace[name] = _placeholder_layers
        elif found in real:
            namespace[name] = functools.partial(_built_for_real, found)
        elif (
            _is_vllm_module(found)
            and not _is_model_norm(found)
            and found not in cls.__mro__  # `super(Base, self).__init__()` names its base
        ):
            namespace[name] = Placeholder
    patched = types.FunctionType(
        init.__code__, namespace, init.__name__, init.__defaults__, init.__closure__
    )
    patched.__kwdefaults__ = init.__kwdefaults__
    module = object.__new__(cls)
    patched(module, *args, **kwargs)
    return module


def _placeholder_layers(num_hidden_layers: int, *args: Any, **kwargs: Any) -> Any:
    """vLLM's `make_layers` for a model whose layers `_build` puts in afterwards."""
    return 0, num_hidden_layers, nn.ModuleList(Placeholder() for _ in range(num_hidden_layers))


def _built_for_real(cls: type, *args: Any, **kwargs: Any) -> nn.Module:
    return _instantiate(cls, args, kwargs, frozenset())


def _annotation(param: inspect.Parameter, func: Any) -> Any:
    """The parameter's annotation as an object (a string one looked up in the function's
    module), or None."""
    annotation = param.annotation
    if isinstance(annotation, str):
        return func.__globals__.get(annotation)
    return None if annotation is inspect.Parameter.empty else annotation


def _is_vllm_module(value: Any) -> bool:
    """A vLLM sublayer class (a model file's or vLLM's generic layers)."""
    return (
        isinstance(value, type)
        and issubclass(value, nn.Module)
        and value.__module__.startswith("vllm.")
    )


def _current_vllm_config() -> Any:
    """vLLM's default config (on CPU) as the current one, as while vLLM builds a model: the ops
    a layer's `__init__` builds itself (Bamba's rotary embedding) ask for it."""
    config = importlib.import_module("vllm.config")
    return config.set_current_vllm_config(_default_vllm_config())


def _seed_parameters(module: nn.Module, owner: str) -> None:
    """Seeded values, as a checkpoint would load, for the parameters `__init__` leaves at
    zeros or ones (a layer scale, a norm's weight)."""
    for name, param in module.named_parameters(recurse=False):
        noise = torch.randn(param.shape, generator=_seed(owner, name))
        param.data = param.data.float() + 0.1 * noise


def _is_model_norm(cls: type) -> bool:
    """A norm a model file defines itself (Cohere's LayerNorm, which returns the residual it is
    given; Nemotron's LayerNorm1P): built by its own `__init__`, it runs its own code, as
    vLLM's generic layers (RMSNorm, attention, MoE) are what the stand-ins replace."""
    return (
        issubclass(cls, nn.Module)
        and cls.__module__.startswith("vllm.model_executor.models.")
        and "Norm" in cls.__name__
    )


def _global_names(code: types.CodeType) -> set[str]:
    """The names `code` (and the comprehensions and lambdas inside it) may load."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


def _tiny_config(layer_cls: type, model_cls: type) -> Any:
    """An instance of the model's own config class with its defaults, at the stand-ins' width
    and depth, as vLLM's loading leaves it; None when none builds."""
    for found in _config_classes(layer_cls, model_cls):
        try:
            config = found()
        except Exception:  # a class whose defaults are incomplete
            continue
        for key, value in TINY.items():
            if hasattr(config, key):
                setattr(config, key, value)
        for key, value in SET_ELSEWHERE.get(found.__name__, {}).items():
            if not hasattr(config, key):
                setattr(config, key, value)
        _as_vllm_loads(config)
        return config
    return None


@functools.cache
def _config_classes(layer_cls: type, model_cls: type) -> tuple[type, ...]:
    """The config classes named where a `config` is annotated: in the layer's `__init__`, in
    the model's, then anywhere in the layer's model file (its classes share one config); with
    none named, the one vLLM registers for the model type the file is named after (Step3p5),
    else transformers' config for that model type."""
    pretrained = importlib.import_module("transformers").PretrainedConfig
    module = sys.modules[layer_cls.__module__]
    places = [
        (_function_ast(init), init.__globals__)
        for init in (_undecorated(layer_cls.__init__), next(_model_inits(model_cls), None))
        if init is not None and _is_model_code(init)
    ]
    places.append((ast.parse(inspect.getsource(module)), vars(module)))
    found: list[type] = []
    for tree, namespace in places:
        for annotation in _config_annotations(tree):
            for node in ast.walk(annotation):
                named = namespace.get(node.id) if isinstance(node, ast.Name) else None
                if (
                    isinstance(named, type)
                    and issubclass(named, pretrained)
                    and named is not pretrained
                    and named not in found
                ):
                    found.append(named)
    loading = importlib.import_module("vllm.transformers_utils.config")
    registry = getattr(loading, "_CONFIG_REGISTRY", {})
    model_type = layer_cls.__module__.rsplit(".", 1)[-1]
    if not found and model_type in registry:
        found.append(registry[model_type])
    # Else transformers' own, the text part first: what a decoder layer is built from (Gemma 4).
    mapping = importlib.import_module("transformers").CONFIG_MAPPING
    for name in (f"{model_type}_text", model_type):
        if not found and name in mapping:
            found.append(mapping[name])
    return tuple(found)


def _config_annotations(tree: ast.AST) -> list[ast.expr]:
    """The annotations of parameters and variables named `config` in `tree`."""
    found: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            named, annotation = node.target.id, node.annotation
        elif isinstance(node, ast.arg) and node.annotation is not None:
            named, annotation = node.arg, node.annotation
        else:
            continue
        if named == "config":
            found.append(annotation)
    return found


def _as_vllm_loads(config: Any) -> None:
    """What vLLM's config loading adds to a transformers config (`rope_parameters` from the
    legacy RoPE fields), where the release has that step."""
    loading = importlib.import_module("vllm.transformers_utils.config")
    patch = getattr(loading, "patch_rope_parameters", None)
    if patch is not None:
        patch(config)


def _model_inits(model_cls: type) -> Iterator[Any]:
    """The `__init__` functions of vLLM model code along the class's MRO, nearest first."""
    for klass in model_cls.__mro__:
        init = _undecorated(klass.__dict__.get("__init__"))
        if init is not None and _is_model_code(init):
            yield init


def _enter(k: int) -> Any:
    def hook(module: nn.Module, args: Any) -> None:
        RECORDER.layer = k

    return hook


def _leave(module: nn.Module, args: Any, output: Any) -> None:
    RECORDER.layer = None
    RECORDER.layers_run += 1


def _inputs(model_cls: type, layout: tuple[int, int, bool, bool], handed: Any) -> dict[str, Any]:
    """The forward's arguments; a rank after the first gets what the previous rank returned."""
    first = layout[2]
    kwargs: dict[str, Any] = {
        "input_ids": torch.randint(0, VOCAB, (TOKENS,), generator=_seed("inputs")),
        "positions": torch.arange(TOKENS),
        "intermediate_tensors": None if first else handed,
        "inputs_embeds": None,
    }
    params = inspect.signature(model_cls.forward).parameters
    if "position_ids" in params:  # Bailing's name for the positions
        kwargs["position_ids"] = kwargs.pop("positions")
    accepted = {k: v for k, v in kwargs.items() if k in params or _has_var_keyword(params.values())}
    required = [
        p.name
        for p in params.values()
        if p.name != "self"
        and p.default is inspect.Parameter.empty
        and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        and p.name not in accepted
    ]
    if required:
        raise CannotConstruct(f"{model_cls.__name__}.forward needs {', '.join(required)}")
    return accepted


def _has_var_keyword(params: Any) -> bool:
    return any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)


def _run(
    model_cls: type,
    layer_cls: type,
    layout: tuple[int, int, bool, bool],
    aux: tuple[int, ...],
    handed: Any,
) -> tuple[Any, list[torch.Tensor] | None, Recorder]:
    """One forward; returns its output, the aux list its frame held at return, the recorder."""
    global RECORDER
    RECORDER = Recorder()
    model = _build(model_cls, layer_cls, layout)
    model.aux_hidden_state_layers = aux
    inputs = _inputs(model_cls, layout, handed)
    code = model_cls.forward.__code__
    held: dict[str, Any] = {}

    def tracer(frame: types.FrameType, event: str, arg: Any) -> Any:
        if event == "return" and frame.f_code is code:
            held.update(frame.f_locals)

    previous = sys.getprofile()
    sys.setprofile(tracer)
    try:
        with torch.no_grad():
            # The forward itself: vLLM's compile decorator replaces `__call__`, not `forward`.
            output = model_cls.forward(model, **inputs)
    finally:
        sys.setprofile(previous)
    return output, held.get("aux_hidden_states"), RECORDER


def _plain(model_cls: type, layer_cls: type) -> tuple[dict[str, Any], str]:
    """Each layout's output with no aux layers requested, ranks chained as in a pipeline, up
    to the first pipeline layout the forward cannot serve (the ranks after it are fed nothing),
    with why: it raises, or a rank before the last returns no IntermediateTensors. The single
    rank must run."""
    outputs: dict[str, Any] = {}
    handed: Any = None
    for label, layout in LAYOUTS.items():
        try:
            handed = _run(model_cls, layer_cls, layout, (), handed)[0]
        except Exception as exc:
            if label == ONE_RANK:
                raise
            return outputs, f"{label}, where it raises {_short(exc)}"
        if not layout[3] and type(handed).__name__ != "IntermediateTensors":
            return outputs, f"{label}, where it returns {type(handed).__name__}"
        outputs[label] = handed
    return outputs, ""


def _flatten(output: Any) -> list[torch.Tensor | None]:
    if isinstance(output, torch.Tensor) or output is None:
        return [output]
    if isinstance(output, tuple | list):
        return [t for item in output for t in _flatten(item)]
    tensors = getattr(output, "tensors", None)
    if isinstance(tensors, dict):
        return [t for key in sorted(tensors) for t in _flatten(tensors[key])]
    return []


def _same(a: list[torch.Tensor | None], b: list[torch.Tensor | None]) -> bool:
    return len(a) == len(b) and all(
        x is y if x is None or y is None else torch.equal(x, y) for x, y in zip(a, b, strict=True)
    )


def _check_taps(
    model_cls: type, layer_cls: type, plain: dict[str, Any]
) -> tuple[list[str], list[str]]:
    """Every layer index requested alone, on every layout: (captured states that are wrong,
    forwards that raised). Both empty: proved."""
    wrong: list[str] = []
    raised: list[str] = []
    handed: Any = None
    for label, layout in LAYOUTS.items():
        if label not in plain:
            break
        start, end, _, last = layout
        for k in range(NUM_LAYERS + 1):
            where = f"{label}, layer {k}"
            try:
                output, collected, recorder = _run(model_cls, layer_cls, layout, (k,), handed)
            except Exception as exc:
                raised.append(f"{where}: raised {_short(exc)}")
                continue
            collected = list(collected or [])
            truth = recorder.streams.get(k)
            if k == NUM_LAYERS and last:
                # What the final norm reads; a model without one returns the stream itself.
                truth = recorder.after_loop
                if truth is None and isinstance(output, tuple):
                    truth = _flatten(output[0])[0]
            if len(collected) > 1:
                wrong.append(f"{where}: {len(collected)} aux states for one requested layer")
                continue
            if start <= k < end and not collected:
                wrong.append(f"{where}: requested on its own rank and not captured")
                continue
            if not collected:
                continue
            if truth is None:
                if not (k == end and not last):
                    wrong.append(f"{where}: captured though the layer is not on this rank")
                continue
            if not torch.equal(collected[0], truth):
                delta = (collected[0] - truth).abs().max().item()
                wrong.append(
                    f"{where}: aux state differs from the stream entering it by {delta:.3g}"
                )
            if last:
                if not (isinstance(output, tuple) and len(output) == 2):
                    wrong.append(f"{where}: the last rank does not return (hidden, aux)")
                elif not _same(_flatten(output[0]), _flatten(plain[label])):
                    wrong.append(f"{where}: requesting aux layers changed the hidden states")
        handed = plain[label]
    return wrong, raised


def _import_class(module: str, name: str) -> Any:
    """The class, stubbing optional third-party packages the model file imports but this venv
    lacks (as `oracle.py` does); vLLM, torch and transformers are never stubbed."""
    for _ in range(MAX_STUBS):
        try:
            return _resolve(module, name)
        except ModuleNotFoundError as exc:
            # Also the cause of transformers' own "Could not import module" error (its Gemma 4
            # processor, which imports torchvision, which the oracle venvs go without).
            top = missing_module(exc).split(".")[0]
            if not top or top in NEVER_STUBBED or top in STUBS.names:
                raise
            STUBS.names.add(top)
    return _resolve(module, name)


def _resolve(module: str, name: str) -> Any:
    found: Any = importlib.import_module(module)
    for part in name.split("."):
        found = getattr(found, part)
    return found


class Overlay(importlib.abc.MetaPathFinder):
    """Loads the named modules from the fixed copy's files; everything else as installed."""

    def __init__(self, files: dict[str, str]) -> None:
        self.files = files

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        file = self.files.get(fullname)
        if file is None:
            return None
        installed = importlib.machinery.PathFinder.find_spec(fullname, path)
        locations = installed.submodule_search_locations if installed else None
        return importlib.util.spec_from_file_location(
            fullname, file, submodule_search_locations=locations
        )


def _prove(
    model: str, layer_cls: type, model_cls: type, baseline: dict[str, Any], fixed: bool
) -> dict[str, Any]:
    record: dict[str, Any] = {"model": model, "layer": layer_cls.__name__}
    key = f"{model}/{layer_cls.__name__}"
    source = inspect.getsource(model_cls.forward)
    try:
        plain, stopped = _plain(model_cls, layer_cls)
        again, _ = _plain(model_cls, layer_cls)
    except Exception as exc:  # the stand-ins do not fit this model's code, or the fix broke it
        broken = fixed and key in baseline
        why = f"with no aux layers the fixed forward raises {_short(exc)}; the unfixed one ran"
        record.update(
            status="failed" if broken else "cannot-construct",
            why=why if broken else _short(exc),
            own_tap=False,
        )
        return record
    if any(not _same(_flatten(plain[k]), _flatten(again[k])) for k in plain):
        why = "two runs with the same stand-ins differ (a sublayer the stand-ins do not model)"
        record.update(status="cannot-construct", why=why)
        return record
    if not fixed:
        outputs = {k: _flatten(v) for k, v in plain.items()}
        baseline[key] = {"source": source, "outputs": outputs, "stopped": stopped}
        record.update(status="baseline", why="")
        return record
    before = baseline.get(key)
    wrong: list[str] = []
    own_tap = False
    if before is None:
        wrong.append("the unfixed model did not run with the same stand-ins")
    else:
        own_tap = before["source"] == source
        for label, output in before["outputs"].items():
            if label not in plain:
                wrong.append(f"with no aux layers the fixed forward raises on {stopped}")
            elif not _same(_flatten(plain[label]), output):
                wrong.append(f"{label}: with no aux layers the output differs from before the fix")
    problems = [p for found in _check_taps(model_cls, layer_cls, plain) for p in found]
    # Where fix added methods only, what the forward's tap does is the release's own doing.
    release = problems if own_tap else []
    wrong += [] if own_tap else problems
    status = "failed" if wrong else "release-tap" if release else "proved"
    if before is not None and before["stopped"]:
        # A release that cannot serve a pipeline layout holds the fix to those it serves.
        release.append(f"pipeline layouts not run from the unfixed forward's {before['stopped']}")
    record.update(status=status, why="; ".join((wrong or release)[:6]), own_tap=own_tap)
    return record


def _short(exc: BaseException) -> str:
    frame = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    where = f" ({os.path.basename(frame.filename)}:{frame.lineno})" if frame else ""
    return f"{type(exc).__name__}: {exc}{where}"[:400]


def main() -> int:
    request = json.loads(sys.stdin.read())
    overlay = request.get("overlay")
    interfaces = importlib.import_module("vllm.model_executor.models.interfaces")
    importlib.import_module("vllm.model_executor.models.registry")
    # After vLLM's and transformers' own imports, so that no stub passes for a real package.
    sys.meta_path.append(STUBS)
    if overlay:
        sys.meta_path.insert(0, Overlay(overlay))
    for arch, module, name in request.get("targets", []):
        try:
            cls = _import_class(module, name)
            answer = {"arch": arch, "supports_eagle3": bool(interfaces.supports_eagle3(cls))}
        except Exception as exc:
            answer = {"arch": arch, "supports_eagle3": None, "why": _short(exc)}
        print(json.dumps(answer), flush=True)
    baseline_path = request["baseline"]
    baseline = {} if not overlay else torch.load(baseline_path)
    for module, name in request.get("models", []):
        model = f"{module}.{name}"
        try:
            model_cls = _import_class(module, name)
            layer_classes = _layer_classes(model_cls)
        except Exception as exc:
            print(json.dumps({"model": model, "status": "cannot-construct", "why": _short(exc)}))
            continue
        if not layer_classes:
            why = f"no decoder-layer class found in {name}.__init__"
            print(json.dumps({"model": model, "status": "cannot-construct", "why": why}))
        for layer_cls in layer_classes:
            record = _prove(model, layer_cls, model_cls, baseline, bool(overlay))
            print(json.dumps(record), flush=True)
    if not overlay:
        torch.save(baseline, baseline_path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
