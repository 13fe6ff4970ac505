"""EAG645 on real releases: a head trained on aux states whose config turns them off. vLLM's
drafter drops `fc` at load and feeds the head the bare last hidden state. Issue 54 item 3."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from test_pair import LLAMA, draft_folder, head, pair, tensors

OFF = {"use_aux_hidden_state": False}


@pytest.mark.parametrize("version", ["0.18.0", "0.25.0", "0.32.0", "0.34.0"])
def test_aux_off_with_a_wide_fc_and_its_neighbours(
    vllm_release: Callable[[str], Path], tmp_path: Path, version: str
) -> None:
    cases = (
        # Trained on three states, told to use none: fc is dropped.
        ("dropped", head(eagle_config=OFF, eagle_aux_hidden_state_layer_ids=None), tensors(), 1),
        # The same weights with the flag left at its default: fc loads.
        ("default", head(), tensors(), 0),
        # A head without fc, as one trained on the last hidden state ships.
        ("no-fc", head(eagle_config=OFF), tensors(**{"fc.weight": None}), 0),
    )
    for name, config, weights, count in cases:
        folder = draft_folder(tmp_path / name, config, weights)
        _, report = pair(vllm_release, version, LLAMA, folder)
        found = [f for t in report["targets"] for f in t["findings"] if f["code"] == "EAG645"]
        assert len(found) == count, (name, found)
        if found:
            assert found[0]["severity"] == "warning"
            assert "fc.weight [4096, 12288], trained on 3 aux states" in found[0]["message"]
            assert "llama_eagle3.py:" in found[0]["message"]
