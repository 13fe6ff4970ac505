"""`[tool.eagle3lint]` in pyproject.toml, on real release files (vLLM 0.16.0)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from eagle3lint.cli import app
from eagle3lint.commands.options import RunArgs
from eagle3lint.config import ConfigError, load_config

REPO = Path(__file__).resolve().parent.parent
KIMI_CONFIG = REPO / "examples" / "kimi-k2.5" / "config.json"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[str], Path]:
    """`project(toml)`: a folder whose pyproject.toml holds `toml`, made the working directory."""

    def make(toml: str) -> Path:
        (tmp_path / "pyproject.toml").write_text(toml)
        monkeypatch.chdir(tmp_path)
        return tmp_path

    return make


def check(*args: str) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(app, ["check", *args, "--format", "json"])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)


def findings(report: dict[str, Any], arch: str) -> dict[str, str]:
    """Code → severity of one target's findings."""
    [target] = [t for t in report["targets"] if t["arch"] == arch]
    return {f["code"]: f["severity"] for f in target["findings"]}


def test_nearest_pyproject_with_the_table_applies(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.eagle3lint]\nselect = ["EAG1"]\n')
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "pyproject.toml").write_text('[project]\nname = "pkg"\n')
    (tmp_path / "pkg" / "deep").mkdir()
    assert load_config(tmp_path / "pkg" / "deep").select == ["EAG1"]
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "pyproject.toml").write_text('[tool.eagle3lint]\nignore = ["EAG3"]\n')
    nearest = load_config(tmp_path / "other")
    assert (nearest.select, nearest.ignore) == ([], ["EAG3"])
    assert nearest.path == tmp_path / "other" / "pyproject.toml"


def test_every_key_is_read(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        """
[tool.eagle3lint]
select = ["EAG1", "EAG3"]
ignore = ["EAG306"]
vllm-version = "0.16.0"
hf-config = "ckpt/config.json"
exclude = ["*_test.py"]

[tool.eagle3lint.rules.forward-taps]
aux-layers = [2, 30, 58]
"""
    )
    (tmp_path / "sub").mkdir()
    config = load_config(tmp_path / "sub")
    assert config.select == ["EAG1", "EAG3"]
    assert config.ignore == ["EAG306"]
    assert config.vllm_version == "0.16.0"
    assert config.hf_config == tmp_path / "ckpt" / "config.json"  # relative to the pyproject
    assert config.exclude == ["*_test.py"]
    assert config.rule_options == {"forward-taps": {"aux-layers": [2, 30, 58]}}


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ('selct = ["EAG1"]', "unknown key selct"),
        ('select = "EAG1"', "select must be a list of strings"),
        ("vllm-version = 16", "vllm-version must be a string"),
        ("[tool.eagle3lint.rules.no-such-rule]\nx = 1", "unknown rule 'no-such-rule'"),
        ("[tool.eagle3lint.rules.forward-taps]\npp-index = 'warn'", "has no option pp-index"),
        ("[tool.eagle3lint.rules.forward-taps]\naux-layers = [-1]", "aux-layers must be a list"),
    ],
)
def test_invalid_config_exits_2_with_a_clear_message(
    project: Callable[[str], Path], toml: str, message: str
) -> None:
    root = project(f"[tool.eagle3lint]\n{toml}\n")
    with pytest.raises(ConfigError, match=message):
        load_config()
    result = CliRunner().invoke(app, ["check", "model.py"])
    assert result.exit_code == 2
    assert message in result.output
    assert str(root / "pyproject.toml") in result.output


def test_command_line_flags_override_the_config(project: Callable[[str], Path]) -> None:
    project(
        '[tool.eagle3lint]\nselect = ["EAG1"]\nignore = ["EAG101"]\nvllm-version = "0.16.0"\n'
        'hf-config = "config.json"\n'
    )
    from_config = RunArgs().check_options(progress=False)
    assert (from_config.select, from_config.ignore) == (["EAG1"], ["EAG101"])
    assert (from_config.release, from_config.release_engine) == ("0.16.0", "vllm")
    assert from_config.hf_config == Path.cwd() / "config.json"
    overridden = RunArgs(
        vllm="0.17.0", hf_config=Path("other.json"), select=["EAG3"], ignore=["EAG301"]
    ).check_options(progress=False)
    assert (overridden.select, overridden.ignore) == (["EAG3"], ["EAG301"])
    assert overridden.release == "0.17.0"
    assert overridden.hf_config == Path("other.json")


def test_select_and_ignore_from_config_on_a_real_release(
    project: Callable[[str], Path], vllm_release: Callable[[str], Path]
) -> None:
    tree = str(vllm_release("0.16.0"))
    project('[tool.eagle3lint]\nignore = ["EAG2", "EAG5"]\n')
    _, report = check(tree, "--arch", "DeepseekV2ForCausalLM")
    assert set(findings(report, "DeepseekV2ForCausalLM")) == {"EAG101", "EAG301"}
    _, report = check(tree, "--arch", "DeepseekV2ForCausalLM", "--ignore", "EAG3")
    assert set(findings(report, "DeepseekV2ForCausalLM")) == {"EAG101", "EAG201", "EAG502"}


def test_rule_options_reach_the_rule(
    project: Callable[[str], Path], vllm_release: Callable[[str], Path]
) -> None:
    """llama.py taps `hidden_states + residual` before each layer (EAG305): it matters only
    for drafters that request layer 0, which `aux-layers` tells."""
    tree = str(vllm_release("0.16.0"))
    # The model_type decides 0.16.0's allow-list: without it, Llama is unverified (exit 1).
    llama = ["--arch", "LlamaForCausalLM", "--model-type", "llama"]
    project("[tool.eagle3lint]\n")
    code, report = check(tree, *llama)
    assert findings(report, "LlamaForCausalLM")["EAG305"] == "warning"
    assert code == 0
    project("[tool.eagle3lint.rules.forward-taps]\naux-layers = [2, 16, 29]\n")
    _, report = check(tree, *llama)
    assert "EAG305" not in findings(report, "LlamaForCausalLM")
    project("[tool.eagle3lint.rules.forward-taps]\naux-layers = [0, 16, 29]\n")
    code, report = check(tree, *llama)
    assert findings(report, "LlamaForCausalLM")["EAG305"] == "error"
    assert code == 1


def test_hf_config_and_vllm_version_from_config(
    project: Callable[[str], Path],
    vllm_release: Callable[[str], Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A plugin repository names its checkpoint's config.json and its vLLM release once."""
    tree = vllm_release("0.16.0")
    root = project('[tool.eagle3lint]\nvllm-version = "0.16.0"\nhf-config = "ckpt/config.json"\n')
    (root / "ckpt").mkdir()
    shutil.copy(KIMI_CONFIG, root / "ckpt" / "config.json")
    shutil.copy(tree / "model_executor" / "models" / "kimi_k25.py", root / "kimi_k25.py")
    (root / "src").mkdir()
    monkeypatch.chdir(root / "src")  # hf-config stays relative to the pyproject
    _, report = check("../kimi_k25.py")
    assert report["vllm"]["version"] == "0.16.0"
    assert report["vllm"]["contract_source"] == "vllm==0.16.0"
    rejected = findings(report, "KimiK25ForConditionalGeneration")
    assert rejected["EAG501"] == "error"  # kimi_k2 is not in 0.16.0's allow-list
