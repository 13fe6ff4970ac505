"""The newest contract known, for model files checked with no vLLM tree in reach.

`newest.json` is what `read_contract` extracts from the newest release we have checked (see
`tests/test_releases.py`, which extracts it again and compares), so it is never written
by hand.
"""

from __future__ import annotations

import json
from functools import cache
from importlib.resources import files

from eagle3lint.engines.vllm.contract.model import Contract
from eagle3lint.index.model import from_json, to_json

NEWEST_FIELDS = (
    "version",
    "interfaces_module",
    "protocol",
    "protocol_members",
    "default_methods",
    "defaults_take_bare_decoder",
    "getter",
    "runtime_check",
    "unguarded_aux_calls",
    "mixin",
    "mixin_pp_relay",
    "multimodal_protocol",
    "image_tokens",
    "target_embeddings",
    "runners",
    "refusals",
    "methods",
    "backend_capture",
    "head_layers",
)
"""The facts `newest.json` keeps: what applies to a model file wherever the tree is (not the
gate, whose file a model file never edits, nor where this copy was read)."""


def contract_from_json(data: dict) -> Contract:
    data = dict(data)
    for fact, key in _located(data):
        fact[key] = "vllm/" + fact[key] if fact[key] else ""
    return from_json(Contract, {**data, "source": "newest known", "root": ""})


def contract_to_json(contract: Contract, vllm_root: str) -> dict:
    data = {name: to_json(contract)[name] for name in NEWEST_FIELDS}
    for fact, key in _located(data):
        fact[key] = fact[key].removeprefix(vllm_root).lstrip("/")
    return data


def _located(data: dict) -> list[tuple[dict, str]]:
    """The facts of `data` that say in which file of the tree they were read, each with its
    keys that hold a path (`path`, `refusal_path`)."""
    found = [
        data.get("image_tokens"),
        data.get("runners"),
        *data.get("refusals", ()),
        data.get("backend_capture"),
        data.get("head_layers"),
        *data.get("target_embeddings", ()),
    ]
    return [
        (fact, key)
        for fact in found
        if isinstance(fact, dict)
        for key in fact
        if key == "path" or key.endswith("_path")
    ]


@cache
def newest_contract() -> Contract:
    text = (
        files("eagle3lint.engines.vllm.contract")
        .joinpath("newest.json")
        .read_text(encoding="utf-8")
    )
    return contract_from_json(json.loads(text))
