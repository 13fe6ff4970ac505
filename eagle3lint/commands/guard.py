"""What every command does around its run: expected failures to exit 2 with one line, and the
cache kept under its cap afterwards."""

from __future__ import annotations

import contextlib
import os
import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager

import typer


def _fail(message: str, debug: bool) -> None:
    if debug:
        traceback.print_exc()
    from eagle3lint.report.escape import printable

    typer.echo(f"eagle3lint: {printable(message)}", err=True)
    raise typer.Exit(2)


def guard(debug: bool) -> contextlib.AbstractContextManager[None]:
    """Turn expected failures into exit 2 with a message, and anything else into one line;
    SIGTERM, like Ctrl-C, is an interruption (`eagle3lint.signals`)."""
    from eagle3lint.errors import DownloadError, UsageError
    from eagle3lint.signals import Terminated, terminate_as_interrupt

    @contextmanager
    def guarded() -> Iterator[None]:
        try:
            with terminate_as_interrupt():
                yield
        except (typer.Exit, typer.Abort, SystemExit):
            raise
        except BrokenPipeError:
            # The reader went away (`| head`): nothing more can be said to it, quietly.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise typer.Exit(2) from None
        except (UsageError, DownloadError) as exc:
            _fail(str(exc), debug)
        except KeyboardInterrupt as exc:
            _fail(str(exc) if isinstance(exc, Terminated) else "interrupted", debug)
        except Exception as exc:
            # One line, whatever the exception's message holds (libcst's span several).
            detail = next(iter(str(exc).splitlines()), "")
            _fail(
                f"internal error {type(exc).__name__}: {detail} "
                "(run with --debug for the traceback)",
                debug,
            )

    return guarded()


def housekeeping() -> None:
    """Keep the cache under its size cap (checked at most once an hour)."""
    from eagle3lint.cachedir import default_cache_dir, maybe_prune

    maybe_prune(default_cache_dir())
