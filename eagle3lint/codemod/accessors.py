"""Adding the embedding/head accessor SGLang's draft worker calls on a target."""

from __future__ import annotations

import libcst as cst

from ._layout import BLANK_LINE, parse_statement
from ._nodes import class_body, find_class, method_index, replace, with_body

ACCESSOR = "get_embed_and_head"
CAPTURE = "set_eagle3_layers_to_capture"


def add_embed_head_accessor(
    module: cst.Module, class_name: str, *, embed: str, head: str
) -> cst.Module:
    """Give `class_name` SGLang's accessor, as its llama.py writes it::

        def get_embed_and_head(self):
            return self.model.embed_tokens.weight, self.lm_head.weight

    (`embed` and `head` the attribute paths from `self`). It goes right after the class's
    `set_eagle3_layers_to_capture`, else at the end of the class; a class that has it already
    is left as it is. Refuses when the class is missing."""
    cls = find_class(module, class_name)
    body = class_body(cls)
    if method_index(body, ACCESSOR) is not None:
        return module
    code = f"def {ACCESSOR}(self):\n    return self.{embed}.weight, self.{head}.weight\n"
    method = parse_statement(module, code).with_changes(leading_lines=[BLANK_LINE])
    capture = method_index(body, CAPTURE)
    index = len(body) if capture is None else capture + 1
    return replace(module, cls, with_body(cls, [*body[:index], method, *body[index:]]))
