"""`eagle3lint server`: the language server (`eagle3lint.server`), over stdin and stdout."""

from __future__ import annotations

import typer

INSTALL = "pip install 'eagle3lint[server]'"
LIBRARIES = ("pygls", "lsprotocol")
"""The server's own dependencies, the `server` extra: absent from a plain install."""


def server() -> None:
    """Speak the Language Server Protocol on stdio: diagnostics, hover and fixes in an editor."""
    try:
        from eagle3lint.server.protocol import serve
    except ImportError as exc:
        # Only the libraries' absence (or a pygls before 2.1) is named; anything else is a bug.
        if (exc.name or "").partition(".")[0] not in LIBRARIES:
            raise
        typer.echo(
            f"eagle3lint: the language server needs pygls 2.1 or later ({exc.name} cannot be "
            f"imported): {INSTALL}",
            err=True,
        )
        raise typer.Exit(2) from None
    serve()
