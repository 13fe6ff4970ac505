"""The last check before rewritten code is handed back for writing."""

from __future__ import annotations

import libcst as cst

from .errors import CodemodRefused


def render_checked(original: str, new_module: cst.Module, path: str) -> str:
    """The code of `new_module`, after checking that Python compiles it.

    `original` is the text the module was parsed from: when the rewrite changed nothing it is
    returned as is, and when the rewrite does not compile the reason says whether the original
    compiled (a codemod bug) or did not either (the file was broken before).

    Refuses when the new code does not compile.
    """
    code = new_module.code
    if code == original:
        return original
    try:
        compile(code, path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as error:
        try:
            compile(original, path, "exec", dont_inherit=True)
        except (SyntaxError, ValueError):
            before = "the original does not compile either"
        else:
            before = "the original does; this is a codemod bug"
        where = f" (line {error.lineno})" if isinstance(error, SyntaxError) else ""
        raise CodemodRefused(
            f"{path}: the rewritten code does not compile: {error}{where}; {before}"
        ) from error
    return code
