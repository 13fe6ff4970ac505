"""SGLang, the second engine: its tree, registry, contract and rule pack, on the era fixtures
(fast) and on real releases (release tier: the newest, and 0.5.8 from January 2026)."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from eagle3lint.cli import app
from eagle3lint.engines import Role, tree_wing
from eagle3lint.engines.sglang.contract import read_contract
from eagle3lint.engines.sglang.registry import registered_architectures
from eagle3lint.engines.sglang.wing import WING
from eagle3lint.index.project import ProjectIndex
from eagle3lint.sources import wheels

ERAS = Path(__file__).resolve().parent.parent / "fixtures" / "eras"


def check_json(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(app, ["check", *args, "--format", "json", "--exit-zero"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def by_arch(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["arch"]: t for t in report["targets"]}


def codes(target: dict[str, Any]) -> set[str]:
    return {f["code"] for f in target["findings"]}


def test_an_sglang_tree_is_recognised_by_its_models_folder() -> None:
    assert tree_wing(ERAS / "s2_gate" / "sglang") is WING
    assert tree_wing(ERAS / "e2_stub" / "vllm") is not WING


@pytest.mark.parametrize(
    ("era", "gated", "bare", "accessors"),
    [
        (
            "s1_bare",
            False,
            ["sglang/srt/model_executor/cuda_graph_runner.py:9"],
            ["get_embed_and_head"],
        ),
        ("s2_gate", True, [], ["get_embed_and_head_for_draft", "get_embed_and_head"]),
    ],
)
def test_the_contract_is_read_from_the_runner_and_the_draft_workers(
    era: str, gated: bool, bare: list[str], accessors: list[str]
) -> None:
    tree = ERAS / era / "sglang"
    contract = read_contract(ProjectIndex([tree.parent]), tree, "tree")
    assert contract.capture_method == "set_eagle3_layers_to_capture"
    assert (contract.capture_error is not None) is gated
    assert [str(c) for c in contract.capture_calls if c.bare] == bare
    assert list(contract.embed_head) == accessors
    # A docstring naming the accessor (s2's pp_draft_embedding.py line 1) is not a call.
    assert all(c.line > 1 for c in contract.embed_head_calls)
    assert contract.pooling == {"LlamaEmbeddingModel", "Qwen2ForRewardModel"}
    assert "LlamaForCausalLMNextN" in contract.drafts
    message = contract.capture_message("GPT2LMHeadModel")
    assert message.startswith(
        "ValueError: Model GPT2LMHeadModel does not implement" if gated else "AttributeError:"
    )


def test_the_registry_is_every_models_module_entry_class(tmp_path: Path) -> None:
    """Lists and single names, aliases registered under the class's own name, subpackages and
    modules without EntryClass left out, a name listed twice kept at its first module."""
    tree = tmp_path / "s2_gate"
    shutil.copytree(ERAS / "s2_gate", tree)
    models = tree / "sglang" / "srt" / "models"
    (models / "aliased.py").write_text(
        "from torch import nn\n\n\nclass RealForCausalLM(nn.Module):\n    pass\n\n\n"
        "Alias = RealForCausalLM\nEntryClass = Alias\n"
    )
    (models / "zz_again.py").write_text(
        "from .gpt2 import GPT2LMHeadModel\n\nEntryClass = [GPT2LMHeadModel]\n"
    )
    (models / "helpers.py").write_text("class NotAModelForCausalLM:\n    pass\n")
    (models / "sub").mkdir()
    (models / "sub" / "inner.py").write_text(
        "class InnerForCausalLM:\n    pass\n\nEntryClass = InnerForCausalLM\n"
    )
    entries = registered_architectures(ProjectIndex([tree]))
    archs = {e.arch: e for e in entries}
    assert "RealForCausalLM" in archs and "Alias" not in archs
    assert archs["GPT2LMHeadModel"].module == "sglang.srt.models.gpt2"
    assert not {"NotAModelForCausalLM", "InnerForCausalLM"} & archs.keys()
    assert archs["RealForCausalLM"].line == 9


def test_roles_pooling_draft_and_target() -> None:
    targets = by_arch(check_json(str(ERAS / "s2_gate")))
    assert targets["LlamaEmbeddingModel"]["role"] == Role.POOLING
    assert targets["LlamaForCausalLMEagle3"]["role"] == Role.DRAFT
    assert targets["LlamaForCausalLM"]["role"] == Role.TARGET


def test_a_backbone_renamed_for_every_checkpoint_is_no_draft(tmp_path: Path) -> None:
    """Only a rename for a draft checkpoint (under `if is_draft_model ...`, or in a draft
    function such as `_config_draft_model`) makes a draft; 0.5.23 also renames target backbones
    (`Qwen3_5TextModel` → `Qwen3_5ForCausalLM`) for every checkpoint."""
    tree = tmp_path / "s2_gate"
    shutil.copytree(ERAS / "s2_gate", tree)
    config = tree / "sglang" / "srt" / "configs" / "model_config.py"
    config.write_text(
        config.read_text()
        + "        if self.hf_config.architectures == ['GPT2Backbone']:\n"
        + "            self.hf_config.architectures = ['GPT2LMHeadModel']\n\n"
        + "    def _config_draft_model(self):\n"
        + "        if self.hf_config.architectures[0] == 'Qwen2MoeForCausalLM':\n"
        + "            self.hf_config.architectures[0] = 'Qwen2MoeForCausalLMNextN'\n"
    )
    contract = read_contract(ProjectIndex([tree]), tree / "sglang", "tree")
    assert contract.drafts == {"LlamaForCausalLMNextN", "Qwen2MoeForCausalLMNextN"}


ROUTED = (
    "def get_model_architecture(model_config):\n"
    "    architectures = getattr(model_config.hf_config, 'architectures', [])\n"
    "    if getattr(model_config, 'is_embedding_gemma', False):\n"
    "        architectures = ['{arch}']\n"
    "    return architectures\n"
)


@pytest.mark.parametrize(("negated", "pooling"), [(True, True), (False, False)])
def test_a_class_the_loader_routes_to_under_a_non_generative_flag_is_pooling(
    tmp_path: Path, negated: bool, pooling: bool
) -> None:
    """SGLang 0.5.23 serves EmbeddingGemma (saved as `Gemma3TextModel`) as
    `EmbeddingGemmaModel`, a Gemma-3 subclass with the capture method, only when
    `is_embedding_gemma`, which makes `ModelConfig.is_generation` false: a pooling model, not
    a target, though `is_generation_model`'s list does not name it."""
    tree = tmp_path / "s2_gate"
    shutil.copytree(ERAS / "s2_gate", tree)
    loader = tree / "sglang" / "srt" / "model_loader" / "utils.py"
    loader.parent.mkdir(parents=True, exist_ok=True)
    loader.write_text(ROUTED.format(arch="LlamaForCausalLM"))
    config = tree / "sglang" / "srt" / "configs" / "model_config.py"
    generation = "not self.is_embedding_gemma and " if negated else ""
    config.write_text(
        config.read_text()
        + "\nclass ModelConfig:\n    def __init__(self):\n"
        + f"        self.is_generation = {generation}is_generation_model([])\n"
    )
    contract = read_contract(ProjectIndex([tree]), tree / "sglang", "tree")
    assert ("LlamaForCausalLM" in contract.pooling) is pooling


@pytest.mark.parametrize(
    ("arch", "why"),
    [
        ("LlamaForCausalLMEagle3", "SGLang runs it only as a draft model"),
        ("LlamaEmbeddingModel", "SGLang serves it as a pooling model"),
    ],
)
def test_a_draft_or_pooling_model_is_told_why_in_sglangs_terms(arch: str, why: str) -> None:
    """EAG905 says what SGLang does with the class, never vLLM's registry sentence."""
    report = check_json(str(ERAS / "s2_gate"), "--arch", arch)
    [note] = by_arch(report)[arch]["findings"]
    assert note["code"] == "EAG905"
    assert why in note["message"]
    assert "vLLM" not in note["message"]


def test_an_unclaimed_target_is_not_an_error_until_asked_about() -> None:
    report = check_json(str(ERAS / "s2_gate"))
    gpt2 = by_arch(report)["GPT2LMHeadModel"]
    assert {f["severity"] for f in gpt2["findings"]} <= {"info"}
    asked = by_arch(check_json(str(ERAS / "s2_gate"), "--arch", "GPT2LMHeadModel"))
    assert codes(asked["GPT2LMHeadModel"]) == {"SGL101", "SGL102"}
    # A target that claims support (it has the capture method) is held to the whole contract.
    assert codes(by_arch(report)["Qwen2MoeForCausalLM"]) == {"SGL102"}


def test_an_out_of_tree_model_file_is_checked_against_an_sglang_tree(tmp_path: Path) -> None:
    model = tmp_path / "my_model.py"
    model.write_text(
        "from torch import nn\n\n\nclass MineForCausalLM(nn.Module):\n"
        "    def set_eagle3_layers_to_capture(self, layer_ids):\n        pass\n\n\n"
        "EntryClass = MineForCausalLM\n"
    )
    report = check_json(str(ERAS / "s1_bare"), str(model))
    mine = by_arch(report)["MineForCausalLM"]
    assert codes(mine) == {"SGL102", "SGL103"}
    assert set(by_arch(report)) == {"MineForCausalLM"}


def test_a_wheel_for_another_interpreter_is_fetched_with_its_tags() -> None:
    """SGLang publishes CPython 3.10-3.13 wheels, not all per release: pip is told the chosen
    wheel's tags, and a wheel this interpreter can install is preferred."""
    from packaging.tags import sys_tags

    mine = next(iter(sys_tags()))
    here = f"sglang-1.0-{mine.interpreter}-{mine.abi}-{mine.platform}.whl"
    other = "sglang-1.0-cp39-cp39-manylinux_2_34_aarch64.whl"
    published = {other: wheels.Wheel("u", "0" * 64), here: wheels.Wheel("u", "0" * 64)}
    assert wheels._preferred(published) == here
    assert wheels._tag_options(here) == []
    assert wheels._tag_options(other) == [
        "--platform", "manylinux_2_34_aarch64", "--abi", "cp39",
        "--implementation", "cp", "--python-version", "3.9",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--sglang", "0.5.23", "--vllm", "0.16.0"], "give --vllm or --sglang, not both"),
        (["--sglang", "latest!"], "is not a SGLang version number"),
    ],
)
def test_bad_release_options_exit_2(args: list[str], message: str) -> None:
    result = CliRunner().invoke(app, ["check", *args])
    assert result.exit_code == 2
    assert message in result.output


# -- real releases ---------------------------------------------------------------------------

NEWEST = "0.5.23"
EARLY_2026 = "0.5.8"


@pytest.mark.parametrize("version", [EARLY_2026, NEWEST])
def test_a_real_release(sglang_release: Callable[[str], Path], version: str) -> None:
    """The latent bug the issue names is found, the architectures SGLang serves EAGLE-3 for
    are ready, and the contract's facts are those of the release."""
    tree = sglang_release(version)
    report = check_json(str(tree))
    assert report["sglang"]["version"] == version
    assert report["errors"] == []
    targets = by_arch(report)
    assert len(targets) > 150
    errors = {
        arch: {f["code"] for f in t["findings"] if f["severity"] == "error"}
        for arch, t in targets.items()
        if any(f["severity"] == "error" for f in t["findings"])
    }
    assert errors == {"Qwen2MoeForCausalLM": {"SGL102"}}
    for arch in ("LlamaForCausalLM", "Qwen3ForCausalLM", "DeepseekV3ForCausalLM"):
        assert targets[arch]["eagle3_ready"] is True, arch
        assert targets[arch]["implements_eagle3"] is True, arch
    assert targets["LlamaForCausalLMEagle3"]["role"] == Role.DRAFT
    assert targets["DeepseekV3ForCausalLMNextN"]["role"] == Role.DRAFT
    if version == NEWEST:  # a backbone is renamed to it for every checkpoint: a target
        assert targets["Qwen3_5ForCausalLM"]["role"] == Role.TARGET
        assert targets["Qwen3_5ForCausalLM"]["eagle3_ready"] is True
        # Served only as EmbeddingGemma's pooling model (the loader's routing), never a target.
        assert targets["EmbeddingGemmaModel"]["role"] == Role.POOLING
        assert targets["Gemma3ForCausalLM"]["role"] == Role.TARGET
    details = report["sglang"]["details"]
    assert details["capture_gated"] is (version == NEWEST)
    bare = [c for c in details["capture_calls"] if "cuda_graph_runner" in c]
    assert bool(bare) is (version == EARLY_2026)


def test_kimi_k25_serves_eagle3_through_its_language_model(
    sglang_release: Callable[[str], Path],
) -> None:
    """In SGLang, Kimi-K2.5's wrapper has the capture method (passing it to its DeepSeek
    language model) and the accessor: the chain that failed three times in vLLM is served."""
    report = check_json(str(sglang_release(NEWEST)), "--arch", "KimiK25ForConditionalGeneration")
    [kimi] = report["targets"]
    assert kimi["eagle3_ready"] is True and kimi["findings"] == []


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def test_a_matrix_of_sglang_trees_in_every_format(tmp_path: Path) -> None:
    trees = [str(ERAS / "s1_bare"), str(ERAS / "s2_gate")]
    code, output = invoke("matrix", *trees, "--format", "json", "-o", str(tmp_path / "m.json"))
    assert code == 0, output
    matrix = json.loads((tmp_path / "m.json").read_text())
    assert matrix["engine"] == "sglang"
    assert [r["label"] for r in matrix["releases"]] == ["0.5.8", "0.5.23"]
    rows = {r["arch"]: r for r in matrix["rows"]}
    assert rows["Qwen2MoeForCausalLM"]["cells"]["0.5.23"]["codes"] == ["SGL102"]
    assert rows["LlamaForCausalLM"]["first_ready"] == "0.5.8"
    code, markdown = invoke("matrix", *trees, "--format", "markdown")
    assert code == 0
    assert "EAGLE-3 compatibility of SGLang's architectures" in markdown
    assert "`eagle3lint check --sglang <release>" in markdown
    # SGLang's contract has no model_type gate, PP relay or model runners to tabulate.
    assert "| release | contract | targets ready | not targets |" in markdown
    assert "model runner" not in markdown
    for output_format in ("csv", "html", "text"):
        code, out = invoke("matrix", *trees, "--format", output_format)
        assert code == 0 and "Qwen2MoeForCausalLM" in out, output_format


def test_a_matrix_is_of_one_engine() -> None:
    code, output = invoke("matrix", str(ERAS / "s2_gate"), str(ERAS / "e2_stub"))
    assert code == 2 and "a matrix is of one engine's releases" in output


def test_a_matrix_over_real_sglang_releases(sglang_release: Callable[[str], Path]) -> None:
    for version in (EARLY_2026, NEWEST):
        sglang_release(version)
    code, output = invoke("matrix", "--sglang", EARLY_2026, "--sglang", NEWEST, "--format", "json")
    assert code == 0, output
    rows = {r["arch"]: r for r in json.loads(output)["rows"]}
    assert rows["Qwen2MoeForCausalLM"]["cells"][EARLY_2026]["codes"] == ["SGL102"]
    assert rows["LlamaForCausalLM"]["first_ready"] == EARLY_2026
    assert rows["LlamaForCausalLMEagle3"]["role"] == "draft"


def write_pair(
    folder: Path, layers: int, target_arch: str, eagle_config: dict | None, **top: Any
) -> tuple[Path, Path]:
    """A target's config.json and an EAGLE-3 head's, as their checkpoints ship them."""
    target, head = folder / "target", folder / "head"
    target.mkdir(parents=True)
    head.mkdir()
    (target / "config.json").write_text(
        json.dumps({"architectures": [target_arch], "num_hidden_layers": layers})
    )
    config: dict[str, Any] = {"architectures": ["LlamaForCausalLMEagle3"], "num_hidden_layers": 1}
    if eagle_config is not None:
        config["eagle_config"] = eagle_config
    config.update(top)
    (head / "config.json").write_text(json.dumps(config, indent=1))
    return target, head


def pair_json(*args: str) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(app, ["pair", *args, "--format", "json"])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)


def test_pair_on_an_sglang_tree_shows_the_layers_it_taps(tmp_path: Path) -> None:
    """The fixture's Llama adds one: ids [1, 2, 5] of an 8-layer target tap the outputs of
    layers 1, 2 and 5 in SGLang, of layers 0, 1 and 4 in vLLM."""
    target, head = write_pair(
        tmp_path, 8, "LlamaForCausalLM", {"eagle_aux_hidden_state_layer_ids": [1, 2, 5]}
    )
    code, report = pair_json(str(ERAS / "s2_gate"), "--target", str(target), "--draft", str(head))
    pairing = report["pairing"]
    assert code == 0
    assert (pairing["convention"], pairing["layers_to_capture"]) == ("+1", [2, 3, 6])
    assert (pairing["tapped_outputs"], pairing["vllm_tapped_outputs"]) == ([1, 2, 5], [0, 1, 4])
    [finding] = report["targets"][0]["findings"]
    assert finding["code"] == "SGL203" and finding["line"] == 7  # the ids, in the head config


def test_the_last_layer_is_out_of_reach_in_sglang(tmp_path: Path) -> None:
    target, head = write_pair(
        tmp_path, 8, "LlamaForCausalLM", {"eagle_aux_hidden_state_layer_ids": [1, 4, 7]}
    )
    code, report = pair_json(str(ERAS / "s2_gate"), "--target", str(target), "--draft", str(head))
    assert code == 1
    codes = {f["code"]: f for f in report["targets"][0]["findings"]}
    assert "[8] is never reached" in codes["SGL202"]["message"]


def test_ids_at_the_top_level_are_not_read_by_sglang(tmp_path: Path) -> None:
    target, head = write_pair(
        tmp_path, 8, "LlamaForCausalLM", None, eagle_aux_hidden_state_layer_ids=[1, 3, 6]
    )
    _, report = pair_json(str(ERAS / "s2_gate"), "--target", str(target), "--draft", str(head))
    codes = {f["code"]: f for f in report["targets"][0]["findings"]}
    assert "taps the target's default layers [2, 4, 5]" in codes["SGL201"]["message"]
    assert report["pairing"]["layers_to_capture"] == [2, 4, 5]


def test_pair_on_sglang_refuses_vllms_speculative_config(tmp_path: Path) -> None:
    target, _ = write_pair(tmp_path, 8, "LlamaForCausalLM", None)
    result = CliRunner().invoke(
        app,
        ["pair", str(ERAS / "s2_gate"), "--target", str(target), "--speculative-config", "{}"],
    )
    assert result.exit_code == 2 and "takes --draft" in result.output


@pytest.mark.parametrize(
    ("version", "arch", "ids", "convention", "captured"),
    [
        (NEWEST, "LlamaForCausalLM", [1, 15, 28], "+1", [2, 16, 29]),
        # DeepSeek's model file adds one only when the first id is 1 (0.5.23) ...
        (NEWEST, "DeepseekV3ForCausalLM", [2, 30, 57], "+1 if the first id is 1", [2, 30, 57]),
        (NEWEST, "DeepseekV3ForCausalLM", [1, 29, 57], "+1 if the first id is 1", [2, 30, 58]),
        # ... and always in 0.5.8.
        (EARLY_2026, "DeepseekV3ForCausalLM", [2, 30, 57], "+1", [3, 31, 58]),
        # Llama-4's wrapper imports its language model inside __init__ and hands it the ids.
        (EARLY_2026, "Llama4ForConditionalGeneration", [1, 15, 28], "+1", [2, 16, 29]),
        (NEWEST, "Llama4ForConditionalGeneration", [1, 15, 28], "+1", [2, 16, 29]),
        # Kimi-K2.5's wrapper hands the ids to its DeepSeek language model.
        (
            NEWEST,
            "KimiK25ForConditionalGeneration",
            [2, 30, 57],
            "+1 if the first id is 1",
            [2, 30, 57],
        ),
    ],
)
def test_pair_reads_each_model_files_convention_on_real_releases(
    sglang_release: Callable[[str], Path],
    tmp_path: Path,
    version: str,
    arch: str,
    ids: list[int],
    convention: str,
    captured: list[int],
) -> None:
    layers = 32 if arch.startswith("Llama") else 61
    target, head = write_pair(tmp_path, layers, arch, {"eagle_aux_hidden_state_layer_ids": ids})
    _, report = pair_json(
        str(sglang_release(version)), "--target", str(target), "--draft", str(head)
    )
    pairing = report["pairing"]
    assert (pairing["convention"], pairing["layers_to_capture"]) == (convention, captured)
    assert pairing["vllm_tapped_outputs"] == [i - 1 for i in ids]


@pytest.mark.parametrize(
    ("version", "ids", "convention", "captured", "codes"),
    [
        # 0.5.23's GPT-OSS keeps ids whose largest is L (vLLM's ids) and collects index L, the
        # last layer's output, at the final norm: the same layers as vLLM, nothing unreached.
        (NEWEST, [1, 18, 36], "as given if the largest id is L, else +1", [1, 18, 36], set()),
        (
            NEWEST,
            [1, 17, 35],
            "as given if the largest id is L, else +1",
            [2, 18, 36],
            {"SGL203"},
        ),
        # 0.5.8's adds one to any ids, and its decoder never reaches index L (its CUDA graphs
        # tap the defaults too: SGL204).
        (EARLY_2026, [1, 18, 36], "+1", [2, 19, 37], {"SGL202", "SGL203", "SGL204"}),
        (EARLY_2026, [1, 17, 35], "+1", [2, 18, 36], {"SGL202", "SGL203", "SGL204"}),
        # 0.5.12 still adds one, its graphs already take the ids.
        ("0.5.12", [1, 18, 36], "+1", [2, 19, 37], {"SGL202", "SGL203"}),
    ],
)
def test_gpt_oss_keeps_vllms_ids_and_taps_the_last_layer_from_0_5_23(
    sglang_release: Callable[[str], Path],
    tmp_path: Path,
    version: str,
    ids: list[int],
    convention: str,
    captured: list[int],
    codes: set[str],
) -> None:
    target, head = write_pair(
        tmp_path, 36, "GptOssForCausalLM", {"eagle_aux_hidden_state_layer_ids": ids}
    )
    _, report = pair_json(
        str(sglang_release(version)), "--target", str(target), "--draft", str(head)
    )
    pairing = report["pairing"]
    assert (pairing["convention"], pairing["layers_to_capture"]) == (convention, captured)
    assert {f["code"] for f in report["targets"][0]["findings"]} == codes


@pytest.mark.parametrize(
    ("version", "arch", "marker"),
    [
        (EARLY_2026, "Qwen3MoeForCausalLM", "Qwen2MoeModel"),
        (NEWEST, "Qwen3MoeForCausalLM", "Qwen2MoeModel"),
        (NEWEST, "Qwen3NextForCausalLM", "Qwen3NextModel"),
        # Its model is `self.body_cls(...)`, a class attribute naming qwen3_5.py's class.
        (NEWEST, "Qwen3_5MoeForCausalLM", "Qwen3_5ForCausalLM"),
    ],
)
def test_the_last_layers_id_stops_the_server_at_start_up(
    sglang_release: Callable[[str], Path], tmp_path: Path, version: str, arch: str, marker: str
) -> None:
    """Qwen2MoeModel's capture method (Qwen3-MoE's decoder inherits it), and Qwen3-Next's and
    Qwen3.5's, mark every layer they are given, `self.layers[layer_id]`: the last layer's id,
    shifted to L, is an IndexError when the server starts, not a head short of states."""
    target, head = write_pair(tmp_path, 48, arch, {"eagle_aux_hidden_state_layer_ids": [1, 23, 47]})
    code, report = pair_json(
        str(sglang_release(version)), "--target", str(target), "--draft", str(head)
    )
    findings = {f["code"]: f["message"] for f in report["targets"][0]["findings"]}
    assert code == 1
    assert "SGL204" not in findings  # no graph is captured: the server does not start
    assert (
        f"{marker}.set_eagle3_layers_to_capture indexes its layers with each: SGLang "
        f"{version} stops with IndexError at start-up, once the weights are loaded, on [48]."
    ) in findings["SGL202"]


def test_a_model_class_not_read_leaves_the_taps_unknown(
    sglang_release: Callable[[str], Path], tmp_path: Path
) -> None:
    """MindSpore's wrapper hands the ids to a model its `get_arch` picks: nothing is said of
    the layers it taps."""
    ids = {"eagle_aux_hidden_state_layer_ids": [1, 23, 47]}
    target, head = write_pair(tmp_path, 48, "MindSporeForCausalLM", ids)
    _, report = pair_json(
        str(sglang_release(NEWEST)), "--target", str(target), "--draft", str(head)
    )
    assert report["pairing"]["convention"] == "not read"
    assert report["pairing"]["layers_to_capture"] == []
    assert not {f["code"] for f in report["targets"][0]["findings"]} & {"SGL202", "SGL203"}


@pytest.mark.parametrize(
    ("version", "ids", "warned"),
    [
        (EARLY_2026, [1, 15, 30], True),
        ("0.5.10", [1, 15, 30], True),
        # The head's ids are the defaults' ([2, 16, 29] once shifted): the graphs tap them too.
        (EARLY_2026, [1, 15, 28], False),
        # From 0.5.12 the ids are set once, before the graphs are captured.
        ("0.5.12", [1, 15, 30], False),
        (NEWEST, [1, 15, 30], False),
    ],
)
def test_cuda_graphs_captured_after_a_bare_call_tap_the_defaults(
    sglang_release: Callable[[str], Path],
    tmp_path: Path,
    version: str,
    ids: list[int],
    warned: bool,
) -> None:
    """0.5.8's and 0.5.10's CUDA-graph runner calls the capture method with no ids while it
    captures the graphs: decode steps tap the default layers whatever the head asks."""
    target, head = write_pair(
        tmp_path, 32, "LlamaForCausalLM", {"eagle_aux_hidden_state_layer_ids": ids}
    )
    _, report = pair_json(
        str(sglang_release(version)), "--target", str(target), "--draft", str(head)
    )
    findings = {f["code"]: f for f in report["targets"][0]["findings"]}
    assert ("SGL204" in findings) is warned
    if warned:
        assert findings["SGL204"]["severity"] == "warning"
        assert "/cuda_graph_runner.py:" in findings["SGL204"]["message"]
        assert (
            "decode steps replayed from "
            "them tap the outputs of LlamaForCausalLM's default layers [1, 15, 28], not "
            "[1, 15, 30]" in findings["SGL204"]["message"]
        )


def test_minimax_m3_vl_shifts_its_default_layers(
    sglang_release: Callable[[str], Path], tmp_path: Path
) -> None:
    """MiniMax-M3's vision-language wrapper writes the defaults over `layer_ids` and adds one
    to them as to given ids: a head without ids taps layers 2, 30 and 57 of 60, not 1, 29, 56."""
    target, head = write_pair(tmp_path, 60, "MiniMaxM3SparseForConditionalGeneration", {})
    _, report = pair_json(
        str(sglang_release(NEWEST)), "--target", str(target), "--draft", str(head)
    )
    assert report["pairing"]["layers_to_capture"] == [3, 31, 58]
    assert report["pairing"]["tapped_outputs"] == [2, 30, 57]


@pytest.mark.parametrize("arch", ["Qwen3MoeForCausalLM", "GPT2LMHeadModel"])
def test_a_head_without_aux_hidden_states_never_calls_the_capture_method(
    sglang_release: Callable[[str], Path], tmp_path: Path, arch: str
) -> None:
    """`use_aux_hidden_state: false` under eagle_config: SGLang's model runner skips the
    capture call, so neither ids out of reach (SGL202) nor a missing method (SGL101) stops
    the server."""
    eagle_config = {"eagle_aux_hidden_state_layer_ids": [1, 23, 47], "use_aux_hidden_state": False}
    target, head = write_pair(tmp_path, 48, arch, eagle_config)
    _, report = pair_json(
        str(sglang_release(NEWEST)), "--target", str(target), "--draft", str(head)
    )
    found = {f["code"] for f in report["targets"][0]["findings"]}
    assert not found & {"SGL101", "SGL103", "SGL104", "SGL201", "SGL202", "SGL203"}
    assert report["pairing"] is None


def test_the_pair_example_of_the_docs_prints_what_they_show(
    sglang_release: Callable[[str], Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/sglang.md's `pair` example, with the configs the page shows: its table and its
    finding, as the page shows them."""
    text = (Path(__file__).resolve().parent.parent / "docs" / "sglang.md").read_text()
    block = text[text.index("$ eagle3lint pair --sglang 0.5.23") :]
    block = block[: block.index("```")]
    command, *shown = block.splitlines()
    configs = re.findall(r"```json\n(.*?)```", text, flags=re.DOTALL)
    for folder, config in zip(("llama", "head"), configs[:2], strict=True):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "config.json").write_text(config)
    sglang_release(NEWEST)
    monkeypatch.chdir(tmp_path)
    args = command.removeprefix("$ eagle3lint ").split()
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1
    blank = shown.index("")
    for line in shown[:blank]:
        assert line in result.stdout.splitlines(), line
    # The page wraps the finding's line at 100 columns.
    finding = " ".join(shown[blank + 1 :]).strip()
    assert finding in result.stdout.splitlines(), finding
