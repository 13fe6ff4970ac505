"""An SGLang architecture as the engine builds it: the registered class, its MRO, and the
duck-typed EAGLE-3 facts the contract asks about (the capture method, the embedding/head
accessor), found where Python would find them: in the first class of the MRO that defines
the name."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from eagle3lint.engines import Role
from eagle3lint.engines.sglang.contract import SglangContract
from eagle3lint.index.refs import ClassRef, ExternalRef

if TYPE_CHECKING:
    from eagle3lint.index.model import MethodSummary
    from eagle3lint.index.project import ProjectIndex

DRAFT_NAME = re.compile(
    r"(ForCausalLMEagle3?|Eagle3?$|^Eagle3[A-Z]|NextN$|MTP$|MTPHead$|DSpark|DFlash|DraftModel"
    r"|Assistant|Medusa)"
)
"""How SGLang names the draft architectures its EAGLE, MTP, DFlash and DSpark workers load
(`LlamaForCausalLMEagle3`, `DeepseekV3ForCausalLMNextN`, `Qwen3NextForCausalLMMTP`); the
registry does not mark them, the server's speculative options choose them. `Eagle2_5_VL…`, a
vision-language target, does not match."""


@dataclass(frozen=True, slots=True)
class Found:
    """A name the target has: the class of its MRO that defines it, and the method (None for
    a class attribute bound to something else, such as another class's function)."""

    owner: ClassRef
    method: MethodSummary | None

    @property
    def is_stub(self) -> bool:
        return self.method is not None and self.method.is_stub


@dataclass(eq=False)
class SglangTarget:
    """One registered architecture of an SGLang tree."""

    arch: str
    ref: ClassRef
    index: ProjectIndex
    contract: SglangContract
    registered: bool = True
    variant: str | None = None
    pp_aux_relay: bool | None = None
    runner_choices: tuple[str, ...] = ()

    def off_runner_note(self, runners: tuple[str, ...]) -> str:
        return ""  # one model runner: no finding is off its path

    @cached_property
    def mro(self) -> list[ClassRef | ExternalRef]:
        return self.index.mro(self.ref)

    def lookup(self, name: str) -> Found | None:
        """Where attribute `name` of an instance comes from, among the analysed classes (an
        `nn.Module`'s own attributes are parameters and submodules, never these methods)."""
        for entry in self.mro:
            if not isinstance(entry, ClassRef):
                continue
            if name in entry.cls.methods:
                return Found(entry, entry.cls.methods[name])
            if name in entry.cls.attrs:
                return Found(entry, None)
        return None

    @cached_property
    def capture(self) -> Found | None:
        method = self.contract.capture_method
        return self.lookup(method) if method else None

    @cached_property
    def embed_head(self) -> Found | None:
        return next(
            (found for name in self.contract.embed_head if (found := self.lookup(name))), None
        )

    def built(self, attr: str) -> tuple[ClassRef, ClassRef | None] | None:
        """The class of the MRO whose `__init__` sets `self.<attr>`, and the class it builds
        there (None when the value is no call of a class found)."""
        for entry in self.mro:
            if not isinstance(entry, ClassRef):
                continue
            assign = entry.cls.init_assigns.get(attr)
            if assign is None:
                continue
            found = (
                self.index.resolve_dotted(entry.file.module, assign.callee)
                if assign.callee
                else None
            )
            return entry, found if isinstance(found, ClassRef) else None
        return None

    def accessor_parts(self) -> tuple[ClassRef, str, str] | str:
        """Where `get_embed_and_head` goes and what it returns: the class that builds
        `self.lm_head`, and the paths of the embedding and the head; else why they are not
        known (the accessor is then left to a person)."""
        head = self.built("lm_head")
        model = self.built("model")
        if head is None:
            return "its __init__ sets no self.lm_head"
        if model is None or model[1] is None:
            return "its __init__ builds no self.model of a class found"
        inner = SglangTarget(model[1].name, model[1], self.index, self.contract, registered=False)
        if inner.built("embed_tokens") is None:
            return f"{model[1].name}.__init__ sets no self.embed_tokens"
        return head[0], "model.embed_tokens", "lm_head"

    @cached_property
    def role(self) -> Role:
        if self.arch in self.contract.pooling:
            return Role.POOLING
        if self.arch in self.contract.drafts or DRAFT_NAME.search(self.arch):
            return Role.DRAFT
        return Role.TARGET

    def role_note(self) -> str:
        """Why SGLang gives a draft or a pooling model no target verdict."""
        if self.role is Role.DRAFT:
            return (
                "SGLang runs it only as a draft model (a head's name, or `ModelConfig` renames "
                "a draft checkpoint to it); `eagle3lint pair --sglang` checks it against a target"
            )
        return (
            "SGLang serves it as a pooling model (`is_generation_model` lists it, or the loader "
            "builds it only for a checkpoint `ModelConfig` calls non-generative), which runs no "
            "speculative decoding"
        )

    @property
    def claims_eagle3(self) -> bool:
        """It has the capture method: its code means to serve EAGLE-3 (a class without it is
        only not capable)."""
        return self.capture is not None

    @property
    def implements_eagle3(self) -> bool:
        capture = self.capture
        embed_head = not self.contract.embed_head or self.embed_head is not None
        return capture is not None and not capture.is_stub and embed_head

    @cached_property
    def is_module(self) -> bool:
        return any(
            isinstance(e, ExternalRef) and e.text.split(".")[-1] == "Module" for e in self.mro
        )

    def modules(self) -> set[str]:
        return {e.file.module for e in self.mro if isinstance(e, ClassRef)}

    def depends_on(self) -> set[str]:
        """`modules()` and the modules their files import (a base that does not parse still
        decides the verdict)."""
        found = self.modules()
        for module in list(found):
            summary = self.index.summary(module)
            for local in summary.imports if summary else ():
                ref = self.index.imported(summary, local)
                if ref is not None:
                    found.add(ref.module)
                    if ref.name:
                        found.add(f"{ref.module}.{ref.name}")
        return found
