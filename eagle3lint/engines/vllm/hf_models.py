"""transformers' model classes behind vLLM's Transformers modeling backend.

The backend (`model_executor/models/transformers/`) builds its decoder as
`AutoModel.from_config(config)`: transformers' base model of the checkpoint's model_type
(`MODEL_MAPPING_NAMES` in `models/auto/modeling_auto.py`), such as `GPTNeoXModel`. What the EAGLE
proposer takes from that decoder (its input embedding, `embed_tokens` or `embedding`) is then
transformers' code, read here from its sources as vLLM would import them (never imported):
`models/<type>/modeling_<type>.py`, generated self-contained by transformers' modular tooling.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from packaging.version import InvalidVersion, Version

from eagle3lint.config_classes import transformers_library
from eagle3lint.engines.vllm.contract.model import BackendCapture
from eagle3lint.index.libraries import UNKNOWN
from eagle3lint.index.model import UNKNOWN_BUILDER
from eagle3lint.index.outside import outside_text
from eagle3lint.index.project import ProjectIndex
from eagle3lint.index.refs import ClassRef, ExternalRef

AUTO_MODELING = Path("transformers", "models", "auto", "modeling_auto.py")
_MAPPING = re.compile(r"^(\w+_MAPPING_NAMES)\s*=\s*OrderedDict\(\s*\[(.*?)^\s*\]\s*\)", re.M | re.S)
_PAIR = re.compile(r"""\(\s*["'](\w+)["']\s*,\s*["'](\w+)["']\s*\)""")
_SELF_ASSIGN = re.compile(r"^\s+self\.(\w+)\s*(?::[^=\n]*)?=(?!=)", re.M)
_CLASS = "^class {name}\\(([^)]*)\\):\n"
_NEXT_TOP_LEVEL = re.compile(r"^\S", re.M)


@dataclass(frozen=True, slots=True)
class HfDecoder:
    """transformers' base model class the backend builds for a model_type."""

    model_type: str
    name: str
    path: str
    attributes: frozenset[str]
    """What its `__init__` (or any method of the class) assigns to `self`."""
    open_by: str | None
    """Why an attribute it does not assign may still exist (a base other than its
    `PreTrainedModel`); None when the class itself says it all."""


@dataclass(frozen=True, slots=True)
class AutoMappings:
    """transformers' auto mappings: the base model of each model_type, and the model_type of
    every class any mapping names (`GPTNeoXForCausalLM` → `gpt_neox`)."""

    version: str | None
    root: Path
    base_models: dict[str, str]
    model_types: dict[str, str]
    causal_lms: dict[str, str]
    """The causal LM class of each model_type (`MODEL_FOR_CAUSAL_LM_MAPPING_NAMES`)."""


def auto_mappings(index: ProjectIndex) -> AutoMappings | str:
    """The mappings of the transformers the analysed vLLM imports, or why there are none."""
    return index.remembered("hf-auto-mappings", lambda: _read_mappings(index))


def _read_mappings(index: ProjectIndex) -> AutoMappings | str:
    library = transformers_library(index)
    if library is None:
        return UNKNOWN
    text = outside_text(index, library.folder / AUTO_MODELING)
    if text is None:
        return f"transformers {library.version or ''} has no readable {AUTO_MODELING}"
    base_models: dict[str, str] = {}
    model_types: dict[str, str] = {}
    causal_lms: dict[str, str] = {}
    for mapping in _MAPPING.finditer(text):
        pairs = _PAIR.findall(mapping.group(2))
        if mapping.group(1) == "MODEL_MAPPING_NAMES":
            base_models.update(pairs)
        elif mapping.group(1) == "MODEL_FOR_CAUSAL_LM_MAPPING_NAMES":
            causal_lms.update(pairs)
        for model_type, name in pairs:
            model_types.setdefault(name, model_type)
    return AutoMappings(library.version, library.folder, base_models, model_types, causal_lms)


def sub_config_architecture(index: ProjectIndex, sub_config: object) -> str | None:
    """The architecture vLLM builds for a sub-config of a checkpoint's config.json
    (`VllmConfig.with_hf_config`): the first it names, else transformers' causal LM of its
    model_type; None when neither is known."""
    if not isinstance(sub_config, dict):
        return None
    named = sub_config.get("architectures")
    if isinstance(named, list) and named and isinstance(named[0], str):
        return named[0]
    mappings = auto_mappings(index)
    model_type = sub_config.get("model_type")
    if isinstance(mappings, str) or not isinstance(model_type, str):
        return None
    return mappings.causal_lms.get(model_type)


def hf_decoder(index: ProjectIndex, model_type: str) -> HfDecoder | str:
    """The base model class `AutoModel.from_config` builds for `model_type`, or why it is not
    known here."""
    mappings = auto_mappings(index)
    if isinstance(mappings, str):
        return mappings
    name = mappings.base_models.get(model_type)
    if name is None:
        return f"transformers {mappings.version or ''} has no base model for {model_type!r}"
    path = mappings.root / "transformers" / "models" / model_type / f"modeling_{model_type}.py"
    text = outside_text(index, path)
    match = re.search(_CLASS.format(name=re.escape(name)), text or "", re.M)
    if text is None or match is None:
        return f"{name} was not found in transformers' models/{model_type}/"
    following = _NEXT_TOP_LEVEL.search(text, match.end())
    body = text[match.end() : following.start() if following else len(text)]
    bases = [b.strip() for b in match.group(1).split(",") if b.strip()]
    own = [b for b in bases if not b.endswith("PreTrainedModel") and b != "GenerationMixin"]
    return HfDecoder(
        model_type,
        name,
        str(path),
        frozenset(_SELF_ASSIGN.findall(body)),
        f"it also inherits {', '.join(own)}" if own else None,
    )


CAPTURE_DECORATORS = frozenset({"capture_outputs", "check_model_inputs"})
"""transformers' decorators that collect what `_can_record_outputs` names during a forward
(`check_model_inputs` before 5.0)."""
RECORDABLE = "_can_record_outputs"
PRETRAINED = "PreTrainedModel"
"""transformers' base of every model, whose `_can_record_outputs` is None."""


@dataclass(frozen=True, slots=True)
class HfCapture:
    """What the backend's `set_aux_hidden_state_layers` meets in transformers and in the decoder
    class; None in a field means the sources do not say."""

    decoder: HfDecoder
    version: str | None
    refusal: str | None
    """Why transformers cannot capture at all: too old for the backend's check, or without the
    module it imports `OutputRecorder` from."""
    records: bool | None
    """`_can_record_outputs` is a dict in the class's MRO. transformers' registry keeps what
    the class held at `__init__`: the very dict the backend then adds its recorders to, or None
    (the backend's fresh `{}` is then never read)."""
    captures: bool | None
    """Its forward is wrapped by `capture_outputs` (`check_model_inputs`), which collects what
    `_can_record_outputs` names."""
    holder: str
    """The class a finding about the two above names (its forward's, or the registry's)."""
    layer_list: str | None
    """The `self.<name>` ModuleList of `num_hidden_layers` layers the backend names its
    recorders from; None when none is (see `unmatched`) or it cannot be told."""
    layer_classes: tuple[str, ...]
    """What builds that list's elements (`MAP[]`: a class per layer from a map)."""
    unmatched: str | None
    """Why no layer list has `num_hidden_layers` elements, where the sources say so."""

    @property
    def mixed_layers(self) -> bool:
        """The recorded layer list may hold several classes: more than one builds it, or one
        is picked per layer from a map; an element built by something unread decides nothing."""
        built = self.layer_classes
        if self.layer_list is None or UNKNOWN_BUILDER in built:
            return False
        return len(built) > 1 or any(b.endswith("[]") for b in built)


def hf_capture(index: ProjectIndex, decoder: HfDecoder, capture: BackendCapture) -> HfCapture:
    """What transformers and `decoder`'s class give the backend's capture path."""
    library = transformers_library(index)
    version = library.version if library else None
    refusal = None
    if capture.min_transformers and version and _older(version, capture.min_transformers):
        refusal = (capture.version_error or "transformers>={required} is required").format(
            required=capture.min_transformers, installed=version
        )
    elif library is not None and capture.recorder_module:
        module = library.folder.joinpath(*capture.recorder_module.split("."))
        if not (module.with_suffix(".py").is_file() or (module / "__init__.py").is_file()):
            refusal = f"No module named '{capture.recorder_module}' (transformers {version})"
    model_module = f"transformers.models.{decoder.model_type}.modeling_{decoder.model_type}"
    ref = index.class_ref(model_module, decoder.name)
    classes = index.mro(ref) if ref is not None else []
    records, registry = _records(classes)
    captures, forward = _captures(classes)
    holder = (forward if captures is False else registry) or forward or decoder.name
    layer_list, layer_classes, unmatched = _layer_list(index, decoder, classes, capture)
    return HfCapture(
        decoder, version, refusal, records, captures, holder, layer_list, layer_classes, unmatched
    )


def _records(classes: list[ClassRef | ExternalRef]) -> tuple[bool | None, str | None]:
    """Whether `_can_record_outputs` is a dict, and the class that says so."""
    for entry in classes:
        if not isinstance(entry, ClassRef):
            # transformers' own default, which the backend's comment quotes.
            return (False, None) if entry.text.endswith(PRETRAINED) else (None, None)
        attr = entry.cls.attrs.get(RECORDABLE)
        if attr is not None:
            return (True if attr.keys is not None else False if attr.value == "None" else None), (
                entry.name
            )
    return None, None


def _captures(classes: list[ClassRef | ExternalRef]) -> tuple[bool | None, str | None]:
    """Whether the forward the class runs carries a capture decorator, and whose it is."""
    for entry in classes:
        if not isinstance(entry, ClassRef):
            return None, None
        method = entry.cls.methods.get("forward")
        if method is not None:
            names = {d.rpartition(".")[2] for d in method.decorators}
            return bool(names & CAPTURE_DECORATORS), entry.name
    return None, None


def _layer_list(
    index: ProjectIndex,
    decoder: HfDecoder,
    classes: list[ClassRef | ExternalRef],
    capture: BackendCapture,
) -> tuple[str | None, tuple[str, ...], str | None]:
    """The ModuleList the backend takes the layer names from: one built over
    `range(config.<count>)` where `<count>` is `num_hidden_layers` or the config's alias of it.
    A config that derives `num_hidden_layers` from another count (LongcatFlash: twice
    `num_layers`) has no list that long."""
    owner = next(
        (e for e in classes if isinstance(e, ClassRef) and "__init__" in e.cls.methods), None
    )
    wanted = capture.layer_count
    if owner is None or wanted is None:
        return None, (), None
    aliased, derived = _config_count(index, decoder.model_type, wanted)
    counted = {}
    for name, listed in owner.cls.module_lists.items():
        base, _, attr = (listed.count or "").rpartition(".")
        if base in ("config", "self.config") and attr.isidentifier():
            counted[name] = (attr, tuple(listed.classes))
    for name, (attr, built) in counted.items():
        # An alias's target is not read (only the map's keys are): any count it maps is it.
        if attr == wanted or aliased:
            return name, built, None
    if derived is not None and counted:
        name, (attr, _) = next(iter(counted.items()))
        return (
            None,
            (),
            (
                f"{decoder.name}.{name} has config.{attr} layers, and {derived} derives "
                f"{wanted} from other counts"
            ),
        )
    return None, (), None


def _config_count(index: ProjectIndex, model_type: str, wanted: str) -> tuple[bool, str | None]:
    """What the model_type's config classes say of `wanted`: whether `attribute_map` maps it
    to another attribute, and the class that computes it in a property, if one does."""
    module = f"transformers.models.{model_type}.configuration_{model_type}"
    summary = index.summary(module)
    aliased, derived = False, None
    for name in list(summary.classes) if summary else ():
        ref = index.class_ref(module, name)
        if ref is None:
            continue
        cls = ref.cls
        mapped = cls.attrs.get("attribute_map")
        aliased = aliased or (mapped is not None and wanted in (mapped.keys or ()))
        if wanted in cls.methods:
            derived = cls.name
    return aliased, derived


def _older(version: str, required: str) -> bool:
    try:
        return Version(version) < Version(required)
    except InvalidVersion:
        return False
