"""eagle3lint: find and fix what keeps a vLLM model from running EAGLE-3, before weights load."""

__version__ = "0.6.0"
