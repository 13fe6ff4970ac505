"""How one vLLM tree fits a draft's positions to the served context.

A draft checkpoint's `max_position_embeddings` sizes its rotary cache and its model config's
`max_model_len`; the release then decides what happens when the target is served longer:
`SpeculativeConfig._maybe_override_draft_max_position_embeddings` raises the draft's positions
to the target's (from 0.26-0.27; only for cache-only RoPE types once `_CACHE_ONLY_ROPE_TYPES`
exists, 0.33), model runner V1 reads the draft's `max_model_len` into
`effective_drafter_max_model_len` and drafts nothing past it, and
`VllmConfig._limit_max_model_len_to_draft` (0.33) lowers the served context instead. Each fact
is found by its shape in the release's files, never by its version.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from eagle3lint.sources.source_text import function_named, line_at

SPECULATIVE = "config/speculative.py"
SELECTION = "config/vllm.py"
V1_RUNNER = "v1/worker/gpu_model_runner.py"

_RAISE = "_maybe_override_draft_max_position_embeddings"
_LIMIT = "_limit_max_model_len_to_draft"
_CACHE_ONLY = re.compile(
    r"^_CACHE_ONLY_ROPE_TYPES\s*=\s*frozenset\(\s*[\[{(](.*?)[\]})]", re.S | re.M
)
_STRING = re.compile(r"""["']([^"'\n]+)["']""")
_GATE = re.compile(r"self\.effective_drafter_max_model_len\s*=\s*draft_config\.max_model_len")


@dataclass(slots=True)
class DraftContext:
    """Where the release raises, gates or limits on the draft's positions ("" path: it does
    not)."""

    raise_path: str = ""
    raise_line: int = 0
    raised_rope_types: list[str] | None = None
    """The RoPE types whose positions are raised; None: every type (no
    `_CACHE_ONLY_ROPE_TYPES`)."""
    gate_path: str = ""
    gate_line: int = 0
    """Model runner V1's `effective_drafter_max_model_len = draft_config.max_model_len`."""
    limit_path: str = ""
    limit_line: int = 0
    limit_v2_only: bool = False
    """The served-context limit returns early unless model runner V2 runs (0.33)."""

    def raises(self, rope_types: list[str]) -> bool:
        """Whether the release raises a draft with these RoPE types to the target's length."""
        if not self.raise_path:
            return False
        allowed = self.raised_rope_types
        return allowed is None or all(kind in allowed for kind in rope_types)

    def limits(self, runner: str) -> bool:
        """Whether the served context is lowered to an unraised draft's on `runner`."""
        return bool(self.limit_path) and (runner == "v2" or not self.limit_v2_only)


def read_draft_context(texts: dict[str, str], root: str) -> DraftContext:
    """The facts of the tree at `root` from its files' texts (keyed by path under `root`)."""
    facts = DraftContext()
    speculative = texts.get(SPECULATIVE, "")
    if (raised := function_named(speculative, _RAISE)) is not None:
        facts.raise_path, facts.raise_line = f"{root}/{SPECULATIVE}", raised[1]
        cache_only = _CACHE_ONLY.search(speculative)
        if cache_only is not None:
            facts.raised_rope_types = _STRING.findall(cache_only.group(1))
    runner = texts.get(V1_RUNNER, "")
    if (gate := _GATE.search(runner)) is not None:
        facts.gate_path = f"{root}/{V1_RUNNER}"
        facts.gate_line = line_at(runner, gate.start())
    selection = texts.get(SELECTION, "")
    if (limit := function_named(selection, _LIMIT)) is not None:
        facts.limit_path, facts.limit_line = f"{root}/{SELECTION}", limit[1]
        # 0.33 returns early unless V2 runs; 0.34 has no other runner.
        facts.limit_v2_only = "use_v2_model_runner" in limit[0]
    return facts
