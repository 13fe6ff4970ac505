"""vLLM's spellings, once: the EAGLE-3 contract's names and the model-code vocabulary.

A leaf (it imports nothing): the model-code recognisers (`shapes`, `index`) and the codemods
that read and write vLLM-style model code take their names from here.
"""

from __future__ import annotations

PROTOCOL = "SupportsEagle3"
"""The protocol an EAGLE-3 target class declares (`interfaces.SupportsEagle3`)."""
MIXIN = "EagleModelMixin"
"""The decoder mixin of vLLM 0.18+ that owns the aux list attribute and the tap helper."""
AUX_LAYERS_ATTR = "aux_hidden_state_layers"
"""The decoder attribute holding the layer ids whose input is collected."""
AUX_LIST = "aux_hidden_states"
"""The local list a forward collects aux hidden states into (as vLLM names it)."""
TAP_HELPER = "_maybe_add_hidden_state"
"""`EagleModelMixin`'s tap method: `(aux, layer_idx, hidden_states, residual) -> aux`."""
RESIDUAL = "residual"
"""The residual stream's name in vLLM's decoder loops (None entering the first layer)."""
SETTER = "set_aux_hidden_state_layers"
"""The protocol method the runner calls with the requested layer ids."""
KNOWN_GETTERS = (
    "get_eagle3_aux_hidden_state_layers",
    "get_eagle3_default_aux_hidden_state_layers",
)
"""Getter names vLLM's runners have called (≤ 0.17, ≥ 0.18): a method under the name the
analysed release does not call is an override nobody reads."""
DECODER_ATTR = "model"
"""The attribute a `*ForCausalLM` class builds its decoder (the layer loop's owner) in."""
AUTO_MODEL_BUILDER = "AutoModel.from_config"
"""How vLLM's Transformers backend builds `self.model`: transformers' base model of the
checkpoint's model_type (directly, or returned by a helper method)."""
LANGUAGE_MODEL_ATTR = "language_model"
"""The attribute a multimodal wrapper builds its language model (a `*ForCausalLM`) in."""
INTERFACES_MODULE = "vllm.model_executor.models.interfaces"
"""The module the protocols and `EagleModelMixin` are imported from (absolutely, outside the
models package)."""
INTERFACES_RELATIVE = ".interfaces"
"""The same module as files of the models package import it."""
PP_RELAY_FLAG = "supports_aux_hidden_states_over_pp"
"""The decoder attribute that lets vLLM relay its aux hidden states across pipeline-parallel
ranks (declared by `EagleModelMixin` from 0.30, set to True by each decoder that does it)."""
PP_RELAY_METHODS = ("collect_remote_aux_hidden_states", "pack_local_aux_hidden_states")
"""`EagleModelMixin`'s relay (0.30 on): a decoder's forward takes the aux states earlier ranks
sent out of its `IntermediateTensors`, and puts its own into the ones it sends on."""
