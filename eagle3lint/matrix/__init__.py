"""`eagle3lint matrix`: EAGLE-3 readiness of every architecture across vLLM releases.

`releases` turns the command line into columns, `runner` checks each release (in parallel, from
the same engine and whole-run cache as `check --format json`), `verdicts` reads a target of
that report, `model` builds the table, and the `render_*` modules print it.
"""
