"""EAG42x transformers-backend-capture: the Transformers modeling backend must be able to record
the aux hidden states in transformers' model.

vLLM's Transformers backend taps no layer loop of its own: its `set_aux_hidden_state_layers`
registers transformers' `OutputRecorder`s on the layers of the decoder's ModuleList of
`num_hidden_layers` layers, and its forward returns what transformers collected. Whether that
works is decided by the transformers installed and by transformers' model class, which are
read here from the transformers beside the analysed vLLM (as EAG412/EAG413 read its embedding).
"""

from __future__ import annotations

from collections.abc import Iterator

from eagle3lint.api import (
    Code,
    Example,
    Expected,
    Explanation,
    Finding,
    Rule,
    RuleContext,
    Severity,
    Target,
)

_RUNTIME = (
    "The backend (`model_executor/models/transformers/base.py`) builds its decoder as "
    "`AutoModel.from_config(config)`. At load it names the layers of the first ModuleList "
    "whose length is the text config's `num_hidden_layers` (and keeps the class of its last "
    "layer as `_target_class`); `set_aux_hidden_state_layers` then checks the transformers "
    "version, imports `OutputRecorder`, and for each id adds `OutputRecorder(_target_class, "
    "layer_name=<layer id - 1>)` to the model's `_can_record_outputs`, asking for the input of "
    "that layer. transformers' `capture_outputs` decorator on the model's forward installs the "
    "hooks and returns what they collected after the hidden states; the backend's forward "
    "returns `(hidden_states, aux_hidden_states)` only when something was collected."
)

_EAG421 = Explanation(
    runtime=_RUNTIME,
    error="```text\nImportError: Transformers modeling backend requires transformers>=5.0.0 for "
    "Eagle3 support, but got 4.57.6\n```\n(0.16.0 with the transformers its requirements allow, "
    "`<5`; 5.2.0 from 0.18.0), raised from `set_aux_hidden_state_layers` after the weights "
    "are loaded.",
    releases="0.16.0-0.22.0 check a version; every release imports `OutputRecorder` from a "
    "module of transformers 5 (`transformers.utils.output_capturing` from 0.18.0).",
    example="eagle3lint check .venv/lib/python3.12/site-packages/vllm --arch OlmoForCausalLM\n",
    fix="pip install 'transformers>=5.2'  # where the vLLM release allows it\n",
)

_EAG422 = Explanation(
    runtime=_RUNTIME,
    error="None at load: the recorders are never read, the backend's forward returns the hidden "
    "states alone, and the model runner's `hidden_states, aux_hidden_states = model_output` "
    "unpacks a tensor (a ValueError, or wrong states when there are two tokens). Seen with tiny "
    "BLOOM, CodeGen, Llava, Gemma 3, Mistral 3, Aria and VibeVoice-ASR models on vLLM 0.33.0 "
    "(`tests/runtime/test_backend_capture_runtime.py`).",
    releases="Every release with the backend's EAGLE-3 support; transformers 5 keeps each "
    "class's `_can_record_outputs` in a registry at `__init__`, so a class that left it at "
    "None never sees the dict the backend sets afterwards.",
    example="""\
class CodeGenModel(CodeGenPreTrainedModel):  # no _can_record_outputs
    def forward(self, input_ids=None, **kwargs):  # no @capture_outputs
        ...
""",
    fix="""\
class LlamaPreTrainedModel(PreTrainedModel):
    _can_record_outputs = {"hidden_states": LlamaDecoderLayer, ...}

class LlamaModel(LlamaPreTrainedModel):
    @capture_outputs
    def forward(self, input_ids=None, **kwargs):
        ...
""",
)

_EAG423 = Explanation(
    runtime=_RUNTIME,
    error="```text\nKeyError: 1\n```\nfrom `self._layer_names[layer - 1]` in "
    "`set_aux_hidden_state_layers`: no ModuleList has `num_hidden_layers` layers, so no layer "
    "has a name.",
    releases="Every release with the backend's EAGLE-3 support.",
    example="""\
class LongcatFlashConfig(PreTrainedConfig):
    @property
    def num_hidden_layers(self):
        return 2 * self.num_layers


class LongcatFlashModel(LongcatFlashPreTrainedModel):
    def __init__(self, config):
        self.layers = nn.ModuleList([... for i in range(config.num_layers)])
""",
    fix="Serve the architecture with vLLM's own implementation, which taps its layer loop.\n",
)

_EAG424 = Explanation(
    runtime=_RUNTIME,
    error="```text\nIndexError: tuple index out of range\n```\nfrom the backend's forward "
    "(`x[0]` of each recorded output) at the first step, when a requested layer is not of the "
    "last layer's class: its recorder matches no module and records an empty tuple. Seen with "
    "a tiny Jamba on vLLM 0.33.0 (`tests/runtime/test_backend_capture_runtime.py`).",
    releases="Every release with the backend's EAGLE-3 support.",
    example="""\
layer_class = ALL_DECODER_LAYER_TYPES[config.layers_block_type[i]]
decoder_layers.append(layer_class(config, layer_idx=i))
""",
    fix="Request only layer ids whose layer (id - 1) is of the last layer's class.\n",
)

_BACKEND_TARGET = """
from vllm.model_executor.models.transformers import TransformersForCausalLM


class {name}(TransformersForCausalLM):
    pass
"""


class TransformersBackendCapture(Rule):
    slug = "transformers-backend-capture"
    codes = (
        Code(
            "EAG421",
            "transformers-cannot-capture",
            "The transformers installed with this vLLM cannot record aux hidden states for "
            "the Transformers backend (too old for its version check, or without the module "
            "it imports `OutputRecorder` from).",
            Severity.ERROR,
            explain=_EAG421,
        ),
        Code(
            "EAG422",
            "transformers-decoder-records-nothing",
            "transformers' model class behind the Transformers backend has no "
            "`_can_record_outputs` dict or no `capture_outputs` on its forward: the backend's "
            "recorders collect nothing.",
            Severity.ERROR,
            explain=_EAG422,
        ),
        Code(
            "EAG423",
            "transformers-layer-list-unmatched",
            "transformers' model class behind the Transformers backend has no ModuleList of "
            "`num_hidden_layers` layers, so the backend names no layer to record.",
            Severity.ERROR,
            explain=_EAG423,
        ),
        Code(
            "EAG424",
            "transformers-mixed-layer-classes",
            "transformers' model class behind the Transformers backend builds its layers from "
            "several classes: the backend records only layers of the last one's class.",
            Severity.WARNING,
            explain=_EAG424,
        ),
    )

    valid = (
        Example(
            era="e3_mixin",
            model_type="recorded_lm",
            source=_BACKEND_TARGET.format(name="RecordedLmForCausalLM"),
        ),
    )
    invalid = (
        Example(
            era="e3_mixin",
            model_type="unrecorded_lm",
            expect=(
                Expected(
                    "EAG422",
                    line=4,
                    message="UnrecordedLmModel.forward is not wrapped by capture_outputs",
                ),
            ),
            source=_BACKEND_TARGET.format(name="UnrecordedLmForCausalLM"),
        ),
        Example(
            era="e3_mixin",
            model_type="doubled_lm",
            expect=(Expected("EAG423", line=4, message="DoubledLmConfig derives"),),
            source=_BACKEND_TARGET.format(name="DoubledLmForCausalLM"),
        ),
        Example(
            era="e3_mixin",
            model_type="hybrid_lm",
            expect=(Expected("EAG424", line=4, message="ALL_DECODER_LAYER_TYPES"),),
            source=_BACKEND_TARGET.format(name="HybridLmForCausalLM"),
        ),
    )

    def check(self, target: Target, ctx: RuleContext) -> Iterator[Finding]:
        found = target.backend_capture(ctx.model_type)
        capture = ctx.contract.backend_capture
        # Not the backend's, or transformers' class unknown here (EAG413 says so).
        if found is None or isinstance(found, str) or capture is None:
            return
        path, cls = ctx.path(target.ref), target.ref.cls
        setter = f"set_aux_hidden_state_layers ({capture.path}:{capture.line})"
        decoder = found.decoder
        runs = (
            f"{target.ref.name} runs on the Transformers backend with transformers' "
            f"{decoder.name} (model_type {decoder.model_type!r})"
        )
        if found.refusal is not None:
            yield self.report(
                "EAG421",
                f"{target.ref.name} runs on the Transformers backend, whose {setter} raises "
                f"ImportError: {found.refusal}.",
                path,
                cls.line,
                cls.column,
                hint=f"Install transformers>={capture.min_transformers or '5'} with this vLLM "
                "where its requirements allow, or serve the model without EAGLE-3.",
            )
            return
        if found.captures is False or found.records is False:
            why = (
                f"{found.holder}.forward is not wrapped by capture_outputs"
                if found.captures is False
                else f"{found.holder} leaves _can_record_outputs at None (transformers' "
                "registry keeps that None, not the dict the backend fills)"
            )
            yield self.report(
                "EAG422",
                f"{runs}: {why}, so the recorders its {setter} adds collect nothing and the "
                "backend's forward returns the hidden states alone where the model runner "
                "unpacks (hidden_states, aux_hidden_states).",
                path,
                cls.line,
                cls.column,
                hint=f"transformers' {decoder.name} must declare _can_record_outputs and wrap "
                "its forward with @capture_outputs, as LlamaModel does; vLLM's own "
                "implementation of the architecture, where there is one, taps its layer loop.",
            )
        if found.unmatched is not None:
            yield self.report(
                "EAG423",
                f"{runs}: {found.unmatched}, so the backend names no layer for its recorders "
                f"and its {setter} raises KeyError for every layer id.",
                path,
                cls.line,
                cls.column,
                hint="Serve the architecture with vLLM's own implementation, where there is one.",
            )
        builders = found.layer_classes
        if found.mixed_layers:
            yield self.report(
                "EAG424",
                f"{runs}: {decoder.name}.{found.layer_list} is built from "
                f"{', '.join(builders)}, and the backend records only layers of the last "
                f"layer's class (one _target_class in its {setter}): a requested layer of "
                "another class records an empty tuple, and the backend's forward fails on it "
                "(IndexError: tuple index out of range).",
                path,
                cls.line,
                cls.column,
                hint="Request only layer ids whose layer (id - 1) is of the last layer's class.",
            )


RULES = [TransformersBackendCapture]
