"""Where one vLLM tree makes the drafter's rotary embedding partial.

A draft config's `partial_rotary_factor` reaches the EAGLE-3 drafter's `get_rope` in two ways,
each read by its shape in the release's files, never by its version: `get_rope` takes it from
`rope_parameters` (0.15 and later, `rotary_dim = int(head_size * partial_rotary_factor)`), and a
top-level key is either passed by the Llama attention (`getattr(config,
"partial_rotary_factor", 1)`, 0.10-0.11) or copied into `rope_parameters` by
`patch_rope_parameters` (0.15 and later). Where neither applies the head rotates fully.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from eagle3lint.sources.source_text import function_named, line_at

ROTARY_FILES = (
    "model_executor/layers/rotary_embedding/__init__.py",
    "model_executor/layers/rotary_embedding.py",
)
CONFIG_PATCH = "transformers_utils/config.py"
LLAMA = "model_executor/models/llama.py"
NESTED = "rope_parameters"
TOP = "top level"

_FROM_PARAMETERS = re.compile(r"rope_parameters\.get\(\s*[\"']partial_rotary_factor[\"']")
_FROM_CONFIG = re.compile(r"getattr\(\s*config\s*,\s*[\"']partial_rotary_factor[\"']")
_PATCHED = re.compile(r"[\"']partial_rotary_factor[\"']")


@dataclass(slots=True)
class DraftRotary:
    """Where the release reads a draft's `partial_rotary_factor` ("" path: it does not)."""

    nested_path: str = ""
    nested_line: int = 0
    """`get_rope`'s `rope_parameters.get("partial_rotary_factor", ...)`."""
    top_path: str = ""
    top_line: int = 0
    """What carries a top-level `partial_rotary_factor` to the drafter's rotary."""

    def reads(self, place: str) -> tuple[str, int] | None:
        """Where the release applies a factor the draft config holds at `place` (`NESTED` or
        `TOP`); None when the drafter rotates fully whatever that factor says."""
        if place == TOP and self.top_path:
            return self.top_path, self.top_line
        if place == NESTED and self.nested_path:
            return self.nested_path, self.nested_line
        return None


def read_draft_rotary(texts: dict[str, str], root: str) -> DraftRotary:
    """The facts of the tree at `root` from its files' texts (keyed by path under `root`)."""
    facts = DraftRotary()
    for rel in ROTARY_FILES:
        found = function_named(texts.get(rel, ""), "get_rope")
        if found is not None and (read := _FROM_PARAMETERS.search(found[0])) is not None:
            facts.nested_path = f"{root}/{rel}"
            facts.nested_line = found[1] + found[0].count("\n", 0, read.start())
            break
    llama = texts.get(LLAMA, "")
    patch = function_named(texts.get(CONFIG_PATCH, ""), "patch_rope_parameters")
    if (direct := _FROM_CONFIG.search(llama)) is not None:
        facts.top_path, facts.top_line = f"{root}/{LLAMA}", line_at(llama, direct.start())
    elif facts.nested_path and patch is not None and _PATCHED.search(patch[0]) is not None:
        # The patch moves the top-level key into `rope_parameters`, where `get_rope` reads it.
        facts.top_path, facts.top_line = f"{root}/{CONFIG_PATCH}", patch[1]
    return facts
