"""Where things are in a vLLM tree: names the wing needs to recognise one and read its
registry, apart from the modules that read them (importing those loads the index)."""

REGISTRY = "vllm.model_executor.models.registry"
"""The module holding the model registry: which architectures there are to check."""
MODELS_PACKAGE = "vllm.model_executor.models"
"""The package registry entries name their modules in (and model files import relatively from)."""
