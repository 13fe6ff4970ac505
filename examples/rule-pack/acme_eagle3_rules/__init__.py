"""ACME's house rules for EAGLE-3 targets, as an eagle3lint rule pack."""
