"""Repairs: what a finding asks `eagle3lint fix` to change, as typed values.

A rule reports a finding with a repair (`AddForwardTaps(path, cls="LlamaModel")`); `fix`
applies it with the codemod registered for the repair's type in `eagle3lint.codemod.registry`
(built-ins there, third-party ones through the `eagle3lint.repairs` entry-point group). Each
type below names the codemod that applies it. This module imports no libcst: rules build
repairs on warm runs that never parse a file.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import ClassVar


@dataclass(frozen=True, slots=True)
class Repair:
    """A request to a codemod: one edit of one file.

    Subclasses add the parameters their codemod needs as fields (text) and set `kind`, the
    stable name `fix` uses in what it prints. Repairs are frozen so that equal requests from
    several targets (DeepseekV3 and Kimi both need DeepseekV2 tapped) are applied once.
    """

    path: str
    """The file to edit, as the finding shows it."""
    kind: ClassVar[str] = ""
    """A stable name, unique among repair types (`add-forward-taps`)."""

    @property
    def params(self) -> tuple[tuple[str, str], ...]:
        """The parameters as sorted name/value pairs (a stable order for edits in one file)."""
        return tuple(
            sorted((f.name, str(getattr(self, f.name))) for f in fields(self) if f.name != "path")
        )


@dataclass(frozen=True, slots=True)
class AddProtocolBase(Repair):
    """Add `SupportsEagle3` to the bases of `cls` (codemod: `codemod.protocol.add_base`)."""

    cls: str
    kind: ClassVar[str] = "add-protocol-base"


@dataclass(frozen=True, slots=True)
class AddAuxMethods(Repair):
    """Give `cls` the setter and the getter `getter`, reaching its decoder `self.<inner>`
    (`inner=""`: the class holds the layers itself) (codemod: `codemod.methods.add_aux_methods`)."""

    cls: str
    getter: str
    inner: str = "model"
    kind: ClassVar[str] = "add-aux-methods"


@dataclass(frozen=True, slots=True)
class AddEmbedHeadAccessor(Repair):
    """Give an SGLang target `cls` `get_embed_and_head()`, returning the weights of
    `self.<embed>` and `self.<head>` (codemod: `codemod.accessors.add_embed_head_accessor`)."""

    cls: str
    embed: str = "model.embed_tokens"
    head: str = "lm_head"
    kind: ClassVar[str] = "add-embed-head-accessor"


@dataclass(frozen=True, slots=True)
class AddDelegatingMethods(Repair):
    """Give a multimodal wrapper `cls` the setter and `getter`, forwarding to its language model
    (codemod: `codemod.methods.add_delegating_methods`)."""

    cls: str
    getter: str
    kind: ClassVar[str] = "add-delegating-methods"


@dataclass(frozen=True, slots=True)
class AddForwardTaps(Repair):
    """Collect aux hidden states in the layer loop of `cls.forward`, the explicit way of the
    releases before EagleModelMixin (codemod: `codemod.taps.add_forward_taps`). `stream`: the
    layers return the whole residual stream, so the tap captures `hidden_states` alone."""

    cls: str
    stream: bool = False
    inherited_init: bool = False
    """`cls` has no `__init__` of its own and a base's sets the aux layers already (MiMo)."""
    kind: ClassVar[str] = "add-forward-taps"


@dataclass(frozen=True, slots=True)
class AddMixinTaps(Repair):
    """Make decoder `cls` an EagleModelMixin and tap its layer loop with the mixin's helper
    (codemod: `codemod.taps.add_mixin_taps`); `stream` as for `AddForwardTaps`."""

    cls: str
    stream: bool = False
    kind: ClassVar[str] = "add-mixin-taps"


@dataclass(frozen=True, slots=True)
class RenameMethod(Repair):
    """Rename method `old` of `cls` to `new` (codemod: `codemod.methods.rename_method`)."""

    cls: str
    old: str
    new: str
    kind: ClassVar[str] = "rename-method"


@dataclass(frozen=True, slots=True)
class AddGateEntry(Repair):
    """Add `model_type` to the config-time EAGLE-3 allow-list (codemod:
    `codemod.gate.add_gate_entry`)."""

    model_type: str
    kind: ClassVar[str] = "add-gate-entry"


@dataclass(frozen=True, slots=True)
class AddProposerBranch(Repair):
    """Map class `cls` to the config attribute `attribute` in the proposer's image-token
    dispatch (codemod: `codemod.proposer.add_proposer_branch`)."""

    cls: str
    attribute: str
    kind: ClassVar[str] = "add-proposer-branch"
