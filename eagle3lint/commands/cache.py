"""`eagle3lint cache info` and `cache clean`: the cache folder, what it holds, emptying it."""

from __future__ import annotations

import typer

from eagle3lint.commands.guard import guard

cache_app = typer.Typer(help="The cache folder: what it holds, and emptying it.")


@cache_app.command("info")
def cache_info() -> None:
    """Where the cache is, what it holds and its size cap (EAGLE3LINT_CACHE_MAX_MB)."""
    with guard(debug=False):
        from eagle3lint.cachedir import cap_bytes, human, info
        from eagle3lint.index.cache import default_cache_dir
        from eagle3lint.report.escape import printable

        root = default_cache_dir()
        cap = cap_bytes()
        rows, unreadable = info(root)
        typer.echo(f"cache: {printable(str(root))}")
        for kind, count, size in rows:
            typer.echo(f"  {kind:<10} {count:>6} entries  {human(size):>9}")
        total = sum(size for _, _, size in rows)
        typer.echo(
            f"  total      {human(total):>24}  (cap {human(cap)}, least recently used "
            "entries are removed past it)"
        )
        _cache_failures(unreadable)


@cache_app.command("clean")
def cache_clean() -> None:
    """Remove every cached release, summary and run result."""
    with guard(debug=False):
        from eagle3lint.cachedir import clean, human
        from eagle3lint.index.cache import default_cache_dir
        from eagle3lint.report.escape import printable

        root = default_cache_dir()
        freed, failed = clean(root)
        typer.echo(f"removed {human(freed)} from {printable(str(root))}")
        _cache_failures(failed)


def _cache_failures(failures: list[str]) -> None:
    """Say what `cache info` or `cache clean` could not do (the first few), and exit 2."""
    if not failures:
        return
    from eagle3lint.report.escape import printable

    for failure in failures[:5]:
        typer.echo(f"eagle3lint: {printable(failure)}", err=True)
    if len(failures) > 5:
        typer.echo(f"eagle3lint: and {len(failures) - 5} more", err=True)
    raise typer.Exit(2)
