"""Source-to-source rewrites behind `eagle3lint fix`.

Each transformation takes a parsed `libcst.Module` and returns a new one, unchanged when the
change is already there (applying it twice changes nothing), and raises `CodemodRefused` with a
reason when the code has a shape it cannot rewrite safely. Generated code follows vLLM's style:
ruff-format at line length 88 and isort-sorted imports. `render_checked` turns the result back
into text after checking that it compiles.
"""

from .errors import CodemodRefused
from .gate import add_gate_entry
from .imports import ensure_interface_import
from .methods import add_aux_methods, add_delegating_methods, rename_method
from .proposer import add_proposer_branch
from .protocol import add_base
from .taps import add_forward_taps, add_mixin_taps
from .verify import render_checked

__all__ = [
    "CodemodRefused",
    "add_aux_methods",
    "add_base",
    "add_delegating_methods",
    "add_forward_taps",
    "add_gate_entry",
    "add_mixin_taps",
    "add_proposer_branch",
    "ensure_interface_import",
    "rename_method",
    "render_checked",
]
