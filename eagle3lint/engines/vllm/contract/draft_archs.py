"""The architectures vLLM's speculative config writes into a draft's config.

A draft is loaded under the architecture the speculative config gives it
(`hf_config.update({"architectures": ["DeepSeekMTPModel"]})` in `config/speculative.py`, or a
0.34 speculator's `config.py`), wherever the registry lists that architecture: the Transformers
backend's MTP drafts (`f"Transformers{moe}ForMTP"`, 0.33 on) sit in its own table, not in
`_SPECULATIVE_DECODING_MODELS`. Read as text, never run.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from fnmatch import fnmatchcase
from pathlib import Path

from eagle3lint.engines.vllm.contract.method_choice import SPECULATIVE, speculator_config_files

# `{"architectures": [...]}` or `x["architectures"] = [...]`; the list ends at the first `]`, so
# a list holding an index (`[mtp_arch_maps[arch]]`) yields no literal, as it should: its names
# are the dict's, not written here.
_ARCHITECTURES = re.compile(r"""["']architectures["']\]?\s*[:=]\s*\[([^\]]*)\]""")
_LITERAL = re.compile(r"""(?<!\w)(f?)(["'])(\w[\w{}.]*?)\2""")
_HOLE = re.compile(r"\{[^{}]*\}")


def read_draft_architectures(vllm_dir: Path, read: Callable[[Path], str | None]) -> tuple[str, ...]:
    """The architectures the tree's speculative config gives a draft, as `fnmatch` patterns (an
    f-string's holes become `*`), sorted. `read` returns a file's text, None when absent."""
    found: set[str] = set()
    for path in (vllm_dir / SPECULATIVE, *speculator_config_files(vllm_dir)):
        text = read(path)
        for listed in _ARCHITECTURES.finditer(text or ""):
            for prefix, _, name in _LITERAL.findall(listed.group(1)):
                found.add(_HOLE.sub("*", name) if prefix else name)
    return tuple(sorted(found))


def is_draft_architecture(arch: str, patterns: tuple[str, ...]) -> bool:
    """Whether the speculative config names `arch` as a draft's architecture."""
    return any(fnmatchcase(arch, pattern) for pattern in patterns)
