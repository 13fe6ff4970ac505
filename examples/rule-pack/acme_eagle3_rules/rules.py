"""ACME101: every EAGLE-3 target of our fork names the layers its drafter was trained on.

Our drafters are trained on a fixed set of target layers, recorded on the model class as
`ACME_DRAFT_LAYERS` so that serving configs can be checked against it. The rule imports only
from `eagle3lint.api`, as every rule should.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

from eagle3lint.api import (
    Code,
    Example,
    Expected,
    Finding,
    Repair,
    Rule,
    RuleContext,
    Severity,
    Target,
)

ATTRIBUTE = "ACME_DRAFT_LAYERS"


@dataclass(frozen=True, slots=True)
class AddDraftLayers(Repair):
    """Add `ACME_DRAFT_LAYERS = ()` to class `cls` (codemod: `codemods.add_draft_layers`)."""

    cls: str
    kind: ClassVar[str] = "acme-add-draft-layers"


class DraftLayersDeclared(Rule):
    """An EAGLE-3 target declares the layers its drafter was trained on."""

    slug = "acme-draft-layers"
    codes = (
        Code(
            "ACME101",
            "draft-layers-declared",
            f"An EAGLE-3 target declares {ATTRIBUTE}.",
            Severity.WARNING,
            fixable=True,
        ),
    )
    valid = (
        Example(
            era="e3_mixin",
            source="""
from torch import nn
from .interfaces import SupportsEagle3
class GoodForCausalLM(nn.Module, SupportsEagle3):
    ACME_DRAFT_LAYERS = (2, 16, 29)
""",
        ),
    )
    invalid = (
        Example(
            era="e3_mixin",
            expect=(Expected("ACME101", line=3, message="does not declare ACME_DRAFT_LAYERS"),),
            source="""
from torch import nn
from .interfaces import SupportsEagle3
class BareForCausalLM(nn.Module, SupportsEagle3):
    pass
""",
            expected_replacement="""
from torch import nn
from .interfaces import SupportsEagle3
class BareForCausalLM(nn.Module, SupportsEagle3):
    ACME_DRAFT_LAYERS = ()
    pass
""",
        ),
    )

    def check(self, target: Target, ctx: RuleContext) -> Iterator[Finding]:
        if not target.implements_eagle3 or target.has_attribute(ATTRIBUTE):
            return
        path = ctx.path(target.ref)
        yield self.report(
            "ACME101",
            f"{target.ref.name} does not declare {ATTRIBUTE}: serving configs cannot be "
            "checked against the layers its drafter was trained on.",
            path,
            target.ref.cls.line,
            target.ref.cls.column,
            hint=f"Set {ATTRIBUTE} to the drafter's training layers.",
            repair=AddDraftLayers(path, cls=target.ref.name),
        )


RULES = [DraftLayersDeclared]
