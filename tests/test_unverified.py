"""Ready means vLLM will not raise (issue 24, item 3): what only the checkpoint's config decides
leaves a target unverified (`eagle3_ready: null`, `unverified` in JSON, exit 1 when asked
about), unless the model's config class, read from the tree or from transformers' sources beside
it, decides it; `fix` makes the proposer read the attribute the class declares.

The tree is the verdicts fixture with a small `transformers` package beside its `vllm` folder (as
in an installed vLLM's site-packages), whose config module the check reads and never imports.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from eagle3lint.cli import app

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "verdicts" / "vllm"
ARCH = "BareDecoderVLForConditionalGeneration"
MODEL = Path("vllm/model_executor/models/bare_decoder_vl.py")
PROPOSER = Path("vllm/v1/spec_decode/eagle.py")
runner = CliRunner()

BASE = """
class PretrainedConfig:
    attribute_map: dict = {}

    def __init__(self, **kwargs):
        self.vocab_size = kwargs.pop("vocab_size", 32000)

    def __getattribute__(self, key):
        return super().__getattribute__(key)
"""
CONFIG = """
from ...configuration_utils import PretrainedConfig


class BareDecoderVLConfig(PretrainedConfig):
    model_type = "bare_decoder_vl"
{body}
"""
DECLARES_ID = """
    def __init__(self, image_token_id=5, **kwargs):
        super().__init__(**kwargs)
        self.image_token_id = image_token_id
"""
ALIASED = """
    attribute_map = {"image_token_index": "image_token_id"}

    def __init__(self, image_token_id=5, **kwargs):
        super().__init__(**kwargs)
        self.image_token_id = image_token_id
"""
RENAMED = """
    def __init__(self, image_token_index=5, **kwargs):
        super().__init__(**kwargs)
        self.image_token_id = image_token_index
"""
DYNAMIC = (
    DECLARES_ID
    + """
    def __getattr__(self, key):
        return getattr(self.text_config, key)
"""
)


HELD_DECODER = """
class PlainCausalLM(nn.Module):
    def __init__(self, *, vllm_config: VllmConfig, prefix: str = "") -> None:
        super().__init__()
        self.model = PlainDecoderModel(
            vllm_config=vllm_config, prefix=maybe_prefix(prefix, "model")
        )

    def forward(self, input_ids, positions, intermediate_tensors=None, inputs_embeds=None):
        return self.model(input_ids, positions, intermediate_tensors, inputs_embeds)


class BareDecoderVLForConditionalGeneration("""


def tree_with(tmp_path: Path, config_body: str | None) -> Path:
    """The fixture, its multimodal wrapper saying its config is transformers'
    `BareDecoderVLConfig`; with `config_body`, that class beside the tree. The wrapper's
    language model holds the decoder in `.model`, as the EAGLE proposer needs (EAG411)."""
    shutil.copytree(FIXTURE, tmp_path / "vllm")
    model = tmp_path / MODEL
    text = model.read_text()
    text = text.replace("\nclass BareDecoderVLForConditionalGeneration(", HELD_DECODER, 1)
    text = text.replace(
        "self.language_model = PlainDecoderModel(", "self.language_model = PlainCausalLM("
    )
    text = text.replace(
        "from .interfaces import",
        "from transformers import BareDecoderVLConfig\n\nfrom .interfaces import",
    )
    # The wrapper's own `__init__` (the last one), not its language model's.
    head, found, tail = text.rpartition("        config = vllm_config.model_config.hf_config\n")
    assert found
    text = (
        head
        + "        config: BareDecoderVLConfig = vllm_config.model_config.hf_config\n"
        + "        self.config = config\n"
        + tail
    )
    model.write_text(text)
    if config_body is not None:
        package = tmp_path / "transformers"
        (package / "models" / "bare_decoder_vl").mkdir(parents=True)
        (package / "__init__.py").write_text("raise ImportError('never imported')\n")
        (package / "configuration_utils.py").write_text(BASE)
        configuration = package / "models" / "bare_decoder_vl" / "configuration_bare_decoder_vl.py"
        configuration.write_text(CONFIG.format(body=config_body))
    return tmp_path / "vllm"


def check(tree: Path, *args: str) -> tuple[int, dict[str, Any]]:
    result = runner.invoke(app, ["check", str(tree), "--arch", ARCH, *args, "--format", "json"])
    assert result.exit_code in (0, 1), result.output
    [target] = json.loads(result.stdout)["targets"]
    return result.exit_code, target


def image_token(target: dict[str, Any]) -> list[tuple[str, str, bool]]:
    return [
        (f["code"], f["severity"], f["fixable"])
        for f in target["findings"]
        if f["code"].startswith("EAG40")
    ]


def test_a_config_class_in_transformers_decides_and_fix_names_its_attribute(
    tmp_path: Path,
) -> None:
    tree = tree_with(tmp_path, DECLARES_ID)
    _, target = check(tree, "--model-type", "llama")
    [(code, severity, fixable)] = image_token(target)
    assert (code, severity, fixable) == ("EAG401", "error", True)
    [finding] = [f for f in target["findings"] if f["code"] == "EAG401"]
    assert finding["message"].startswith("BareDecoderVLConfig has no image_token_index")
    fixed = runner.invoke(app, ["fix", str(tree), "--arch", ARCH, "--model-type", "llama"])
    assert fixed.exit_code == 0, fixed.output
    assert f'"{ARCH}"' in (tmp_path / PROPOSER).read_text()
    code, target = check(tree, "--model-type", "llama")
    assert (code, target["eagle3_ready"], target["unverified"]) == (0, True, [])


def test_an_attribute_map_alias_is_an_attribute(tmp_path: Path) -> None:
    _, target = check(tree_with(tmp_path, ALIASED), "--model-type", "llama")
    assert image_token(target) == []


def test_a_dynamic_lookup_leaves_it_unverified_and_fix_still_names_the_declared_one(
    tmp_path: Path,
) -> None:
    tree = tree_with(tmp_path, DYNAMIC)
    code, target = check(tree, "--model-type", "llama")
    assert image_token(target) == [("EAG402", "warning", True)]
    [entry] = target["unverified"]
    assert entry["code"] == "EAG402" and entry["pass"] == ["--hf-config"]
    assert "BareDecoderVLConfig defines __getattr__" in entry["why"]
    assert "image_token_index" in entry["what"]
    fixed = runner.invoke(app, ["fix", str(tree), "--arch", ARCH, "--model-type", "llama"])
    assert fixed.exit_code == 0, fixed.output
    code, target = check(tree, "--model-type", "llama")
    assert (code, target["eagle3_ready"]) == (0, True)


def test_no_source_for_the_config_class_is_unverified(tmp_path: Path) -> None:
    """No transformers beside the tree and no requirement on it: the class cannot be read."""
    tree = tree_with(tmp_path, None)
    code, target = check(tree, "--model-type", "llama")
    assert target["eagle3_ready"] is False  # the wrapper's own blockers, fixable
    fixed = runner.invoke(app, ["fix", str(tree), "--arch", ARCH, "--model-type", "llama"])
    assert fixed.exit_code == 1, fixed.output
    assert f"unverified EAG402 {ARCH}: no error left" in fixed.output
    code, target = check(tree, "--model-type", "llama")
    [entry] = target["unverified"]
    assert (code, target["eagle3_ready"], entry["code"]) == (1, None, "EAG402")
    assert "transformers is unknown here" in entry["why"]
    # Its config.json decides.
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"model_type": "llama", "image_token_index": 7}))
    code, target = check(tree, "--hf-config", str(config))
    assert (code, target["eagle3_ready"], target["unverified"]) == (0, True, [])


@pytest.mark.parametrize(
    ("body", "ready"),
    [
        (RENAMED, False),
        (RENAMED + "        self.image_token_index = image_token_index\n", True),
        (RENAMED + '        setattr(self, "image_token_index", image_token_index)\n', True),
        (RENAMED.replace("(**kwargs)", "(image_token_index=image_token_index, **kwargs)"), True),
        (RENAMED.replace("image_token_index=5, ", ""), True),
    ],
    ids=["consumed", "stored", "setattr", "passed-on", "no-parameter"],
)
def test_a_key_an_init_parameter_takes_is_an_attribute_only_if_stored(
    tmp_path: Path, body: str, ready: bool
) -> None:
    """Issue item 6: transformers sets a leftover config.json key as an attribute, but a key
    an `__init__` parameter takes is an attribute only where that `__init__` stores it."""
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"model_type": "llama", "image_token_index": 7}))
    tree = tree_with(tmp_path, body)
    _, target = check(tree, "--hf-config", str(config))
    assert [c for c, _, _ in image_token(target)] == ([] if ready else ["EAG401"])


def test_exit_code_follows_intent_and_the_text_says_what_to_pass(tmp_path: Path) -> None:
    """The allow-list's model_type unverified: exit 1 when asked about, 0 when not."""
    tree = tree_with(tmp_path, ALIASED)
    runner.invoke(app, ["fix", str(tree), "--arch", ARCH, "--model-type", "llama"])
    code, target = check(tree)
    assert (code, target["eagle3_ready"]) == (1, None)
    assert [(u["code"], u["pass"]) for u in target["unverified"]] == [
        ("EAG502", ["--hf-config", "--model-type"])
    ]
    assert runner.invoke(app, ["check", str(tree), "--arch", ARCH, "--exit-zero"]).exit_code == 0
    text = runner.invoke(app, ["check", str(tree), "--arch", ARCH]).stdout
    assert "EAG502 [warning]" in text and "1 unverified" in text
    # The target named, with the one option that decides it (issue 52 item 9).
    assert f"pass --hf-config config.json for {ARCH} (1 asked about: exit code 1)" in text
    whole = runner.invoke(app, ["check", str(tree), "--format", "json"])
    report = json.loads(whole.stdout)
    summary = report["summary"]
    assert summary["ready"] + summary["blocked"] + summary["unverified"] == summary["targets"]
    [listed] = [t for t in report["targets"] if t["arch"] == ARCH]
    assert listed["eagle3_ready"] is None and not listed["required"]
    assert whole.exit_code == 0  # nobody asked about it
    alone = runner.invoke(app, ["check", str(tmp_path / MODEL), "--format", "json"])
    assert alone.exit_code == 0, alone.output
