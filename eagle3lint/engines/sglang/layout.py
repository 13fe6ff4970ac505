"""Where things are in an SGLang tree (`sglang/`), as the wing and its contract reader need
them. Paths are relative to the package folder."""

MODELS_PACKAGE = "sglang.srt.models"
"""The package whose top-level modules SGLang's registry imports, reading each `EntryClass`."""
REGISTRY = "sglang.srt.models.registry"
VERSION_MODULES = ("sglang._version", "sglang.version")
"""Where a tree states its version (`__version__`, written at build time)."""

RUNNER_FOLDER = "srt/model_executor"
"""Where the model runner calls the target's capture method (and may gate it)."""
SPECULATIVE_FOLDER = "srt/speculative"
"""Where the draft workers bind the target's embedding and head."""
MODEL_CONFIG = "srt/configs/model_config.py"
"""Which architectures are pooling models, and which a draft checkpoint is run as."""
MODEL_LOADER = "srt/model_loader/utils.py"
"""Where the loader swaps a checkpoint's architecture for another when a model-config flag
holds (0.5.23: EmbeddingGemma, saved as `Gemma3TextModel`, becomes `EmbeddingGemmaModel`)."""

CAPTURE_METHOD = "set_eagle3_layers_to_capture"
"""The method SGLang calls on an EAGLE-3 target (every release read so far; the reader looks
for it by this name and records where it is called)."""
EMBED_HEAD_PREFIX = "get_embed_and_head"
"""The accessors the draft worker reads the target's embedding and head through start so
(`get_embed_and_head`, from 0.5.22 also `get_embed_and_head_for_draft`)."""
