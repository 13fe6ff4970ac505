"""`[*]` means `fix` rewrites it: over every target of real releases and of the era fixtures,
`fix` removes every finding marked fixable and refuses none of them (check plans the repair
with fix's own planner)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from eagle3lint.cli import app

runner = CliRunner()


def _findings(*args: str) -> list[tuple[str, str, bool]]:
    result = runner.invoke(app, ["check", *args, "--format", "json"])
    assert result.exit_code in (0, 1), result.output
    report = json.loads(result.stdout)
    return [(t["arch"], f["code"], f["fixable"]) for t in report["targets"] for f in t["findings"]]


ERAS = Path(__file__).resolve().parent.parent / "fixtures" / "eras"


def _era(name: str, tmp_path: Path) -> Path:
    shutil.copytree(ERAS / name, tmp_path / name)
    return tmp_path / name


@pytest.mark.parametrize(
    "tree",
    [
        *(f"vLLM {v}" for v in ("0.16.0", "0.18.0", "0.33.0")),
        *sorted(p.name for p in ERAS.iterdir() if (p / "vllm").is_dir()),
    ],
)
def test_fix_removes_every_fixable_finding_and_refuses_none(
    tree: str, release_copy: Callable, tmp_path: Path
) -> None:
    root = (
        release_copy(tree.removeprefix("vLLM "))
        if tree.startswith("vLLM")
        else _era(tree, tmp_path)
    )
    args = [str(root), "--require", "*"]
    fixable = {(arch, code) for arch, code, can in _findings(*args) if can}
    assert fixable
    result = runner.invoke(app, ["fix", *args])
    assert result.exit_code in (0, 1), result.output
    # Targets left alone are the ones `check` marked unfixable, each with its reason.
    refused = {
        line.removeprefix("not fixed: ").split(":")[0]
        for line in result.output.splitlines()
        if line.startswith("not fixed: ")
    }
    assert not refused & {arch for arch, _ in fixable}
    assert "[still fixable" not in result.output
    left = {(arch, code) for arch, code, _ in _findings(*args)}
    assert sorted(fixable & left) == []


def test_range_indexed_loop_is_reported_and_rewritten(era_copy: Path) -> None:
    model = era_copy / "vllm" / "model_executor" / "models" / "no_tap.py"
    islice_loop = (
        "        for layer in islice(self.layers, self.start_layer, self.end_layer):\n"
        "            hidden_states, residual = layer(positions, hidden_states, residual)\n"
    )
    range_loop = (
        "        for i in range(self.start_layer, self.end_layer):\n"
        "            hidden_states, residual = self.layers[i](positions, hidden_states, residual)\n"
    )
    source = model.read_text()
    assert islice_loop in source
    model.write_text(source.replace(islice_loop, range_loop))
    # The model_type decides e2_stub's allow-list: without it the target stays unverified.
    args = [".", "--arch", "NoTapForCausalLM", "--model-type", "llama"]
    assert ("NoTapForCausalLM", "EAG301", True) in _findings(*args)
    result = runner.invoke(app, ["fix", *args])
    assert result.exit_code == 0, result.output
    assert "if i in self.aux_hidden_state_layers:" in model.read_text()
    assert not [f for f in _findings(*args) if f[1] == "EAG301"]
