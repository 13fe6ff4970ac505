"""vLLM's wing: its tree layout, releases, registry, contract and spellings (see `wing`)."""
