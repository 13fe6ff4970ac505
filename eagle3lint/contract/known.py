"""The newest contract known, for model files checked with no vLLM tree in reach.

`newest.json` is what `read_contract` extracts from the newest release we have checked (see
`tests/test_releases.py`, which extracts it again and compares), so it is never written
by hand.
"""

from __future__ import annotations

import json
from functools import cache
from importlib.resources import files

from eagle3lint.contract.model import Contract, ImageTokenBranch, ImageTokenMap


def contract_from_json(data: dict) -> Contract:
    tokens = data.get("image_tokens")
    return Contract(
        version=data["version"],
        source="newest known",
        root="",
        interfaces_module=data["interfaces_module"],
        protocol=data["protocol"],
        protocol_members=tuple(data["protocol_members"]),
        default_methods=frozenset(data["default_methods"]),
        getter=data["getter"],
        runtime_check=data["runtime_check"],
        unguarded_aux_calls=data.get("unguarded_aux_calls", False),
        mixin=data["mixin"],
        mixin_pp_relay=data["mixin_pp_relay"],
        multimodal_protocol=data["multimodal_protocol"],
        image_tokens=None
        if tokens is None
        else ImageTokenMap(
            "vllm/" + tokens["path"],
            tokens["line"],
            tuple(
                ImageTokenBranch(tuple(b["classes"]), b["attribute"], b["line"])
                for b in tokens["branches"]
            ),
            tokens["fallback"],
        ),
    )


def contract_to_json(contract: Contract, vllm_root: str) -> dict:
    tokens = contract.image_tokens
    return {
        "version": contract.version,
        "interfaces_module": contract.interfaces_module,
        "protocol": contract.protocol,
        "protocol_members": list(contract.protocol_members),
        "default_methods": sorted(contract.default_methods),
        "getter": contract.getter,
        "runtime_check": contract.runtime_check,
        "unguarded_aux_calls": contract.unguarded_aux_calls,
        "mixin": contract.mixin,
        "mixin_pp_relay": contract.mixin_pp_relay,
        "multimodal_protocol": contract.multimodal_protocol,
        "image_tokens": None
        if tokens is None
        else {
            "path": tokens.path.removeprefix(vllm_root).lstrip("/"),
            "line": tokens.line,
            "branches": [
                {"classes": list(b.classes), "attribute": b.attribute, "line": b.line}
                for b in tokens.branches
            ],
            "fallback": tokens.fallback,
        },
    }


@cache
def newest_contract() -> Contract:
    text = files("eagle3lint.contract").joinpath("newest.json").read_text(encoding="utf-8")
    return contract_from_json(json.loads(text))
