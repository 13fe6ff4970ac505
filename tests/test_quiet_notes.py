"""Warnings users cannot act on go to `-v`; the text names the unverified targets and the one
thing to pass that decides them (issue 52 item 9), on real releases.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from typer.testing import CliRunner

from eagle3lint.cli import app

runner = CliRunner()


def text(*args: str) -> str:
    result = runner.invoke(app, ["check", *args])
    assert result.exit_code in (0, 1), result.output
    return result.stdout


def test_0_34_notes_nobody_can_act_on_are_for_verbose(vllm_release: Callable) -> None:
    """The DeepSeek-V4 vision stub of CPU and XPU (its __init__ raises: the model never runs
    there) and getters vLLM never calls that lose nothing (they pass the call on, or return
    what the getter called instead returns) are info: shown with -v, in JSON as info. Kimi
    K3's ROCm variant, a real model without SupportsEagle3, stays a warning."""
    default = text("--vllm", "0.34.0")
    assert "vl_stub.py" not in default and "EAG203" not in default
    assert "kimi_k3/amd/linear.py:1082:1: EAG104 [warning]" in default
    verbose = text("--vllm", "0.34.0", "-v")
    assert "vl_stub.py:8:1: EAG104 [info]" in verbose
    assert "is a stub whose __init__ raises NotImplementedError" in verbose
    assert "pixtral.py:814:5: EAG203 [*] [info]" in verbose
    assert "only passes the call on to self.language_model" in verbose
    assert "dead code, as that returns the same (2, num_layers // 2, num_layers - 3)" in verbose
    report = json.loads(text("--vllm", "0.34.0", "--format", "json"))
    severities = {
        (f["code"], f["path"].rsplit("/", 1)[-1]): f["severity"]
        for t in report["targets"]
        for f in t["findings"]
        if f["code"] in ("EAG104", "EAG203")
    }
    assert severities[("EAG104", "vl_stub.py")] == "info"
    assert severities[("EAG104", "linear.py")] == "warning"
    assert {s for (code, _), s in severities.items() if code == "EAG203"} == {"info"}


@pytest.mark.parametrize(
    ("version", "named"),
    [
        (
            "0.34.0",
            # transformers is read as the release resolves it: only the checkpoint decides.
            "5 targets with no error but unverified (what vLLM reads at run time was not read "
            "here): pass --hf-config config.json for NanbeigeForCausalLM, TransformersForCausalLM, "
            "TransformersMoEForCausalLM and 2 more.",
        ),
        ("0.16.0", "pass --hf-config config.json for AfmoeForCausalLM, AquilaModel,"),
    ],
)
def test_unverified_targets_are_named_with_what_decides_them(
    version: str, named: str, vllm_release: Callable
) -> None:
    assert named in text("--vllm", version)
