"""`eagle3lint pair` on real releases: each draft-pairing code with a draft that triggers it and
a neighbouring one that does not, the seed Kimi-K2.5 pair, and the translation of both config
formats. Draft folders are written here: a config.json and a sparse .safetensors (its header,
and holes for its tensors' data)."""

from __future__ import annotations

import json
import math
import re
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from eagle3lint.cli import app
from eagle3lint.drafts.checkpoint import read_header

REPO = Path(__file__).resolve().parent.parent
LLAMA = REPO / "fixtures" / "pairing" / "llama-3.1-8b" / "config.json"
QWEN3 = REPO / "fixtures" / "pairing" / "qwen3-8b" / "config.json"
KIMI = REPO / "examples" / "kimi-k2.5" / "config.json"

LLAMA_HEAD: dict[str, Any] = {
    "architectures": ["LlamaForCausalLMEagle3"],
    "model_type": "llama",
    "hidden_size": 4096,
    "num_hidden_layers": 1,
    "vocab_size": 128256,
    "draft_vocab_size": 32000,
    "eagle_aux_hidden_state_layer_ids": [2, 16, 29],
}
LLAMA_TENSORS: dict[str, list[int]] = {
    "fc.weight": [4096, 3 * 4096],
    "d2t": [32000],
    "t2d": [128256],
    "lm_head.weight": [32000, 4096],
    "embed_tokens.weight": [128256, 4096],
}


def write_safetensors(
    path: Path, tensors: dict[str, list[int]], data: dict[str, tuple[str, bytes]] | None = None
) -> None:
    """A safetensors file as the library writes one: the 8-byte length, the JSON header, and
    the tensors' bytes one after another. Those of `data` (name → dtype, bytes) are written;
    the others are BF16 zeros left as a hole of a sparse file (no disk space, nothing read)."""
    header: dict[str, Any] = {}
    chunks: list[tuple[int, bytes]] = []
    end = 0
    for name, shape in tensors.items():
        dtype, values = (data or {}).get(name, ("BF16", b""))
        size = len(values) if values else 2 * math.prod(shape)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [end, end + size]}
        chunks.append((end, values))
        end += size
    header["__metadata__"] = {"format": "pt"}
    raw = json.dumps(header).encode()
    with path.open("wb") as file:
        file.write(struct.pack("<Q", len(raw)) + raw)
        for offset, values in chunks:
            if values:
                file.seek(8 + len(raw) + offset)
                file.write(values)
        file.truncate(8 + len(raw) + end)


def draft_folder(
    root: Path, config: dict[str, Any], tensors: dict[str, list[int]] | None = None
) -> Path:
    folder = root / "draft"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    if tensors is not None:
        write_safetensors(folder / "model.safetensors", tensors)
    return folder


def pair(
    vllm_release: Callable[[str], Path],
    version: str,
    target: Path,
    draft: Path,
    *extra: str,
) -> tuple[int, dict[str, Any]]:
    vllm_release(version)
    args = ["pair", "--vllm", version, "--target", str(target), "--draft", str(draft)]
    result = CliRunner().invoke(app, [*args, "--format", "json", *extra])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)


def pairing_codes(report: dict[str, Any]) -> list[str]:
    return [
        f["code"] for t in report["targets"] for f in t["findings"] if f["code"].startswith("EAG6")
    ]


def head(**changes: Any) -> dict[str, Any]:
    config = {**LLAMA_HEAD, **changes}
    return {k: v for k, v in config.items() if v is not None}


def tensors(**changes: list[int] | None) -> dict[str, list[int]]:
    merged = {**LLAMA_TENSORS, **changes}
    return {k: v for k, v in merged.items() if v is not None}


# (code, release, draft config, tensors, extra args) that trigger it, then a neighbour.
CASES = {
    "EAG601": (
        ("0.18.0", head(architectures=["Qwen3ForCausalLM"]), tensors(), ()),
        ("0.18.0", head(), tensors(), ()),
    ),
    "EAG611": (
        ("0.18.0", head(target_hidden_size=5120), tensors(**{"fc.weight": [4096, 15360]}), ()),
        ("0.18.0", head(target_hidden_size=4096), tensors(), ()),
    ),
    "EAG612": (
        ("0.18.0", head(), tensors(**{"fc.weight": [4096, 8192]}), ()),
        ("0.18.0", head(), tensors(**{"fc.weight": [4096, 12288]}), ()),
    ),
    "EAG613": (
        (
            "0.18.0",
            head(hidden_size=2048, target_hidden_size=4096),
            tensors(
                **{"fc.weight": [2048, 12288], "lm_head.weight": [32000, 2048]},
                **{"embed_tokens.weight": None},
            ),
            (),
        ),
        (
            "0.18.0",
            head(hidden_size=2048, target_hidden_size=4096),
            tensors(
                **{"fc.weight": [2048, 12288], "lm_head.weight": [32000, 2048]},
                **{"embed_tokens.weight": [128256, 2048]},
            ),
            (),
        ),
    ),
    "EAG621": (
        (
            "0.18.0",
            head(eagle_aux_hidden_state_layer_ids=[2, 10, 16, 29]),
            tensors(**{"fc.weight": [4096, 16384]}),
            (),
        ),
        (
            "0.22.0",
            head(
                eagle_aux_hidden_state_layer_ids=[2, 10, 16, 29],
                eagle_config={"eagle_aux_hidden_state_layer_ids": [2, 10, 16, 29]},
            ),
            tensors(**{"fc.weight": [4096, 16384]}),
            (),
        ),
    ),
    "EAG622": (
        (
            "0.18.0",
            head(
                eagle_aux_hidden_state_layer_ids=None,
                eagle_config={"eagle_aux_hidden_state_layer_ids": [2, 16, 29]},
            ),
            tensors(),
            (),
        ),
        ("0.18.0", head(), tensors(), ()),
    ),
    "EAG623": (
        ("0.18.0", head(eagle_aux_hidden_state_layer_ids=[2, 16, 33]), tensors(), ()),
        ("0.18.0", head(eagle_aux_hidden_state_layer_ids=[2, 16, 32]), tensors(), ()),
    ),
    "EAG624": (
        ("0.18.0", head(eagle_aux_hidden_state_layer_ids=[1, 16, 29]), tensors(), ()),
        ("0.18.0", head(eagle_aux_hidden_state_layer_ids=[2, 16, 29]), tensors(), ()),
    ),
    "EAG631": (
        ("0.18.0", head(), tensors(d2t=None, t2d=None), ()),
        ("0.18.0", head(), tensors(t2d=None), ()),
    ),
    "EAG632": (
        ("0.18.0", head(), tensors(d2t=[64000]), ()),
        ("0.18.0", head(), tensors(d2t=[32000]), ()),
    ),
    "EAG633": (
        ("0.18.0", head(), tensors(**{"lm_head.weight": None}), ()),
        ("0.18.0", head(draft_vocab_size=None), tensors(**{"lm_head.weight": None}), ()),
    ),
    "EAG641": (
        ("0.17.0", head(norm_before_fc=True), tensors(), ()),
        ("0.18.0", head(norm_before_fc=True), tensors(), ()),
    ),
    "EAG661": (
        ("0.18.0", head(), tensors(), ("--pp", "2")),
        ("0.33.0", head(), tensors(), ("--pp", "2")),
    ),
}


@pytest.mark.parametrize("code", sorted(CASES))
def test_code_and_its_neighbour(
    code: str, vllm_release: Callable[[str], Path], tmp_path: Path
) -> None:
    trigger, neighbour = CASES[code]
    for (version, config, weights, extra), wanted in ((trigger, True), (neighbour, False)):
        folder = tmp_path / ("trigger" if wanted else "neighbour")
        _, report = pair(
            vllm_release, version, LLAMA, draft_folder(folder, config, weights), *extra
        )
        assert (code in pairing_codes(report)) is wanted, (version, pairing_codes(report))


def speculators_head(model_type: str, verifier: str, **top: Any) -> dict[str, Any]:
    return {
        "architectures": ["Eagle3Speculator"],
        "speculators_model_type": "eagle3",
        "draft_vocab_size": 32000,
        "target_hidden_size": 4096,
        "eagle_aux_hidden_state_layer_ids": [2, 18, 33],
        "transformer_layer_config": {
            "model_type": model_type,
            "hidden_size": 4096,
            "num_hidden_layers": 1,
            "vocab_size": 151936,
        },
        "speculators_config": {
            "proposal_methods": [{"proposal_type": "greedy", "speculative_tokens": 3}],
            "verifier": {"name_or_path": "Qwen/Qwen3-8B", "architectures": [verifier]},
        },
        **top,
    }


QWEN_TENSORS = {
    "fc.weight": [4096, 12288],
    "d2t": [32000],
    "t2d": [151936],
    "lm_head.weight": [32000, 4096],
    "embed_tokens.weight": [151936, 4096],
}


@pytest.mark.parametrize(
    ("version", "drafter_class"),
    [("0.22.0", "Eagle3LlamaForCausalLM"), ("0.25.0", "Eagle3Qwen3ForCausalLM")],
)
def test_speculators_qwen3_head_before_and_after_qwen3_mapping(
    version: str, drafter_class: str, vllm_release: Callable[[str], Path], tmp_path: Path
) -> None:
    config = speculators_head("qwen3", "Qwen3ForCausalLM")
    _, report = pair(vllm_release, version, QWEN3, draft_folder(tmp_path, config, QWEN_TENSORS))
    assert report["pairing"]["draft"]["format"] == "speculators"
    assert report["pairing"]["draft"]["drafter_class"] == drafter_class
    assert report["pairing"]["tapped_ids"] == [2, 18, 33]
    assert pairing_codes(report) == []


def test_speculators_translation_refuses_an_unmapped_model_type(
    vllm_release: Callable[[str], Path], tmp_path: Path
) -> None:
    config = speculators_head("qwen2", "Qwen3ForCausalLM")
    _, report = pair(vllm_release, "0.25.0", QWEN3, draft_folder(tmp_path, config, QWEN_TENSORS))
    finding = next(f for t in report["targets"] for f in t["findings"] if f["code"] == "EAG601")
    assert "Unsupported model_type qwen2 for Eagle3 speculator" in finding["message"]


def test_speculators_norm_before_fc_not_passed_through_on_0_18(
    vllm_release: Callable[[str], Path], tmp_path: Path
) -> None:
    config = speculators_head("llama", "LlamaForCausalLM", norm_before_fc=True)
    _, report = pair(vllm_release, "0.18.0", LLAMA, draft_folder(tmp_path / "a", config))
    assert "EAG641" in pairing_codes(report)
    _, report = pair(vllm_release, "0.22.0", LLAMA, draft_folder(tmp_path / "b", config))
    assert "EAG641" not in pairing_codes(report)


def test_verifier_mismatch_and_neighbour(
    vllm_release: Callable[[str], Path], tmp_path: Path
) -> None:
    wrong = speculators_head("llama", "Qwen3ForCausalLM")
    _, report = pair(vllm_release, "0.18.0", LLAMA, draft_folder(tmp_path / "a", wrong))
    assert "EAG651" in pairing_codes(report)
    right = speculators_head("llama", "LlamaForCausalLM")
    _, report = pair(vllm_release, "0.18.0", LLAMA, draft_folder(tmp_path / "b", right))
    assert "EAG651" not in pairing_codes(report)


def kimi_head(root: Path) -> Path:
    config = {
        "architectures": ["LlamaForCausalLMEagle3"],
        "model_type": "llama",
        "hidden_size": 7168,
        "num_hidden_layers": 1,
        "vocab_size": 163840,
        "draft_vocab_size": 32000,
        "eagle_aux_hidden_state_layer_ids": [2, 30, 58],
    }
    weights = {
        "fc.weight": [7168, 3 * 7168],
        "d2t": [32000],
        "t2d": [163840],
        "lm_head.weight": [32000, 7168],
    }
    return draft_folder(root, config, weights)


def test_kimi_seed_pair_is_clean_on_0_18(vllm_release: Callable, tmp_path: Path) -> None:
    code, report = pair(vllm_release, "0.18.0", KIMI, kimi_head(tmp_path))
    assert code == 0
    assert pairing_codes(report) == []
    assert report["pairing"]["tapped_ids"] == [2, 30, 58]
    assert report["pairing"]["verdict"] == "ok"
    # The ids are known: layer 0 is not requested, so the residual guard (EAG305) is moot.
    assert "EAG305" not in {f["code"] for t in report["targets"] for f in t["findings"]}


def test_kimi_seed_pair_reports_the_target_blockers_on_0_16(
    vllm_release: Callable, tmp_path: Path
) -> None:
    code, report = pair(vllm_release, "0.16.0", KIMI, kimi_head(tmp_path))
    assert code == 1
    found = {f["code"] for t in report["targets"] for f in t["findings"]}
    assert {"EAG102", "EAG301", "EAG401", "EAG501"} <= found
    assert pairing_codes(report) == []
    assert report["pairing"]["verdict"].startswith("blocked")


def test_llama_target_text_table(vllm_release: Callable, tmp_path: Path) -> None:
    vllm_release("0.18.0")
    folder = draft_folder(tmp_path, head(), tensors())
    result = CliRunner().invoke(
        app, ["pair", "--vllm", "0.18.0", "--target", str(LLAMA), "--draft", str(folder)]
    )
    assert result.exit_code == 0, result.output
    first = result.stdout.splitlines()[:10]
    assert first[0].split() == ["target", "LlamaForCausalLM", "(32", "layers)"]
    taps = "2→out of layer 1, 16→out of layer 15, 29→out of layer 28"
    assert any(taps in line for line in first)
    assert any("expected 3" in line and "provided 3" in line for line in first)
    assert any(line.split()[:2] == ["verdict", "ok"] for line in first)


def test_default_layers_are_printed_when_ids_are_absent(
    vllm_release: Callable, tmp_path: Path
) -> None:
    config = head(eagle_aux_hidden_state_layer_ids=None)
    _, report = pair(vllm_release, "0.18.0", LLAMA, draft_folder(tmp_path, config, tensors()))
    assert report["pairing"]["tapped_ids"] == [2, 16, 29]
    # The standard head carries no ids and was trained on the defaults: a note, no warning.
    notes = [f for t in report["targets"] for f in t["findings"] if f["code"].startswith("EAG6")]
    assert [(f["code"], f["severity"]) for f in notes] == [("EAG626", "info")]


@pytest.mark.parametrize(
    ("layers", "ids", "captured"),
    [(4, None, 2), (36, [2, 2, 33], 2), (36, [33, 18, 2], 3)],
    ids=["default-ids-on-4-layers", "repeated-id", "unsorted-ids"],
)
def test_repeated_ids_are_captured_once(
    vllm_release: Callable, tmp_path: Path, layers: int, ids: list[int] | None, captured: int
) -> None:
    """Taps are membership tests: vLLM's CPU build crashes on fc with (2, 2, 1) on 4 layers."""
    target = json.loads(LLAMA.read_text()) | {"num_hidden_layers": layers}
    target_path = tmp_path / "target" / "config.json"
    target_path.parent.mkdir()
    target_path.write_text(json.dumps(target))
    config = head(eagle_aux_hidden_state_layer_ids=ids)
    code, report = pair(
        vllm_release, "0.25.0", target_path, draft_folder(tmp_path, config, tensors())
    )
    assert report["pairing"]["aux_provided"] == captured
    found = [
        f for t in report["targets"] for f in t["findings"] if f["code"] in ("EAG612", "EAG621")
    ]
    if captured == 3:
        assert code == 0 and not found, found
        return
    assert code == 1
    assert [f["code"] for f in found] == ["EAG621"], found
    assert f"captures as {captured} states" in found[0]["message"]


def test_sarif_and_select(vllm_release: Callable, tmp_path: Path) -> None:
    vllm_release("0.18.0")
    folder = draft_folder(tmp_path, head(eagle_aux_hidden_state_layer_ids=[1, 16, 29]), tensors())
    args = ["pair", "--vllm", "0.18.0", "--target", str(LLAMA), "--draft", str(folder)]
    sarif = json.loads(CliRunner().invoke(app, [*args, "--format", "sarif"]).stdout)
    results = sarif["runs"][0]["results"]
    assert any(r["ruleId"] == "EAG624" for r in results)
    assert any(r["id"] == "EAG624" for r in sarif["runs"][0]["tool"]["driver"]["rules"])
    ignored = CliRunner().invoke(app, [*args, "--format", "json", "--ignore", "EAG624"])
    assert "EAG624" not in pairing_codes(json.loads(ignored.stdout))


def test_bad_inputs_exit_2(tmp_path: Path, vllm_release: Callable) -> None:
    vllm_release("0.18.0")
    folder = draft_folder(tmp_path, head())
    (folder / "model.safetensors").write_bytes(struct.pack("<Q", 2**40) + b"{}")
    args = ["pair", "--vllm", "0.18.0", "--target", str(LLAMA), "--draft", str(folder)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert "not a safetensors file" in result.output
    no_arch = tmp_path / "target.json"
    no_arch.write_text("{}")
    (folder / "model.safetensors").unlink()
    args = ["pair", "--vllm", "0.18.0", "--target", str(no_arch), "--draft", str(folder)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert "is not a model's config.json: it names no model_type and no architectures" in (
        result.output
    )
    result = CliRunner().invoke(app, ["pair", "--vllm", "0.18.0", "--target", str(LLAMA)])
    assert result.exit_code == 2
    assert "--speculative-config JSON or --draft FOLDER" in result.output


def test_sharded_checkpoint_headers(tmp_path: Path) -> None:
    write_safetensors(tmp_path / "a.safetensors", {"fc.weight": [8, 24]})
    assert read_header(tmp_path / "a.safetensors")["fc.weight"].shape == (8, 24)


def test_target_side_finding_is_suppressed_by_a_comment(
    release_copy: Callable[[str], Path], tmp_path: Path
) -> None:
    root = release_copy("0.18.0")
    llama = root / "model_executor" / "models" / "llama.py"
    lines = llama.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith("class LlamaModel("))
    lines[at] = lines[at].rstrip("\n") + "  # eagle3lint: ignore[EAG661]\n"
    llama.write_text("".join(lines))
    folder = draft_folder(tmp_path, head(), tensors())
    args = ["pair", str(root), "--target", str(LLAMA), "--draft", str(folder), "--pp", "2"]
    result = CliRunner().invoke(app, [*args, "--format", "json"])
    assert result.exit_code == 0, result.output
    assert pairing_codes(json.loads(result.stdout)) == []


def test_missing_embedding_is_silent_once_the_proposer_compares_widths(
    vllm_release: Callable, tmp_path: Path
) -> None:
    """From 0.25 V1's proposer compares the widths (silent); model runner V2, which runs
    Llama by default on 0.25, shares the embedding with no check: the first layer fails."""
    trigger = CASES["EAG613"][0]
    severities = {}
    for version in ("0.18.0", "0.25.0"):
        folder = draft_folder(tmp_path / version, trigger[1], trigger[2])
        _, report = pair(vllm_release, version, LLAMA, folder)
        found = [f for t in report["targets"] for f in t["findings"] if f["code"] == "EAG613"]
        severities[version] = [(f["severity"], f["runners"]) for f in found]
    assert severities == {
        "0.18.0": [("error", None)],
        "0.25.0": [("warning", ["v1"]), ("error", ["v2"])],
    }


def test_odd_values_are_findings_or_skipped_never_a_crash(
    vllm_release: Callable, tmp_path: Path
) -> None:
    config = {
        "architectures": "LlamaForCausalLMEagle3",
        "hidden_size": "4096",
        "draft_vocab_size": True,
        "eagle_config": ["not", "a", "dict"],
        "eagle_aux_hidden_state_layer_ids": [2, "16", -1, None],
        "norm_before_fc": "yes",
    }
    weights = {"fc.weight": [], "d2t": [1, 2, 3], "lm_head.weight": [7]}
    code, report = pair(vllm_release, "0.18.0", LLAMA, draft_folder(tmp_path, config, weights))
    assert code == 1
    assert report["errors"] == []
    assert "EAG601" in pairing_codes(report)
    assert "EAG623" in pairing_codes(report)


def test_pair_takes_output_format_like_check(vllm_release: Callable, tmp_path: Path) -> None:
    """Issue 29: `--output-format` as `check` takes it (`--format` still works)."""
    vllm_release("0.18.0")
    trigger = CASES["EAG613"][0]
    folder = draft_folder(tmp_path / "head", trigger[1], trigger[2])
    args = ["pair", "--vllm", "0.18.0", "--target", str(LLAMA), "--draft", str(folder)]
    spelled = {
        option: CliRunner().invoke(app, [*args, option, "json"])
        for option in ("--output-format", "--format")
    }
    for option, result in spelled.items():
        assert result.exit_code == 1, (option, result.output)
    reports = [json.loads(r.stdout) for r in spelled.values()]
    assert reports[0]["pairing"] == reports[1]["pairing"]


def test_the_header_and_the_summary_count_the_same_errors(
    vllm_release: Callable, tmp_path: Path
) -> None:
    """Issue 29: for Kimi-K2.5 on 0.16.0 the header said 9 target errors and the summary 7 (the
    setter's and the getter's findings at one place were shown as one)."""
    vllm_release("0.16.0")
    folder = draft_folder(tmp_path / "head", head(hidden_size=7168), tensors())
    args = ["pair", "--vllm", "0.16.0", "--target", str(KIMI), "--draft", str(folder)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1, result.output
    header = re.search(r"verdict +blocked \(([^)]*)\)", result.output)
    summary = re.search(r"Found (\d+) errors?", result.output)
    assert header and summary, result.output
    counts = dict((kind, int(n)) for n, kind in re.findall(r"(\d+) (target|pairing)", header[1]))
    assert counts["target"] == 9
    assert sum(counts.values()) == int(summary.group(1))
    shown = [line for line in result.output.splitlines() if ": EAG201 " in line]
    assert len(shown) == 2 and any("get_eagle3_aux_hidden_state_layers" in s for s in shown)


RELEASES_OF_ISSUE_29 = ("0.16.0", "0.25.0", "0.33.0", "0.34.0")
"""Before the runner choice, 0.22-0.25's lists, V2 by default, V2 alone."""


def write_d2t(folder: Path, offsets: list[int], vocab: int = 128256) -> None:
    """A safetensors file whose d2t holds `offsets` as int64 values (every other tensor is
    zeros), as a head trained on a reduced vocabulary ships it."""
    write_safetensors(
        folder / "model.safetensors",
        {**LLAMA_TENSORS, "d2t": [len(offsets)], "t2d": [vocab]},
        {"d2t": ("I64", struct.pack(f"<{len(offsets)}q", *offsets))},
    )


@pytest.mark.parametrize(
    ("name", "offsets", "severity"),
    [
        ("beyond-the-target", [0] * 31999 + [128256 - 31999 + 1], "error"),
        ("negative", [-1] + [0] * 31999, "error"),
        ("all-zeros", [0] * 32000, "warning"),
        ("two-onto-one", [1, 0] + [0] * 31998, "warning"),
        ("valid", [3 * i for i in range(32000)], None),
    ],
)
@pytest.mark.parametrize("version", RELEASES_OF_ISSUE_29)
def test_d2t_values_are_read(
    vllm_release: Callable,
    tmp_path: Path,
    name: str,
    offsets: list[int],
    severity: str | None,
    version: str,
) -> None:
    """Issue 29: d2t's values, not only its shape: vLLM scatters the draft's logits to
    `arange(draft_vocab) + d2t`, so a target id beyond the vocabulary raises at the first draft."""
    folder = draft_folder(tmp_path, head())
    write_d2t(folder, offsets)
    _, report = pair(vllm_release, version, LLAMA, folder)
    found = [f for t in report["targets"] for f in t["findings"] if f["code"] == "EAG634"]
    if severity is None:
        assert not found
        return
    assert [f["severity"] for f in found] == [severity], found


def spec_config(model: Path | str, method: str | None = "eagle3") -> str:
    settings: dict[str, Any] = {"model": str(model), "num_speculative_tokens": 3}
    if method is not None:
        settings["method"] = method
    return json.dumps(settings)


def pair_spec(
    vllm_release: Callable[[str], Path], version: str, settings: str, *extra: str
) -> tuple[int, dict[str, Any]]:
    vllm_release(version)
    args = ["pair", "--vllm", version, "--target", str(LLAMA), "--speculative-config", settings]
    result = CliRunner().invoke(app, [*args, "--format", "json", *extra])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)


@pytest.mark.parametrize(
    ("version", "folder", "method", "chosen", "code"),
    [
        # 0.16: an unset method that no clue names is refused.
        ("0.16.0", "llama-head", None, None, "EAG602"),
        ("0.16.0", "llama-eagle3-head", None, "eagle3", None),
        # 0.25-0.33: draft_model is what an unset method becomes.
        ("0.25.0", "llama-head", None, "draft_model", "EAG602"),
        ("0.33.0", "llama-head", "eagle3", "eagle3", None),
        # "eagle-" is tested before "eagle3": EAGLE-1, whose renamed class does not exist.
        ("0.33.0", "Llama-EAGLE-3-head", None, "eagle", "EAG602"),
        # 0.34: the detection order, then draft_model.
        ("0.34.0", "llama-head", None, "draft_model", "EAG602"),
        ("0.34.0", "llama-head", "eagle", "eagle", "EAG602"),
        ("0.34.0", "llama-eagle3-head", None, "eagle3", None),
    ],
)
def test_speculative_config_method_as_the_release_chooses(
    vllm_release: Callable,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    version: str,
    folder: str,
    method: str | None,
    chosen: str | None,
    code: str | None,
) -> None:
    """Issue 29: `--speculative-config` as `vllm serve` takes it; the model string is tested as
    typed (a relative folder here: pytest's own folder names could hold a clue)."""
    draft_folder(tmp_path, head(), tensors()).rename(tmp_path / folder)
    monkeypatch.chdir(tmp_path)
    code_, report = pair_spec(vllm_release, version, spec_config(folder, method))
    assert report["pairing"]["method"]["name"] == chosen, report["pairing"]["method"]
    assert [c for c in pairing_codes(report) if c == "EAG602"] == ([code] if code else [])
    assert code_ == (1 if code else 0)


def test_speculators_types_per_release(vllm_release: Callable, tmp_path: Path) -> None:
    """Issue 29: a P-EAGLE speculators head maps to PeagleLlamaForCausalLM on 0.33.0 and is
    refused at config load on 0.34.0; an unknown type is refused on both."""
    peagle = speculators_head("llama", "LlamaForCausalLM", mask_token_id=5)
    peagle["speculators_model_type"] = "peagle"
    folder = draft_folder(tmp_path / "peagle", peagle)
    _, report = pair_spec(vllm_release, "0.33.0", spec_config(folder))
    assert report["pairing"]["draft"]["arch"] == "PeagleLlamaForCausalLM"
    _, report = pair_spec(vllm_release, "0.34.0", spec_config(folder))
    message = next(f["message"] for t in report["targets"] for f in t["findings"])
    assert "P-EAGLE (parallel drafting EAGLE-3) is not supported" in message
    unknown = {**peagle, "speculators_model_type": "medusa2"}
    folder = draft_folder(tmp_path / "unknown", unknown)
    for version in ("0.33.0", "0.34.0"):
        code, report = pair_spec(vllm_release, version, spec_config(folder))
        assert code == 1 and "EAG601" in pairing_codes(report)


@pytest.mark.parametrize("version", RELEASES_OF_ISSUE_29)
def test_unsorted_ids_warn_per_runner(vllm_release: Callable, tmp_path: Path, version: str) -> None:
    """Issue 29: taps arrive in layer order; ids written otherwise are shown both ways."""
    folder = draft_folder(tmp_path, head(eagle_aux_hidden_state_layer_ids=[29, 16, 2]), tensors())
    code, report = pair_spec(vllm_release, version, spec_config(folder))
    assert code == 0 and pairing_codes(report) == ["EAG625"]
    assert {tuple(r["captured"]) for r in report["pairing"]["layer_ids"]} == {(2, 16, 29)}


def test_a_standard_head_is_quiet(vllm_release: Callable, tmp_path: Path) -> None:
    """Issue 29: the standard head (no ids, trained on the target's defaults) with --pp 1 gets
    no pairing warning and none of the target's pipeline or layer-0 notes: only the note that
    its taps are the target's fallback (EAG626, issue 54)."""
    folder = draft_folder(tmp_path, head(eagle_aux_hidden_state_layer_ids=None), tensors())
    for version in RELEASES_OF_ISSUE_29:
        code, report = pair_spec(vllm_release, version, spec_config(folder))
        found = [(f["code"], f["severity"]) for t in report["targets"] for f in t["findings"]]
        assert code == 0 and found == [("EAG626", "info")], (version, found)


def test_a_model_id_is_found_in_the_hugging_face_cache(
    vllm_release: Callable, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 29: `"model": "org/name"` is read from the local cache, never downloaded."""
    cache = tmp_path / "hub"
    snapshot = cache / "models--acme--Llama-EAGLE3-head" / "snapshots" / "abc123"
    snapshot.parent.mkdir(parents=True)
    draft_folder(tmp_path, head(), tensors()).rename(snapshot)
    (cache / "models--acme--Llama-EAGLE3-head" / "refs").mkdir()
    (cache / "models--acme--Llama-EAGLE3-head" / "refs" / "main").write_text("abc123")
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    code, report = pair_spec(vllm_release, "0.33.0", spec_config("acme/Llama-EAGLE3-head", None))
    assert code == 0 and report["pairing"]["method"]["name"] == "eagle3"
    assert "the model string contains 'eagle3'" in report["pairing"]["method"]["how"]
    missing = CliRunner().invoke(
        app,
        [
            *("pair", "--vllm", "0.33.0", "--target", str(LLAMA)),
            *("--speculative-config", spec_config("acme/absent-head")),
        ],
    )
    assert missing.exit_code == 2
    assert "not in the local Hugging Face cache" in missing.output


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ("{not json", "not valid JSON"),
        ('["eagle3"]', "must be a JSON object"),
        ('{"method": "ngram", "num_speculative_tokens": 3}', '"model" must name the draft'),
        ('{"method": 3, "model": "x"}', "method must be a string"),
        ("no-such-file.json", "neither a JSON object nor a file"),
        ("[" * 100_000, "nests too deeply"),
        ("/dev/zero", "neither a JSON object nor a file"),
    ],
    ids=["not-json", "a-list", "no-model", "method-not-a-string", "no-file", "deep", "device"],
)
def test_bad_speculative_configs_exit_2(
    vllm_release: Callable, tmp_path: Path, settings: str, message: str
) -> None:
    vllm_release("0.33.0")
    args = ["pair", "--vllm", "0.33.0", "--target", str(LLAMA), "--speculative-config", settings]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert message in result.output


@pytest.mark.parametrize(
    ("version", "expected"), [("0.25.0", ["EAG643"]), ("0.27.0", []), ("0.33.0", [])]
)
def test_sliding_window_per_drafter_class_and_release(
    vllm_release: Callable, tmp_path: Path, version: str, expected: list[str]
) -> None:
    """Issue 29: Eagle3Qwen3ForCausalLM reads the config's window from 0.27.0; before, the
    head runs full attention."""
    config = speculators_head("qwen3", "Qwen3ForCausalLM")
    config["transformer_layer_config"] |= {
        "layer_types": ["sliding_attention"],
        "sliding_window": 4096,
        "use_sliding_window": True,
    }
    folder = draft_folder(tmp_path, config, QWEN_TENSORS)
    _, report = pair(vllm_release, version, QWEN3, folder)
    assert [c for c in pairing_codes(report) if c == "EAG643"] == expected


@pytest.mark.parametrize(
    ("version", "draft_vocab", "severity"),
    [("0.25.0", 32000, None), ("0.33.0", 32000, "error"), ("0.34.0", 128256, "warning")],
)
def test_head_quantization_with_an_own_lm_head(
    vllm_release: Callable, tmp_path: Path, version: str, draft_vocab: int, severity: str | None
) -> None:
    """Issue 29: V2 keeps a head's own lm_head, and then refuses to quantize it (0.33 on)."""
    folder = draft_folder(
        tmp_path,
        head(draft_vocab_size=draft_vocab),
        tensors(**{"lm_head.weight": [draft_vocab, 4096], "d2t": [draft_vocab]}),
    )
    settings = json.loads(spec_config(folder)) | {"draft_lm_head_quantization": "fp8"}
    _, report = pair_spec(vllm_release, version, json.dumps(settings))
    found = [f for t in report["targets"] for f in t["findings"] if f["code"] == "EAG642"]
    assert [f["severity"] for f in found] == ([severity] if severity else []), found


DFLASH_HEAD: dict[str, Any] = {
    "architectures": ["DFlashDraftModel"],
    "model_type": "qwen3",
    "hidden_size": 4096,
    "num_hidden_layers": 5,
    "vocab_size": 151936,
    "block_size": 16,
    "dflash_config": {"target_layer_ids": [1, 9, 17, 25, 33], "mask_token_id": 151669},
}


@pytest.mark.parametrize(
    ("version", "target_ids", "fc_states", "codes"),
    [
        # DFlash's ids mean "output of layer k": the runner asks for k + 1.
        ("0.25.0", [1, 9, 17, 25, 33], 5, []),
        ("0.33.0", [1, 9, 17, 25, 33], 5, []),
        ("0.34.0", [1, 9, 17, 25, 33], 5, []),
        # A repeated id is captured once, where fc counts every id.
        ("0.34.0", [1, 9, 17, 17, 33], 5, ["EAG621"]),
        ("0.33.0", [1, 9, 17, 25, 33], 4, ["EAG612"]),
        # 0.16.0 registers no DFlash drafter: the draft's config fails before any method.
        ("0.16.0", [1, 9, 17, 25, 33], 5, ["EAG601"]),
    ],
)
def test_dflash_pairs(
    vllm_release: Callable,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    version: str,
    target_ids: list[int],
    fc_states: int,
    codes: list[str],
) -> None:
    """Issue 29: DFlash heads on the same machinery as EAGLE-3 ones."""
    config = {**DFLASH_HEAD, "dflash_config": {"target_layer_ids": target_ids}}
    draft_folder(tmp_path, config, {"fc.weight": [4096, fc_states * 4096]}).rename(
        tmp_path / "qwen3-dflash"
    )
    monkeypatch.chdir(tmp_path)
    settings = json.dumps({"model": "qwen3-dflash", "num_speculative_tokens": 15})
    vllm_release(version)
    args = ["pair", "--vllm", version, "--target", str(QWEN3), "--speculative-config", settings]
    result = CliRunner().invoke(app, [*args, "--format", "json"])
    report = json.loads(result.stdout)
    assert pairing_codes(report) == codes, report["pairing"]
    if not codes:
        assert report["pairing"]["method"]["name"] == "dflash"
        assert report["pairing"]["tapped_ids"] == [k + 1 for k in target_ids]
        assert report["pairing"]["verdict"] == "ok"


@pytest.mark.parametrize(
    ("version", "draft_layers", "codes"),
    [
        ("0.25.0", 5, []),
        # 0.25.0's DSpark builds fc from its DFlash base: len(dflash_config.target_layer_ids),
        # else its own num_hidden_layers; the top-level target_layer_ids are not counted.
        ("0.25.0", 3, ["EAG621"]),
        # From 0.30 fc counts the ids the runner reads.
        ("0.33.0", 3, []),
        ("0.34.0", 3, []),
    ],
)
def test_dspark_pairs(
    vllm_release: Callable,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    version: str,
    draft_layers: int,
    codes: list[str],
) -> None:
    """Issue 29: a dense DSpark head (Qwen3DSparkModel) on its DFlash drafter's facts."""
    config = {
        **{k: v for k, v in DFLASH_HEAD.items() if k != "dflash_config"},
        "architectures": ["Qwen3DSparkModel"],
        "num_hidden_layers": draft_layers,
        "target_layer_ids": [1, 9, 17, 25, 33],
        "mask_token_id": 151669,
        "markov_rank": 256,
    }
    draft_folder(tmp_path, config, {"fc.weight": [4096, 5 * 4096]}).rename(tmp_path / "head")
    monkeypatch.chdir(tmp_path)
    settings = json.dumps({"model": "head", "num_speculative_tokens": 7})
    vllm_release(version)
    args = ["pair", "--vllm", version, "--target", str(QWEN3), "--speculative-config", settings]
    report = json.loads(CliRunner().invoke(app, [*args, "--format", "json"]).stdout)
    assert report["pairing"]["method"]["name"] == "dspark"
    assert report["pairing"]["tapped_ids"] == [2, 10, 18, 26, 34]
    findings = [f for t in report["targets"] for f in t["findings"]]
    errors = [f["code"] for f in findings if f["severity"] == "error"]
    assert errors == codes, report["pairing"]
    # 0.25.0's V1 reads no top-level target_layer_ids: its findings are V1's alone.
    assert all(f["runners"] == ["v1"] for f in findings if f["severity"] == "warning")


@pytest.mark.parametrize(("ids", "refused"), [([0, 8, 13], True), ([1, 8, 13], False)])
def test_layer_id_0_names_no_layer_on_the_transformers_backend(
    vllm_release: Callable, tmp_path: Path, ids: list[int], refused: bool
) -> None:
    """The backend records the input of layer `id - 1`: id 0 is a KeyError in its
    `set_aux_hidden_state_layers`, where a model of vLLM's own taps the embedding output."""
    target = json.loads(LLAMA.read_text()) | {
        "architectures": ["Olmo2ForCausalLM"],
        "model_type": "olmo2",
        "num_hidden_layers": 16,
    }
    target_path = tmp_path / "target" / "config.json"
    target_path.parent.mkdir()
    target_path.write_text(json.dumps(target))
    config = head(eagle_aux_hidden_state_layer_ids=ids)
    _, report = pair(vllm_release, "0.33.0", target_path, draft_folder(tmp_path, config, tensors()))
    found = [f for t in report["targets"] for f in t["findings"] if f["code"] == "EAG623"]
    if not refused:
        assert found == []
        return
    [eag623] = found
    assert "Layer id 0 names no layer on the Transformers backend" in eag623["message"]
    assert "raises KeyError: -1" in eag623["message"]


def backend_target(root: Path) -> Path:
    """Llama's config served through the Transformers backend."""
    target = root / "target" / "config.json"
    target.parent.mkdir()
    config = {**json.loads(LLAMA.read_text()), "architectures": ["TransformersForCausalLM"]}
    target.write_text(json.dumps(config))
    return target


@pytest.mark.parametrize("version", ["0.16.0", "0.34.0"])
def test_a_transformers_backend_target_is_never_ok_about_what_was_not_read(
    version: str, release_copy: Callable[[str], Path], tmp_path: Path
) -> None:
    """Issue item 7: the backend's default ids are read from its getter (`num_layers =
    self.text_config.num_hidden_layers`), so the taps are known; what stays unread (here
    transformers' model: a copy of the release's `vllm/` has no requirement on transformers
    beside it, EAG413) makes the pair unverified, exit 1, never ok."""
    target = backend_target(tmp_path)
    draft = draft_folder(
        tmp_path, head(eagle_aux_hidden_state_layer_ids=None, draft_vocab_size=None)
    )
    args = ["pair", str(release_copy(version)), "--target", str(target), "--draft", str(draft)]
    result = CliRunner().invoke(app, [*args, "--format", "json"])
    pairing = json.loads(result.stdout)["pairing"]
    assert (pairing["default_ids"], pairing["tapped_ids"]) == ([2, 16, 29], [2, 16, 29])
    assert pairing["verdict"].startswith("unverified (EAG413: ")
    assert result.exit_code == 1


@pytest.mark.parametrize(("version", "verdict"), [("0.16.0", "blocked"), ("0.34.0", "ok")])
def test_a_transformers_backend_pair_reads_the_transformers_its_release_requires(
    version: str, verdict: str, vllm_release: Callable[[str], Path], tmp_path: Path
) -> None:
    """The same pair on the release: the transformers its requirement resolves to decides.
    0.16.0 requires transformers<5, below the backend's own check for 5.0 (EAG421); 0.34.0's
    transformers 5 has Llama's `embed_tokens` and its capture."""
    target = backend_target(tmp_path)
    draft = draft_folder(
        tmp_path, head(eagle_aux_hidden_state_layer_ids=None, draft_vocab_size=None)
    )
    _, report = pair(vllm_release, version, target, draft)
    assert report["pairing"]["verdict"].split(" ")[0] == verdict
    assert report["vllm"]["transformers"]["source"].startswith(f"resolved from vllm=={version}'s")


def test_taps_not_read_leave_the_pair_unverified(
    release_copy: Callable[[str], Path], tmp_path: Path
) -> None:
    """Issue item 7: with no ids in the draft config and a default getter that cannot be read,
    the taps are unknown and the pair is unverified (exit 1), not ok."""
    root = release_copy("0.34.0")
    base = root / "model_executor" / "models" / "transformers" / "base.py"
    readable = "        return (2, num_layers // 2, num_layers - 3)\n"
    assert readable in base.read_text()
    base.write_text(base.read_text().replace(readable, "        return self._defaults()\n"))
    draft = draft_folder(
        tmp_path, head(eagle_aux_hidden_state_layer_ids=None, draft_vocab_size=None)
    )
    args = ["pair", str(root), "--target", str(backend_target(tmp_path)), "--draft", str(draft)]
    result = CliRunner().invoke(app, [*args, "--format", "json"])
    pairing = json.loads(result.stdout)["pairing"]
    assert pairing["tapped_ids"] is None
    assert "the layers TransformersForCausalLM taps" in pairing["verdict"]
    assert pairing["verdict"].startswith("unverified (")
    assert result.exit_code == 1
    text = CliRunner().invoke(app, [*args, "--ignore", "EAG413"])
    assert "verdict     unverified (the layers TransformersForCausalLM taps" in text.output
    assert text.exit_code == 1
