"""`eagle3lint rules`: the table of every rule's codes, built-in and from plugins."""

from __future__ import annotations

import sys

import typer

from eagle3lint.report.terminal import Terminal


def rules() -> None:
    """List the rules: code, name, what it checks, fixable, plugin (exit 2: a plugin refused)."""
    from rich.table import Table

    from eagle3lint.codes import all_codes
    from eagle3lint.report.escape import printable, rich_text
    from eagle3lint.rule import load_plugins

    table = Table("code", "rule", "name", "checks", "fixable", "plugin")
    for entry in all_codes():
        code = entry.code
        table.add_row(
            *map(rich_text, (code.code, entry.rule, code.name, code.summary)),
            "yes" if code.fixable else "",
            rich_text(entry.plugin),
        )
    Terminal.of(sys.stdout).console(sys.stdout).print(table)
    broken = load_plugins()[1]
    for message in broken:
        typer.echo(f"eagle3lint: EAG903 {printable(message)}", err=True)
    if broken:
        raise typer.Exit(2)
