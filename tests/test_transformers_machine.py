"""A verdict is a function of the release, never of the machine (issue 52, item 1): on a real
release, whether a `transformers` is importable where eagle3lint runs changes nothing; the
transformers read is the one vLLM's own requirement resolves to, and the report says so."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from test_transformers_backend import check


def json_check(*args: str, pythonpath: Path | None = None) -> dict[str, Any]:
    """`check --format json` in a Python of its own, with `pythonpath` on its path."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    command = [sys.executable, "-m", "eagle3lint", "check", *args, "--format", "json"]
    # No whole-run cache: the second run must compute its answer, not replay the first's.
    result = subprocess.run(
        [*command, "--no-cache"], capture_output=True, text=True, env=env, check=False
    )
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout)


def importable_transformers(root: Path) -> Path:
    """A folder holding a `transformers` package (of another version than the release's, and
    knowing no model) that this interpreter would import."""
    (root / "transformers" / "models" / "auto").mkdir(parents=True)
    (root / "transformers" / "__init__.py").write_text("")
    (root / "transformers" / "models" / "auto" / "modeling_auto.py").write_text("")
    (root / "transformers-4.0.0.dist-info").mkdir()
    (root / "transformers-4.0.0.dist-info" / "METADATA").write_text("Version: 4.0.0\n")
    return root


def test_transformers_importable_or_not_gives_the_same_report(
    vllm_release: Callable[[str], Path], tmp_path: Path
) -> None:
    vllm_release("0.33.0")
    without = json_check("--vllm", "0.33.0")
    with_it = json_check("--vllm", "0.33.0", pythonpath=importable_transformers(tmp_path))
    assert with_it == without
    transformers = without["vllm"]["transformers"]
    assert transformers["source"].startswith("resolved from vllm==0.33.0's requirement ")
    # transformers 5.20 records nothing for these multimodal models (seen at run time:
    # tests/runtime/test_backend_capture_runtime.py): the real classes were read.
    targets = {t["arch"]: t for t in without["targets"]}
    for arch in ("Emu3ForConditionalGeneration", "VibeVoiceAsrForConditionalGeneration"):
        assert targets[arch]["eagle3_ready"] is False
        assert "EAG422" in {f["code"] for f in targets[arch]["findings"]}


def test_a_multimodal_backend_target_is_never_ready_on_transformers_unread(
    vllm_release: Callable[[str], Path], tmp_path: Path
) -> None:
    """A copy of the release's `vllm/` alone (no requirement beside it): transformers is
    unknown, and the backend's multimodal targets are unverified, not ready."""
    tree = tmp_path / "vllm"
    shutil.copytree(vllm_release("0.33.0"), tree)
    targets = check(str(tree))
    for arch in (
        "Emu3ForConditionalGeneration",
        "HunYuanVLForConditionalGeneration",
        "TransformersMultiModalForCausalLM",
    ):
        assert targets[arch]["eagle3_ready"] is None, arch
        assert [u["code"] for u in targets[arch]["unverified"]] == ["EAG413"]
