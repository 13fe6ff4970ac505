"""One reading of each vLLM code shape the EAGLE-3 contract is about.

Each recogniser takes libcst nodes and returns a small frozen description: what it found and
whether (and how, or why not) `fix` can rewrite it. The extractor stores the descriptions in
file summaries for `check`; the codemods rewrite from the same descriptions, so the two never
disagree on what a shape is. Nothing here imports the index or the codemods.
"""
