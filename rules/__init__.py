"""Built-in rule plugins, installed as `eagle3lint.rules` and registered as entry points."""
