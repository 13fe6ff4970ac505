"""The commands of `eagle3lint`, one module each: its options, its run and its output.

`cli.py` wires them into one command line. A command module imports only light modules at
the top (typer, the option types): `eagle3lint --help` must answer at once; the analysis is
imported when the command runs."""
