"""Hostile input, round 4: `pair`. Either engine's `pair` bounds a draft's layer-id lists and
shows a long one a few ids at a time; a weight file the safetensors library refuses to load is a
named finding (EAG603), not "verdict ok"; a `num_speculative_tokens` vLLM refuses is a usage
error.

Each test runs under `no_hang`, with a generous bound: a regression fails instead of stalling.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_hostile import no_hang
from test_hostile_inputs import RELEASE, pair, refused, run
from test_pair import LLAMA, LLAMA_HEAD, LLAMA_TENSORS, draft_folder
from test_sglang import ERAS, write_pair
from typer.testing import Result

from eagle3lint.drafts.draft import MAX_SPECULATIVE_TOKENS
from eagle3lint.layer_ids import MAX_LAYER_IDS

IDS_KEY = "eagle_aux_hidden_state_layer_ids"
MILLION = list(range(10**6))


def longest_line(result: Result) -> int:
    return max(map(len, result.output.splitlines()))


# -- 4. layer-id lists: bounded, and shown a few ids at a time, in both engines -----------------
def holding(holder: str, key: str, ids: list[int]) -> dict[str, Any]:
    return {holder: {key: ids}} if holder else {key: ids}


@pytest.mark.parametrize(
    ("holder", "key"),
    [("", IDS_KEY), ("eagle_config", IDS_KEY), ("dflash_config", "target_layer_ids")],
)
@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_a_million_layer_ids_are_refused_at_once_by_either_engine(
    tmp_path: Path, engine: str, holder: str, key: str
) -> None:
    """SGLang's `pair` took 144 s, 702 MB and printed 73 MB for 10^6 ids; vLLM's read none
    under `dflash_config`."""
    config = {**LLAMA_HEAD, **holding(holder, key, MILLION)}
    if engine == "sglang":
        target, draft = write_pair(tmp_path, 8, "LlamaForCausalLM", None)
        (draft / "config.json").write_text(json.dumps(config))
        tree = ERAS / "s2_gate"
    else:
        target, draft, tree = LLAMA, draft_folder(tmp_path, config), ERAS / "e3_mixin"
    result = run("pair", str(tree), "--target", str(target), "--draft", str(draft), seconds=60)
    where = f"{holder}.{key}" if holder else key
    refused(
        result,
        f"--draft: {draft / 'config.json'}: {where} holds 1,000,000 layer ids "
        f"(at most {MAX_LAYER_IDS:,} are read)",
    )
    assert len(result.output) < 1000


def test_sglang_pair_shows_a_few_of_many_ids(tmp_path: Path) -> None:
    """Every message and row listed the ids whole; the JSON report still holds them all."""
    ids = list(range(MAX_LAYER_IDS))
    target, draft = write_pair(tmp_path, 8, "LlamaForCausalLM", {IDS_KEY: ids})
    args = ("pair", str(ERAS / "s2_gate"), "--target", str(target), "--draft", str(draft))
    text = run(*args)
    assert text.exit_code == 1, text.output
    assert longest_line(text) < 400
    assert f"[0, 1, 2, 3, 4, …, 1023] ({MAX_LAYER_IDS:,} ids)" in text.output  # the ids row
    assert "never reached" in text.output  # SGL202, with a few of the 1,016 layers
    report = json.loads(run(*args, "--format", "json").stdout)
    assert report["pairing"]["ids"] == ids


def test_vllm_pair_shows_a_few_of_many_ids(
    vllm_release: Callable[[str], Path], tmp_path: Path
) -> None:
    ids = list(range(31, 0, -1)) * 30  # every id a layer of the 32-layer target
    draft = draft_folder(tmp_path, {**LLAMA_HEAD, IDS_KEY: ids}, LLAMA_TENSORS)
    result = pair(vllm_release(RELEASE), draft)
    assert result.exit_code == 1, result.output
    assert longest_line(result) < 400
    assert "requests 930 layers [31, 30, 29, 28, 27, …, 1] (930 ids)" in result.output  # EAG621
    assert "1→out of layer 0, 2→out of layer 1" in result.output  # the taps row, in layer order


# -- 7. weight files the safetensors library refuses, and num_speculative_tokens ----------------
def edited(path: Path, change: Callable[[dict[str, Any]], object], extra: int = 0) -> None:
    """The safetensors file `path` with its header changed by `change` and `extra` bytes more
    (fewer, when negative) after it; its data (a hole) is never read."""
    with path.open("r+b") as weights:
        (size,) = struct.unpack("<Q", weights.read(8))
        header = json.loads(weights.read(size))
        data = path.stat().st_size - 8 - size
        change(header)
        raw = json.dumps(header).encode()
        weights.seek(0)
        weights.write(struct.pack("<Q", len(raw)) + raw)
        weights.truncate(8 + len(raw) + data + extra)


def offsets(name: str, to: Callable[[int, int], list[int]]) -> Callable[[dict[str, Any]], None]:
    def change(header: dict[str, Any]) -> None:
        header[name]["data_offsets"] = to(*header[name]["data_offsets"])

    return change


def every_offset_zero(header: dict[str, Any]) -> None:
    """What `pair`'s tests wrote before: headers alone, every tensor at [0, 0]."""
    for name, info in header.items():
        if name != "__metadata__":
            info["data_offsets"] = [0, 0]


def add_f4(header: dict[str, Any]) -> None:
    end = max(info["data_offsets"][1] for n, info in header.items() if n != "__metadata__")
    header["scales"] = {"dtype": "F4", "shape": [3], "data_offsets": [end, end + 1]}


FC_SPAN = 2 * 4096 * 12288
DATA = 2 * sum(map(math.prod, LLAMA_TENSORS.values()))
"""The bytes of `LLAMA_TENSORS`' data, BF16."""
MALFORMED = {
    "offsets-past-the-end": (
        lambda header: None,
        -2,
        "its tensors end past the end of the file (MetadataIncompleteBuffer)",
    ),
    "bytes-left-over": (
        lambda header: None,
        2,
        "the bytes after its last tensor belong to no tensor (MetadataIncompleteBuffer)",
    ),
    "reversed-offsets": (
        offsets("fc.weight", lambda begin, end: [end, begin]),
        0,
        "tensor 'fc.weight' has data_offsets that end before they begin (InvalidOffset)",
    ),
    "negative-offset": (
        offsets("fc.weight", lambda begin, end: [-1, end]),
        0,
        "tensor 'fc.weight' has no data_offsets of two non-negative integers "
        "(InvalidHeaderDeserialization)",
    ),
    "dtype-and-span-disagree": (
        lambda header: header["fc.weight"].update(dtype="F32"),
        0,
        f"the data_offsets of tensor 'fc.weight' do not span F32 x [4096, 12288] "
        f"({2 * FC_SPAN:,} bytes) (TensorInvalidInfo)",
    ),
    "overlapping": (
        offsets("d2t", lambda begin, end: [begin - 2, end - 2]),
        0,
        "tensor 'd2t' overlaps the tensor before it (InvalidOffset)",
    ),
    "a-hole": (
        offsets("d2t", lambda begin, end: [begin + 2, end + 2]),
        0,
        "the bytes before tensor 'd2t' belong to no tensor (InvalidOffset)",
    ),
    "headers-only": (
        every_offset_zero,
        -DATA,
        f"the data_offsets of tensor 'fc.weight' do not span BF16 x [4096, 12288] "
        f"({FC_SPAN:,} bytes) (TensorInvalidInfo)",
    ),
    "half-a-byte": (
        add_f4,
        1,
        "tensor 'scales' (F4 x [3]) is not a whole number of bytes (MisalignedSlice)",
    ),
}


def pair_json(vllm_release: Callable[[str], Path], draft: Path, *extra: str) -> dict[str, Any]:
    result = pair(vllm_release(RELEASE), draft, "--format", "json", *extra)
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


def weight_findings(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for t in report["targets"] for f in t["findings"] if f["code"] == "EAG603"]


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_weight_file_safetensors_refuses_is_named_not_ok(
    vllm_release: Callable[[str], Path], tmp_path: Path, case: str
) -> None:
    """Each of these was "verdict ok": offsets were read only to find d2t's values."""
    change, extra, why = MALFORMED[case]
    draft = draft_folder(tmp_path, LLAMA_HEAD, LLAMA_TENSORS)
    weights = draft / "model.safetensors"
    edited(weights, change, extra)
    with no_hang(60):
        report = pair_json(vllm_release, draft)
    [finding] = weight_findings(report)
    assert finding["severity"] == "error"
    assert finding["message"] == (
        f"The safetensors library refuses {weights}: {why}. vLLM cannot load the draft's weights."
    )
    assert report["pairing"]["verdict"] == "blocked (1 pairing error)"


@pytest.mark.parametrize(
    "change",
    [
        lambda header: None,
        lambda header: header["fc.weight"].update(dtype="F8_E4M3FNUZ"),  # a dtype not known here
    ],
    ids=["as-saved", "unknown-dtype"],
)
def test_a_weight_file_safetensors_loads_is_ok(
    vllm_release: Callable[[str], Path], tmp_path: Path, change: Callable[[dict[str, Any]], None]
) -> None:
    draft = draft_folder(tmp_path, LLAMA_HEAD, LLAMA_TENSORS)
    edited(draft / "model.safetensors", change)
    report = pair_json(vllm_release, draft)
    assert weight_findings(report) == []
    assert report["pairing"]["verdict"] == "ok"


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (0, "0"),
        (-1, "-1"),
        (10**9, "1000000000"),
        (MAX_SPECULATIVE_TOKENS + 1, f"{MAX_SPECULATIVE_TOKENS + 1}"),
        (2**64, f"{2**64}"),
        (3.5, "3.5"),
        ("three", '"three"'),
        ([3], "[3]"),
    ],
)
def test_num_speculative_tokens_vllm_refuses_is_a_usage_error(
    vllm_release: Callable[[str], Path], tmp_path: Path, value: object, shown: str
) -> None:
    result = pair_with_tokens(value, vllm_release, tmp_path)
    refused(
        result,
        f"num_speculative_tokens must be a whole number from 1 to {MAX_SPECULATIVE_TOKENS:,}, "
        f"not {shown}",
    )


def pair_with_tokens(value: object, vllm_release: Callable[[str], Path], tmp_path: Path) -> Result:
    """`pair` of the Llama head with `num_speculative_tokens` set to `value`."""
    draft = draft_folder(tmp_path, LLAMA_HEAD, LLAMA_TENSORS)
    settings = {"method": "eagle3", "model": str(draft), "num_speculative_tokens": value}
    vllm_release(RELEASE)
    return run(
        "pair", "--vllm", RELEASE, "--target", str(LLAMA), "--no-cache",
        "--speculative-config", json.dumps(settings),
    )  # fmt: skip


@pytest.mark.parametrize("value", [1, MAX_SPECULATIVE_TOKENS, "3", 3.0])
def test_num_speculative_tokens_vllm_takes_is_taken(
    vllm_release: Callable[[str], Path], tmp_path: Path, value: object
) -> None:
    """vLLM's configs are pydantic dataclasses, which read `"3"` and `3.0` as 3."""
    result = pair_with_tokens(value, vllm_release, tmp_path)
    assert result.exit_code == 0, result.output
