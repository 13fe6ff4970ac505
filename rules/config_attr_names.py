"""EAG4xx config-attr-names: the image-token attribute the EAGLE proposer reads must exist."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from eagle3lint.api import (
    BASE_CONFIGS,
    DECIDE_WITH_CONFIG,
    AddProposerBranch,
    ClassRef,
    Code,
    ConfigFacts,
    Example,
    Expected,
    Explanation,
    ExternalRef,
    Finding,
    Rule,
    RuleContext,
    Severity,
    Target,
    Unverified,
)

TRANSFORMERS = "transformers"
CONFIGS_PACKAGE = "vllm.transformers_utils.configs"
IMAGE_TOKEN_ATTR = re.compile(r"^(image|media|img|vision)\w*(token|placeholder)\w*(id|index)$")


def json_has(config: Mapping[str, Any], dotted: str) -> bool:
    node: Any = config
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return False
        node = node[part]
    return True


def config_classes(target: Target) -> list[ClassRef | ExternalRef]:
    """Config classes the model's file imports, from vLLM's transformers_utils/configs or from
    transformers."""
    found: dict[str, ClassRef | ExternalRef] = {}
    for local, ref in target.ref.file.imports.items():
        package = ref.module.startswith(CONFIGS_PACKAGE) or ref.module.split(".")[0] == TRANSFORMERS
        if not package or not ref.name:
            continue
        resolved = target.imported(local)
        if resolved is None:
            continue
        name = class_name(resolved)
        if name.endswith("Config") and name not in BASE_CONFIGS:
            found[resolved.qualname if isinstance(resolved, ClassRef) else resolved.text] = resolved
    return list(found.values())


def class_name(ref: ClassRef | ExternalRef) -> str:
    return ref.name if isinstance(ref, ClassRef) else ref.text.rsplit(".", 1)[-1]


SUB_CONFIG = re.compile(
    r"(Vision|Visual|ViT|Audio|Speech|Encoder|Projector|Text|Thinker)\w*Config$"
)
"""Names of the configs of a model's towers, beside the model's own config."""


def model_config(target: Target, contract_configs: frozenset[str]) -> ClassRef | ExternalRef | str:
    """The config class the model's `config` is, as its code says: the annotation of what its
    own `__init__` stores in `self.config` (or of its `config`), else what its file passes to
    `get_hf_config(X)` (vLLM checks the config is one), else what an inherited `__init__`
    says (a base's annotation is less specific: Alpamayo2Super's file names its own config,
    Qwen3-VL's `__init__` the base class), else, among the config classes its file imports,
    the one the release's config registry maps a model_type to; else why that cannot be decided
    (a class named after the model is not enough: MuseGlimmer's checkpoints come with its text
    config alone as well)."""
    own, *bases = [e for e in target.mro if isinstance(e, ClassRef)]
    for names, where in (
        (own.cls.config_types, own),
        (target.ref.file.hf_config_types, own),
        *((base.cls.config_types, base) for base in bases),
    ):
        declared = _configs(target, names, where)
        if declared:
            return declared[0]
    imported = config_classes(target)
    main = [c for c in imported if class_name(c) in contract_configs]
    if not contract_configs:
        # No registry to ask (0.10): vLLM's own configs that are not a tower's.
        main = [c for c in imported if isinstance(c, ClassRef) and not SUB_CONFIG.search(c.name)]
    if len(main) == 1:
        return main[0]
    names = ", ".join(class_name(c) for c in imported)
    if not imported:
        return "its code names no config class"
    if not main:
        return f"its code does not say which config class ({names}) its config is"
    return f"its file imports several model configs ({names})"


def _configs(
    target: Target, names: list[str], where: ClassRef | None = None
) -> list[ClassRef | ExternalRef]:
    found = [target.imported(name, where) for name in names]
    return [
        c
        for c in found
        if c is not None and class_name(c).endswith("Config") and class_name(c) not in BASE_CONFIGS
    ]


_PROPOSER_RUNTIME = (
    "When the target is multimodal, the EAGLE proposer's `load_model` (in "
    "`v1/spec_decode/eagle.py`, from 0.20.0 `v1/spec_decode/llm_base_proposer.py`) copies the "
    "image token id from the target's config to the drafter's. A few classes, matched by exact "
    "class name, have a branch of their own: `image_token_id` (Qwen2.5-VL, Qwen3-VL, ...), "
    "`vision_config.image_token_id` (Pixtral), `media_placeholder_token_id` (Kimi-K2.5 from "
    "0.18.0). Every other class is read as `config.image_token_index`. Only model runner V1's "
    "proposer does this: V2 (`v1/worker/gpu/spec_decode/`) reads no image token, so where V2 "
    "runs the target by default (some architectures from 0.22, all from 0.30, alone in 0.34) "
    'the finding is a warning for the setups that still run V1 (`runners: ["v1"]`).'
)

_EAG401 = Explanation(
    runtime=_PROPOSER_RUNTIME,
    error="```text\nAttributeError: 'KimiK25Config' object has no attribute 'image_token_index'"
    "\n```\n(naming the target's config class), after the target's weights are loaded.",
    releases="0.10.0 and later; the branches differ per release. Kimi-K2.5 fails before 0.18.0.",
    example="""\
# The config names the token media_placeholder_token_id; the proposer has no branch for
# KimiK25ForConditionalGeneration and reads config.image_token_index.
class KimiK25Config(PretrainedConfig):
    def __init__(self, media_placeholder_token_id: int = 163605, **kwargs): ...
""",
    fix="""\
# In the proposer's load_model, a branch for the class, as vLLM 0.18.0 added:
elif self.get_model_name(target_model) == "KimiK25ForConditionalGeneration":
    self.model.config.image_token_index = target_model.config.media_placeholder_token_id
""",
)

_EAG402 = Explanation(
    runtime=_PROPOSER_RUNTIME + " Whether the checkpoint's config has the attribute is read from "
    "the model's config class (vLLM's, or transformers' own sources when transformers is "
    "installed beside vLLM or for this Python; never imported): what it declares through its "
    "MRO exists. When that class cannot be found or read, or it declares another attribute but "
    "may supply this one otherwise (a `__getattr__`/`__getattribute__`, a base not read), only "
    "the checkpoint's config.json decides: the target is not called ready (`eagle3_ready: null`, "
    "`unverified` in JSON) until `--hf-config` is given. Where the class declares the token "
    "under another name, `fix` makes the proposer read that one.",
    error="The `AttributeError` of EAG401 if the config lacks the attribute.",
    releases="0.10.0 and later.",
    example="eagle3lint check /path/to/vllm\n",
    fix="eagle3lint check /path/to/vllm --hf-config path/to/checkpoint/config.json\n",
    language="shell",
)

_EAG403 = Explanation(
    runtime=_PROPOSER_RUNTIME + " The model file itself may read the token from another "
    "attribute, a sign that the config no longer has the one the proposer reads. With no config "
    "class to read, only the checkpoint's config.json decides: the target is unverified "
    "(`eagle3_ready: null`) until `--hf-config` is given.",
    error="The `AttributeError` of EAG401 if the config has only the attribute the model reads.",
    releases="Kimi-K2.5 from 0.32.0: kimi_k25.py reads `config.image_token_id` while the "
    "proposer reads `media_placeholder_token_id`, which depends on the transformers config.",
    example="""\
# model file
self.media_placeholder = self.config.image_token_id
# proposer
self.model.config.image_token_index = target_model.config.media_placeholder_token_id
""",
    fix="""\
# Read the same attribute in both places (or check the config.json with --hf-config):
self.model.config.image_token_index = target_model.config.image_token_id
""",
)


class ConfigAttrNames(Rule):
    slug = "config-attr-names"
    codes = (
        Code(
            "EAG401",
            "image-token-attr-missing",
            "The config lacks the image-token attribute the EAGLE proposer reads.",
            Severity.ERROR,
            fixable=True,
            explain=_EAG401,
        ),
        Code(
            "EAG402",
            "image-token-attr-unverified",
            "The config attribute the proposer reads could not be verified statically.",
            Severity.INFO,
            fixable=True,
            explain=_EAG402,
        ),
        Code(
            "EAG403",
            "image-token-attr-mismatch",
            "The model and the proposer read the image token from different attributes.",
            Severity.WARNING,
            explain=_EAG403,
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
            expect=(Expected("EAG401", line=4, message="KimiLikeConfig has no image_token_index"),),
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
        runners = ctx.contract.image_token_runners
        consequence = (
            f"the EAGLE proposer ({where}) reads target_model.config.{attribute} for "
            f"{name} and raises AttributeError after the weights are loaded"
        )
        hf_config = ctx.config_for(target)
        main = model_config(target, ctx.contract.model_configs)
        facts = target.config_facts(main) if not isinstance(main, str) else main
        consumed = facts.consumed if isinstance(facts, ConfigFacts) else {}
        # A config.json key becomes an attribute of the PretrainedConfig built from it, unless
        # an `__init__` parameter of that name takes it and stores it elsewhere or not at all.
        if hf_config is not None and json_has(hf_config, attribute) and head not in consumed:
            return
        available: set[str] | None = None
        source = ""
        open_by: str | None = None
        if isinstance(facts, ConfigFacts):
            if head in facts.declared:
                return
            available, source, open_by = set(facts.declared), facts.name, facts.open_by
        if hf_config is not None:
            # The checkpoint's own config decides what the class leaves open.
            keys = {k for k in hf_config if isinstance(k, str) and k not in consumed}
            available, open_by = (available or set()) | keys, None
            config_path = ctx.hf_config_path or "the given config.json"
            source = f"{source} and {config_path}" if source else config_path
        alternative: list[str] = []
        if available is not None:
            alternative = sorted(a for a in available & model_reads if a != attribute)
            alternative = alternative or sorted(
                a for a in available if IMAGE_TOKEN_ATTR.match(a) and a != attribute
            )
        # A class a branch names already is not moved to another branch: no repair then.
        repair = (
            AddProposerBranch(mapping.path, cls=name, attribute=alternative[0])
            if alternative and mapping.refusal is None and not mapping.names(name)
            else None
        )
        no_repair = ""
        if repair is None:
            no_repair = mapping.refusal or (
                f"the proposer's branch for {name} exists already: change what it reads by hand"
                if alternative
                else "the config declares no other attribute known to hold the image token id"
            )
        if available is not None and open_by is None:
            hint = "Add the attribute to the config or a branch to the proposer."
            if alternative:
                hint = (
                    f"The config calls it {alternative[0]}: make the proposer's branch for {name} "
                    "read it."
                    if mapping.names(name)
                    else f"The config calls it {alternative[0]}: add a branch for {name} to the "
                    "proposer."
                )
            taken = (
                f" ({consumed[head]}.__init__ takes {head} as a parameter and does not store it "
                "under that name, so the config.json key sets no attribute)"
                if head in consumed and hf_config is not None and head in hf_config
                else ""
            )
            yield self.report(
                "EAG401",
                f"{source} {'have' if ' and ' in source else 'has'} no {attribute}{taken}: "
                f"{consequence}.",
                path,
                cls.line,
                cls.column,
                runners=runners,
                hint=hint,
                repair=repair,
                fix_refused=no_repair,
            )
            return
        what = f"target_model.config.{attribute}, read by the EAGLE proposer ({where})"
        if available is not None:
            why = f"{source} does not declare {head}, yet may have it: {open_by}"
            hint = (
                f"{source} declares {alternative[0]}: `eagle3lint fix` makes the proposer read it."
                if repair is not None
                else "Pass --hf-config with the checkpoint's config.json to decide."
            )
            yield self.report(
                "EAG402",
                f"Cannot verify that {name}'s config has {attribute} ({why}); otherwise "
                f"{consequence}. Pass --hf-config to check.",
                path,
                cls.line,
                cls.column,
                runners=runners,
                hint=hint,
                repair=repair,
                fix_refused=no_repair,
                unverified=Unverified(what, why, DECIDE_WITH_CONFIG),
            )
            return
        # No class was read: why not.
        if isinstance(main, str):
            why = main
        else:
            why = f"its config class {class_name(main)} could not be read: {facts}"
        if model_reads and mapping.names(name) and attribute not in model_reads:
            yield self.report(
                "EAG403",
                f"{name} reads {', '.join(sorted(model_reads))} from its config while the "
                f"proposer reads {attribute}: check the config still has {attribute}.",
                path,
                cls.line,
                cls.column,
                runners=runners,
                unverified=Unverified(what, f"the model reads another attribute; {why}"),
            )
            return
        yield self.report(
            "EAG402",
            f"Cannot verify that {name}'s config has {attribute} ({why}); otherwise "
            f"{consequence}. Pass --hf-config to check.",
            path,
            cls.line,
            cls.column,
            runners=runners,
            fix_refused="no config class was read, so no attribute is known to point the "
            "proposer at",
            unverified=Unverified(what, why, DECIDE_WITH_CONFIG),
        )


RULES = [ConfigAttrNames]
