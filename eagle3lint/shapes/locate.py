"""Finding nodes by libcst matcher, with the column and function each sits in.

Apart from `syntax.py` because `libcst.matchers` costs a few tenths of a second to import: the
extractor, which runs in the parse worker after every edit, never needs it; the gate and
proposer recognisers and the codemods do.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst
import libcst.matchers as m

from eagle3lint.shapes.syntax import HOLDS_NO_BLOCK

_BLOCK_MATCHERS = (m.If, m.For, m.While, m.With, m.Try, m.FunctionDef, m.ClassDef)
"""Matchers of compound statements, which are never found inside `HOLDS_NO_BLOCK` nodes."""


def block_indent(module: cst.Module, block: cst.BaseSuite) -> int:
    """How many columns the statements of `block` are indented from the statement owning it."""
    indent = block.indent if isinstance(block, cst.IndentedBlock) else None
    return len(module.default_indent if indent is None else indent)


@dataclass(frozen=True)
class Located:
    """A node found by `locate`, with where it sits."""

    node: cst.CSTNode
    # Column of the statement holding the node (of the node itself, for a statement).
    column: int
    # The innermost function definition around the node, if any.
    function: cst.FunctionDef | None


def locate(
    module: cst.Module,
    matcher: m.BaseMatcherNode,
    *,
    within: cst.CSTNode | None = None,
    column: int = 0,
) -> list[Located]:
    """The nodes matching `matcher` in `module`, or `within` a node that starts at `column`.

    Columns are counted from block indentation during the same walk; libcst's position
    metadata would lay out the whole file to find them.
    """
    finder = _Locator(module, matcher, column)
    (module if within is None else within).visit(finder)
    return finder.found


class _Locator(cst.CSTVisitor):
    def __init__(self, module: cst.Module, matcher: m.BaseMatcherNode, column: int) -> None:
        super().__init__()
        self._module = module
        self._matcher = matcher
        self._blocks_only = isinstance(matcher, _BLOCK_MATCHERS)
        self._indents = [column]
        self._statements: list[int] = []
        self._functions: list[cst.FunctionDef] = []
        self.found: list[Located] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.IndentedBlock):
            self._indents.append(block_indent(self._module, node))
        if isinstance(node, cst.SimpleStatementLine | cst.BaseCompoundStatement):
            self._statements.append(sum(self._indents))
        if isinstance(node, cst.FunctionDef):
            self._functions.append(node)
        if m.matches(node, self._matcher):
            function = self._functions[-1] if self._functions else None
            column = self._statements[-1] if self._statements else sum(self._indents)
            self.found.append(Located(node, column, function))
        return not (self._blocks_only and isinstance(node, HOLDS_NO_BLOCK))

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if isinstance(original_node, cst.IndentedBlock):
            self._indents.pop()
        if isinstance(original_node, cst.SimpleStatementLine | cst.BaseCompoundStatement):
            self._statements.pop()
        if isinstance(original_node, cst.FunctionDef):
            self._functions.pop()
