"""The public surface for rule authors: everything a rule may import from eagle3lint.

A rule pack imports from here and nowhere else in eagle3lint; the built-in rules do the same.
What is listed in `__all__` keeps its meaning across minor releases; anything else in the
package may change without notice. `docs/writing-rules.md` walks through writing a pack.

- `Rule`, `Code`, `Explanation`, `Example`, `Expected`: declaring a rule, its codes and its
  examples (with the findings they pin and the source `fix` must make of them).
- `Target`: one architecture as vLLM would build it, and what a rule may ask of it (its MRO,
  the methods and `__init__` assignments it resolves, its decoder and language model, its
  forward, the classes its file imports, the attributes a config class declares:
  `ConfigFacts`, `BASE_CONFIGS`). `RuleContext`: the run's contract, model type and
  options, and `ctx.path(ref)` for the path a finding shows.
- `ClassRef` (with the read-only `ClassSummary`, `MethodSummary`, `ForwardSummary` it holds):
  a class of the analysed trees. `Contract`: the vLLM contract read from the analysed tree.
- `Finding`, `Severity`: what `Rule.report` returns; `Unverified` (with `DECIDE_WITH_CONFIG`,
  `DECIDE_WITH_MODEL_TYPE`): what a finding says when readiness depends on something only the
  checkpoint's config.json decides (the target is then `eagle3_ready: null`).
- `Repair` and the built-in repair types: what a finding asks `eagle3lint fix` to do. A pack
  adds a repair type by subclassing `Repair` and registering its codemod under the
  `eagle3lint.repairs` entry-point group (see `eagle3lint.codemod.registry`); the codemod
  raises `CodemodRefused` for code it cannot rewrite safely.
- `DraftPairing`, `PairingAnalysis`, `analyse_pairing`: the draft `eagle3lint pair` checks
  (`ctx.pairing`, None in `check`) and how the target's release builds the pair.
"""

from __future__ import annotations

from eagle3lint.config_classes import BASE_CONFIGS, ConfigFacts
from eagle3lint.contract.drafter import IDS_KEY as DRAFT_IDS_KEY
from eagle3lint.contract.model import Contract, Gate, ImageTokenMap
from eagle3lint.errors import CodemodRefused
from eagle3lint.findings import (
    DECIDE_WITH_CONFIG,
    DECIDE_WITH_MODEL_TYPE,
    Finding,
    Severity,
    Unverified,
)
from eagle3lint.index.model import ClassSummary, ForwardSummary, MethodSummary, TapSummary
from eagle3lint.index.refs import ClassRef, ExternalRef
from eagle3lint.pairing.analysis import Analysis as PairingAnalysis
from eagle3lint.pairing.analysis import analyse as analyse_pairing
from eagle3lint.pairing.draft import SPECULATORS as SPECULATORS_FORMAT
from eagle3lint.pairing.draft import DraftPairing
from eagle3lint.repairs import (
    AddAuxMethods,
    AddDelegatingMethods,
    AddForwardTaps,
    AddGateEntry,
    AddMixinTaps,
    AddProposerBranch,
    AddProtocolBase,
    RenameMethod,
    Repair,
)
from eagle3lint.rule import Code, Example, Expected, Explanation, Rule, RuleContext
from eagle3lint.shapes.model import STREAM, LayerConvention
from eagle3lint.shapes.names import AUX_LAYERS_ATTR, LANGUAGE_MODEL_ATTR
from eagle3lint.targets import Target

__all__ = [
    "AUX_LAYERS_ATTR",
    "BASE_CONFIGS",
    "DECIDE_WITH_CONFIG",
    "DECIDE_WITH_MODEL_TYPE",
    "DRAFT_IDS_KEY",
    "LANGUAGE_MODEL_ATTR",
    "SPECULATORS_FORMAT",
    "STREAM",
    "AddAuxMethods",
    "AddDelegatingMethods",
    "AddForwardTaps",
    "AddGateEntry",
    "AddMixinTaps",
    "AddProposerBranch",
    "AddProtocolBase",
    "ClassRef",
    "ClassSummary",
    "Code",
    "CodemodRefused",
    "ConfigFacts",
    "Contract",
    "DraftPairing",
    "Example",
    "Expected",
    "Explanation",
    "ExternalRef",
    "Finding",
    "ForwardSummary",
    "Gate",
    "ImageTokenMap",
    "LayerConvention",
    "MethodSummary",
    "PairingAnalysis",
    "RenameMethod",
    "Repair",
    "Rule",
    "RuleContext",
    "Severity",
    "TapSummary",
    "Target",
    "Unverified",
    "analyse_pairing",
]
