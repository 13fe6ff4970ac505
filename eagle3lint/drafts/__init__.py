"""The drafter library: a draft config as a vLLM release translates it, its checkpoint's
tensor headers, and what a draft/target pair amounts to in one release."""
