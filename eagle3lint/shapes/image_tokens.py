"""The EAGLE proposer's image-token mapping, recognised by its shape.

In `if supports_multimodal(target_model):` the proposer copies the target config's image token
id to the drafter's. From vLLM 0.12 it dispatches on the class name: a chain of
`if self.get_model_name(target_model) in [...]` / `elif ... == "X"` branches, each assigning
`target_model.config.<attr>`, with an `else` for every other class; 0.10 and 0.11 assign one
attribute for every model. The contract reader reads which attribute each class gets from this
description, and `fix` adds a branch where it points.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst
import libcst.matchers as m

from eagle3lint.shapes.locate import block_indent, locate
from eagle3lint.shapes.syntax import code, string_value

MULTIMODAL_CHECK = "supports_multimodal"
"""The function the proposer guards its image-token copy with."""
MODEL_NAME = "get_model_name"
"""The proposer method whose result the dispatch compares with class names."""
_BLOCK = m.If(test=m.Call(func=m.Name(MULTIMODAL_CHECK), args=[m.Arg(m.Name())]))
_DISPATCH = m.If(
    test=m.Comparison(
        left=m.Call(func=m.Attribute(attr=m.Name(MODEL_NAME)), args=[m.Arg(m.Name())])
    )
)
_ASSIGNMENT = m.SimpleStatementLine(body=[m.Assign(targets=[m.AssignTarget()])])


@dataclass(frozen=True)
class ImageTokenBranchShape:
    """One `if`/`elif` of the dispatch: the classes it names and the attribute it reads."""

    node: cst.If
    classes: tuple[str, ...]
    attribute: str | None


@dataclass(frozen=True)
class ImageTokenShape:
    """The proposer's mapping from target class to image-token attribute, and whether `fix`
    can add a class to it."""

    block: cst.If
    """The `if supports_multimodal(target_model):` block."""
    branches: tuple[ImageTokenBranchShape, ...]
    """The dispatch chain's branches in order (empty when there is no dispatch)."""
    fallback: str | None
    """The attribute read for every class no branch names."""
    column: int
    """The column of the dispatch chain's statements."""
    assigned: str | None
    """What the fallback (or last) branch assigns the token to (`self.model.config.x`)."""
    target_model: str | None
    """The name the dispatch passes to `get_model_name` (`target_model`)."""
    refusal: str | None
    """Why `fix` cannot add a branch here (None when it can)."""


def find_image_token_map(module: cst.Module) -> ImageTokenShape | None:
    """The proposer's image-token mapping in `module`, or None when it has no
    `if supports_multimodal(...)` block."""
    blocks = locate(module, _BLOCK)
    if not blocks:
        return None
    block = blocks[0].node
    assert isinstance(block, cst.If)
    column = blocks[0].column + block_indent(module, block.body)
    refusal = None
    if len(blocks) > 1:
        refusal = (
            f"{len(blocks)} `if {MULTIMODAL_CHECK}(...):` blocks; cannot tell which one to extend"
        )
    chains = [s for s in block.body.body if m.matches(s, _DISPATCH)]
    if len(chains) != 1:
        return ImageTokenShape(
            block,
            (),
            _config_attribute(block.body),
            column,
            None,
            None,
            refusal
            or (
                f"the `if {MULTIMODAL_CHECK}(...):` block does not dispatch on "
                f"`self.{MODEL_NAME}(...)` with one if/elif chain; it sets the image token the "
                "same way for every model"
            ),
        )
    chain = chains[0]
    assert isinstance(chain, cst.If) and isinstance(chain.test, cst.Comparison)
    branches: list[ImageTokenBranchShape] = []
    node: cst.If | cst.Else | None = chain
    while isinstance(node, cst.If):
        classes = tuple(
            s for string in m.findall(node.test, m.SimpleString()) if (s := _text(string))
        )
        branches.append(ImageTokenBranchShape(node, classes, _config_attribute(node.body)))
        node = node.orelse
    fallback = _config_attribute(node.body) if node is not None else None
    assigned = _assigned(node or branches[-1].node)
    if assigned is None:
        refusal = refusal or (
            f"the last branch of the {MODEL_NAME} chain does not start with an assignment; "
            "cannot tell which attribute receives the image token id"
        )
    call = chain.test.left
    assert isinstance(call, cst.Call)
    target_model = code(call.args[0].value)
    return ImageTokenShape(
        block, tuple(branches), fallback, column, assigned, target_model, refusal
    )


_CONFIG_VALUE = re.compile(r"target_model\.config\.([\w.]+)")


def _config_attribute(body: cst.BaseSuite) -> str | None:
    """The first `target_model.config.<attr>` a branch reads."""
    match = _CONFIG_VALUE.search(code(body))
    return match.group(1) if match else None


def _assigned(block: cst.If | cst.Else) -> str | None:
    first = block.body.body[0] if isinstance(block.body, cst.IndentedBlock) else None
    if first is None or not m.matches(first, _ASSIGNMENT):
        return None
    assert isinstance(first, cst.SimpleStatementLine) and isinstance(first.body[0], cst.Assign)
    return code(first.body[0].targets[0].target)


def _text(node: cst.CSTNode) -> str | None:
    return string_value(node) if isinstance(node, cst.BaseExpression) else None
