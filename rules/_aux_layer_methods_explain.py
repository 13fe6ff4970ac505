"""The long forms of the aux-layer-methods codes (`eagle3lint explain EAG20x`)."""

from __future__ import annotations

from eagle3lint.api import Explanation

UNPACK_ERROR = (
    "```text\nValueError: too many values to unpack (expected 2)\n```\nraised by the runner's "
    "`hidden_states, aux_hidden_states = model_output` on the first forward, because the "
    "decoder, never told which layers to tap, returns a bare tensor."
)

EAG201 = Explanation(
    runtime="With aux hidden states requested, the runner takes the layer ids from the draft "
    "config's `eagle_aux_hidden_state_layer_ids`, else from the model's "
    "`get_eagle3_aux_hidden_state_layers()`, and hands them to `set_aux_hidden_state_layers()`. "
    "Up to 0.17.0 the protocol's bodies are `...`: inheriting SupportsEagle3 passes the check, "
    "but the getter returns None and the setter does nothing.",
    error=UNPACK_ERROR + " In 0.10.0, which has no protocol, a missing method raises "
    "`AttributeError`.",
    releases="0.10.0-0.17.0. From 0.18.0 the protocol has working default bodies (see EAG204).",
    example="""\
class MyModelForCausalLM(nn.Module, SupportsPP, SupportsEagle3):
    def __init__(self, *, vllm_config, prefix=""):
        super().__init__()
        self.model = MyModel(vllm_config=vllm_config, prefix=prefix)
""",
    fix="""\
class MyModelForCausalLM(nn.Module, SupportsPP, SupportsEagle3):
    ...

    def set_aux_hidden_state_layers(self, layers: tuple[int, ...]) -> None:
        self.model.aux_hidden_state_layers = layers

    def get_eagle3_aux_hidden_state_layers(self) -> tuple[int, ...]:
        num_layers = len(self.model.layers)
        return (2, num_layers // 2, num_layers - 3)
""",
)

EAG202 = Explanation(
    runtime="The runner calls the aux-layer methods on the model it serves, the multimodal "
    "wrapper. Up to 0.17.0 the wrapper inherits only the protocol's `...` bodies unless it "
    "passes the calls on to its language model.",
    error=UNPACK_ERROR,
    releases="0.11.0-0.17.0. From 0.18.0 the protocol defaults reach the language model "
    "themselves (through `get_language_model()`).",
    example="""\
class MyVLForConditionalGeneration(nn.Module, SupportsMultiModal, SupportsEagle3):
    def __init__(self, *, vllm_config, prefix=""):
        ...
        self.language_model = MyModelForCausalLM(...)
""",
    fix="""\
class MyVLForConditionalGeneration(nn.Module, SupportsMultiModal, SupportsEagle3):
    ...

    def set_aux_hidden_state_layers(self, layers: tuple[int, ...]) -> None:
        self.language_model.set_aux_hidden_state_layers(layers)

    def get_eagle3_aux_hidden_state_layers(self) -> tuple[int, ...]:
        return self.language_model.get_eagle3_aux_hidden_state_layers()
""",
)

EAG203 = Explanation(
    runtime="The runner asks the model for its default aux layers under one name: "
    "`get_eagle3_aux_hidden_state_layers()` up to 0.17.0, "
    "`get_eagle3_default_aux_hidden_state_layers()` from 0.18.0. A method under the other name "
    "is never called.",
    error="None: the model's layer choice is ignored silently. From 0.18.0 the protocol default "
    "`(2, num_layers // 2, num_layers - 3)` applies instead (or fails as in EAG204); up to 0.17.0 "
    "the protocol stub returns None and nothing is tapped (EAG201). A getter that only passes "
    "the call on (`return self.language_model.<same name>()`), or returns the same tuple as the "
    "getter vLLM calls instead, loses nothing: that finding is an info note (`--verbose`).",
    releases="0.18.0 and later for `get_eagle3_aux_hidden_state_layers`; 0.11.0-0.17.0 for "
    "`get_eagle3_default_aux_hidden_state_layers`.",
    example="""\
# vLLM 0.18.0 or later
class MyModelForCausalLM(nn.Module, SupportsEagle3):
    def get_eagle3_aux_hidden_state_layers(self) -> tuple[int, ...]:
        return (1, 23, 44)
""",
    fix="""\
class MyModelForCausalLM(nn.Module, SupportsEagle3):
    def get_eagle3_default_aux_hidden_state_layers(self) -> tuple[int, ...]:
        return (1, 23, 44)

    # Callers of the old name (a wrapper delegating to this model) keep working.
    get_eagle3_aux_hidden_state_layers = get_eagle3_default_aux_hidden_state_layers
""",
)

EAG204 = Explanation(
    runtime="From 0.18.0 the protocol's methods have default bodies. The default "
    "`set_aux_hidden_state_layers()` takes the decoder (`self.model`, or the language model's "
    "`.model`; from 0.28.0 the language model itself when it has no `.model`) and asserts that "
    "it is an `EagleModelMixin`; the default getter counts the decoder's `.layers`.",
    error="```text\nAssertionError: Model instance must inherit from EagleModelMixin to set "
    "auxiliary layers\n```\nor `AssertionError: Model instance must have 'layers' attribute to "
    "get number of layers` (`'model' attribute`, before 0.28.0, for a language model that is "
    "the decoder itself), after the weight load.",
    releases="0.18.0 and later.",
    example="""\
class MyModel(nn.Module):  # the decoder
    ...


class MyModelForCausalLM(nn.Module, SupportsPP, SupportsEagle3):
    # relies on the protocol's default set_aux_hidden_state_layers()
    ...
""",
    fix="""\
from vllm.model_executor.models.interfaces import EagleModelMixin, SupportsEagle3


class MyModel(nn.Module, EagleModelMixin):
    # tapping with self._maybe_add_hidden_state(...) in forward (EAG301)
    ...
""",
)
