"""The steps of one check run, one job per module; `eagle3lint.engine` takes them in order."""
