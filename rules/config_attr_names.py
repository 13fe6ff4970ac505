"""EAG4xx config-attr-names: the image-token attribute the EAGLE proposer reads must exist."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from eagle3lint.findings import Finding, Repair, Severity
from eagle3lint.index.project import ClassRef
from eagle3lint.rule import Code, Example, Rule, RuleContext
from eagle3lint.targets import Target

CONFIGS_PACKAGE = "vllm.transformers_utils.configs"
IMAGE_TOKEN_ATTR = re.compile(r"^(image|media|img|vision)\w*(token|placeholder)\w*(id|index)$")


def json_has(config: Mapping[str, Any], dotted: str) -> bool:
    node: Any = config
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return False
        node = node[part]
    return True


def config_classes(target: Target) -> list[ClassRef]:
    """Config classes (from vLLM's transformers_utils/configs) the model's file imports."""
    index = target.index
    found: dict[str, ClassRef] = {}
    for local, ref in target.ref.file.imports.items():
        if not ref.module.startswith(CONFIGS_PACKAGE) or not ref.name:
            continue
        resolved = index.resolve(target.ref.file.module, local)
        if isinstance(resolved, ClassRef) and resolved.name.endswith("Config"):
            found[resolved.qualname] = resolved
    return list(found.values())


def config_attributes(target: Target, ref: ClassRef) -> set[str]:
    names: set[str] = set()
    for entry in target.index.mro(ref):
        if isinstance(entry, ClassRef):
            names.update(entry.cls.init_assigns)
            names.update(entry.cls.attrs)
    return names


class ConfigAttrNames(Rule):
    slug = "config-attr-names"
    codes = (
        Code(
            "EAG401",
            "image-token-attr-missing",
            "The config lacks the image-token attribute the EAGLE proposer reads.",
            Severity.ERROR,
            fixable=True,
        ),
        Code(
            "EAG402",
            "image-token-attr-unverified",
            "The config attribute the proposer reads could not be verified statically.",
            Severity.INFO,
        ),
        Code(
            "EAG403",
            "image-token-attr-mismatch",
            "The model and the proposer read the image token from different attributes.",
            Severity.WARNING,
        ),
    )

    valid = (
        Example(
            era="e2_stub",
            source="""
from torch import nn
from vllm.transformers_utils.configs.good_vl import GoodVLConfig
from .interfaces import SupportsMultiModal
class GoodVLForConditionalGeneration(nn.Module, SupportsMultiModal):
    pass
""",
        ),
    )
    invalid = (
        Example(
            era="e2_stub",
            expect=("EAG401",),
            source="""
from torch import nn
from vllm.transformers_utils.configs.kimi_like import KimiLikeConfig
from .interfaces import SupportsMultiModal
class MediaVLForConditionalGeneration(nn.Module, SupportsMultiModal):
    pass
""",
        ),
    )

    def check(self, target: Target, ctx: RuleContext) -> Iterator[Finding]:
        mapping = ctx.contract.image_tokens
        if mapping is None or not target.is_multimodal:
            return
        name = target.ref.name
        attribute = mapping.attribute_for(name)
        if attribute is None:
            return
        path = ctx.path(target.ref)
        cls = target.ref.cls
        model_reads = {a for a in target.ref.file.config_reads if IMAGE_TOKEN_ATTR.match(a)}
        head = attribute.split(".")[0]
        where = f"{mapping.path}:{mapping.line}"
        consequence = (
            f"the EAGLE proposer ({where}) reads target_model.config.{attribute} for "
            f"{name} and raises AttributeError after the weights are loaded"
        )
        available: set[str] | None = None
        source = ""
        hf_config = ctx.config_for(target)
        if hf_config is not None:
            if json_has(hf_config, attribute):
                return
            available = {k for k in hf_config if isinstance(k, str)}
            source = f"{ctx.hf_config_path or 'the given config.json'}"
        else:
            classes = config_classes(target)
            if classes:
                available = set().union(*(config_attributes(target, c) for c in classes))
                if head in available:
                    return
                source = ", ".join(c.name for c in classes)
        if available is not None:
            alternative = sorted(a for a in available & model_reads if a != attribute)
            alternative = alternative or sorted(
                a for a in available if IMAGE_TOKEN_ATTR.match(a) and a != attribute
            )
            hint = (
                f"The config calls it {alternative[0]}: add a branch for {name} to the proposer."
                if alternative
                else "Add the attribute to the config or a branch to the proposer."
            )
            yield self.report(
                "EAG401",
                f"{source} has no {attribute}: {consequence}.",
                path,
                cls.line,
                cls.column,
                hint=hint,
                repair=Repair.make(
                    "add-proposer-branch", mapping.path, cls=name, attribute=alternative[0]
                )
                if alternative
                else None,
            )
            return
        if attribute in target.ref.file.config_reads:
            return
        if model_reads and mapping.names(name):
            yield self.report(
                "EAG403",
                f"{name} reads {', '.join(sorted(model_reads))} from its config while the "
                f"proposer reads {attribute}: check the config still has {attribute}.",
                path,
                cls.line,
                cls.column,
            )
            return
        yield self.report(
            "EAG402",
            f"Cannot verify that {name}'s config has {attribute} (its config class is not in "
            f"this tree); otherwise {consequence}. Pass --hf-config to check.",
            path,
            cls.line,
            cls.column,
        )


RULES = [ConfigAttrNames]
