"""The public surface for rule authors: everything a rule may import from eagle3lint.

A rule pack imports from here and nowhere else in eagle3lint; the built-in rules do the same.
What is listed in `__all__` keeps its meaning across minor releases; anything else in the
package may change without notice. `docs/writing-rules.md` walks through writing a pack.

- `Rule`, `Code`, `Explanation`, `Example`, `Expected`: declaring a rule, its codes and its
  examples (with the findings they pin and the source `fix` must make of them); `API_VERSION`,
  the (major, minor) a rule states it was written against in `Rule.api_version`, and
  `Rule.engines`, the engine wings whose targets it judges (`("vllm",)` by default).
- `Target`: one architecture as vLLM would build it, and what a rule may ask of it (its MRO,
  the methods and `__init__` assignments it resolves, its decoder and language model, its
  forward, the classes its file imports, the attributes a config class declares:
  `ConfigFacts`, `BASE_CONFIGS`). `RuleContext`: the run's contract, model type and
  options, and `ctx.path(ref)` for the path a finding shows.
- `ClassRef` (with the read-only `ClassSummary`, `MethodSummary`, `ForwardSummary` it holds):
  a class of the analysed trees. `Contract`: the vLLM contract read from the analysed tree
  (with `BackendCapture`, how its Transformers backend records the aux hidden states; what
  that meets in transformers is `Target.backend_capture`).
- `Finding`, `Severity`: what `Rule.report` returns; `Unverified` (with `DECIDE_WITH_CONFIG`,
  `DECIDE_WITH_MODEL_TYPE`): what a finding says when readiness depends on something only the
  checkpoint's config.json decides (the target is then `eagle3_ready: null`).
- `Repair` and the built-in repair types: what a finding asks `eagle3lint fix` to do. A pack
  adds a repair type by subclassing `Repair` and registering its codemod under the
  `eagle3lint.repairs` entry-point group (see `eagle3lint.codemod.registry`); the codemod
  raises `CodemodRefused` for code it cannot rewrite safely.
- `DraftPairing`, `PairingAnalysis`, `analyse_pairing`: the draft `eagle3lint pair` checks
  (`ctx.pairing`, None in `check`) and how the target's release builds the pair.
- SGLang's side (`Rule.engines = ("sglang",)`): `SglangTarget`, `SglangContract` (with its
  `SglangCallSite`s), and for `pair` on an SGLang tree `SglangPairing`,
  `analyse_sglang_pairing` and `SGLANG_IDS_KEY`.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

from eagle3lint.errors import CodemodRefused
from eagle3lint.findings import (
    DECIDE_WITH_CONFIG,
    DECIDE_WITH_MODEL_TYPE,
    Finding,
    Severity,
    Unverified,
)
from eagle3lint.repairs import (
    AddAuxMethods,
    AddDelegatingMethods,
    AddEmbedHeadAccessor,
    AddForwardTaps,
    AddGateEntry,
    AddMixinTaps,
    AddProposerBranch,
    AddProtocolBase,
    RenameMethod,
    Repair,
)
from eagle3lint.rule import API_VERSION, Code, Example, Expected, Explanation, Rule, RuleContext
from eagle3lint.shapes.model import STREAM, LayerConvention

if TYPE_CHECKING:
    from eagle3lint.config_classes import BASE_CONFIGS, ConfigFacts
    from eagle3lint.drafts.analysis import Analysis as PairingAnalysis
    from eagle3lint.drafts.analysis import analyse as analyse_pairing
    from eagle3lint.drafts.draft import SPECULATORS as SPECULATORS_FORMAT
    from eagle3lint.drafts.draft import DraftPairing
    from eagle3lint.engines.sglang.contract import CallSite as SglangCallSite
    from eagle3lint.engines.sglang.contract import SglangContract
    from eagle3lint.engines.sglang.pairing import IDS_KEY as SGLANG_IDS_KEY
    from eagle3lint.engines.sglang.pairing import SglangPairing
    from eagle3lint.engines.sglang.pairing import analyse as analyse_sglang_pairing
    from eagle3lint.engines.sglang.targets import SglangTarget
    from eagle3lint.engines.vllm.contract.drafter import IDS_KEY as DRAFT_IDS_KEY
    from eagle3lint.engines.vllm.contract.model import (
        BackendCapture,
        Contract,
        Gate,
        ImageTokenMap,
        TargetEmbedding,
    )
    from eagle3lint.engines.vllm.names import AUX_LAYERS_ATTR, LANGUAGE_MODEL_ATTR
    from eagle3lint.engines.vllm.targets import Target
    from eagle3lint.index.model import ClassSummary, ForwardSummary, MethodSummary, TapSummary
    from eagle3lint.index.refs import ClassRef, ExternalRef

_LAZY = {
    "BASE_CONFIGS": ("eagle3lint.config_classes", "BASE_CONFIGS"),
    "ConfigFacts": ("eagle3lint.config_classes", "ConfigFacts"),
    "PairingAnalysis": ("eagle3lint.drafts.analysis", "Analysis"),
    "analyse_pairing": ("eagle3lint.drafts.analysis", "analyse"),
    "SPECULATORS_FORMAT": ("eagle3lint.drafts.draft", "SPECULATORS"),
    "DraftPairing": ("eagle3lint.drafts.draft", "DraftPairing"),
    "DRAFT_IDS_KEY": ("eagle3lint.engines.vllm.contract.drafter", "IDS_KEY"),
    "BackendCapture": ("eagle3lint.engines.vllm.contract.model", "BackendCapture"),
    "Contract": ("eagle3lint.engines.vllm.contract.model", "Contract"),
    "Gate": ("eagle3lint.engines.vllm.contract.model", "Gate"),
    "ImageTokenMap": ("eagle3lint.engines.vllm.contract.model", "ImageTokenMap"),
    "TargetEmbedding": ("eagle3lint.engines.vllm.contract.model", "TargetEmbedding"),
    "AUX_LAYERS_ATTR": ("eagle3lint.engines.vllm.names", "AUX_LAYERS_ATTR"),
    "LANGUAGE_MODEL_ATTR": ("eagle3lint.engines.vllm.names", "LANGUAGE_MODEL_ATTR"),
    "Target": ("eagle3lint.engines.vllm.targets", "Target"),
    "SglangCallSite": ("eagle3lint.engines.sglang.contract", "CallSite"),
    "SglangContract": ("eagle3lint.engines.sglang.contract", "SglangContract"),
    "SGLANG_IDS_KEY": ("eagle3lint.engines.sglang.pairing", "IDS_KEY"),
    "SglangPairing": ("eagle3lint.engines.sglang.pairing", "SglangPairing"),
    "analyse_sglang_pairing": ("eagle3lint.engines.sglang.pairing", "analyse"),
    "SglangTarget": ("eagle3lint.engines.sglang.targets", "SglangTarget"),
    "ClassSummary": ("eagle3lint.index.model", "ClassSummary"),
    "ForwardSummary": ("eagle3lint.index.model", "ForwardSummary"),
    "MethodSummary": ("eagle3lint.index.model", "MethodSummary"),
    "TapSummary": ("eagle3lint.index.model", "TapSummary"),
    "ClassRef": ("eagle3lint.index.refs", "ClassRef"),
    "ExternalRef": ("eagle3lint.index.refs", "ExternalRef"),
}
"""Names whose modules belong to the check machinery (index, engine wings, drafts): loaded when
a pack first asks for them, so that importing the API (every pack does, at plugin load) costs
only the declaration classes."""


def __getattr__(name: str) -> object:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attribute = _LAZY[name]
    value = getattr(import_module(module), attribute)
    globals()[name] = value  # asked once
    return value


__all__ = [
    "API_VERSION",
    "AUX_LAYERS_ATTR",
    "BASE_CONFIGS",
    "DECIDE_WITH_CONFIG",
    "DECIDE_WITH_MODEL_TYPE",
    "DRAFT_IDS_KEY",
    "LANGUAGE_MODEL_ATTR",
    "SGLANG_IDS_KEY",
    "SPECULATORS_FORMAT",
    "STREAM",
    "AddAuxMethods",
    "AddDelegatingMethods",
    "AddEmbedHeadAccessor",
    "AddForwardTaps",
    "AddGateEntry",
    "AddMixinTaps",
    "AddProposerBranch",
    "AddProtocolBase",
    "BackendCapture",
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
    "SglangCallSite",
    "SglangContract",
    "SglangPairing",
    "SglangTarget",
    "TapSummary",
    "Target",
    "TargetEmbedding",
    "Unverified",
    "analyse_pairing",
    "analyse_sglang_pairing",
]
