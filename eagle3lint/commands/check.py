"""`eagle3lint check`: its options, the run (whole-run cache, progress line, baseline) and the
report's formats."""

from __future__ import annotations

import gc
import io
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from eagle3lint.commands.guard import guard, housekeeping
from eagle3lint.commands.options import (
    RUN_ARGS,
    ColorOpt,
    ExitZeroOpt,
    OutputFormat,
    QuietOpt,
    RunArgs,
    VerboseOpt,
    takes,
)
from eagle3lint.commands.output import OutputFileOpt, write_output
from eagle3lint.report.terminal import ColorChoice, Terminal
from eagle3lint.sources.files import overlaid

if TYPE_CHECKING:
    from eagle3lint.engine import CheckOptions
    from eagle3lint.report.invocation import Invocation
    from eagle3lint.report.model import Report
    from eagle3lint.runcache import Guess


@takes(*RUN_ARGS)
def check(
    args: RunArgs,
    output_format: Annotated[
        OutputFormat,
        typer.Option(
            "--output-format",
            "--format",
            help="text (one line per finding), full, json, sarif or github.",
        ),
    ] = OutputFormat.text,
    statistics: Annotated[
        bool, typer.Option("--statistics", help="Only the count of findings per code.")
    ] = False,
    color: ColorOpt = ColorChoice.auto,
    exit_zero: ExitZeroOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
    write_baseline: Annotated[
        Path | None,
        typer.Option("--write-baseline", help="Record the current findings in this file."),
    ] = None,
    diff_base: Annotated[
        str | None,
        typer.Option(
            "--diff-base",
            metavar="REF",
            help="Check the Python files (under PATH) committed since the merge base of REF "
            "and HEAD, judged as in the whole tree.",
        ),
    ] = None,
    output_file: OutputFileOpt = None,
) -> None:
    """Report every EAGLE-3 blocker of every architecture (exit 0 none, 1 errors, 2 bad input)."""
    given = args
    committed: dict[Path, bytes] = {}
    if diff_base is not None:
        args, committed = _changed_files(args, diff_base)
    # A progress line only for a person watching: not when piped, not with --quiet.
    interactive = sys.stdout.isatty() and sys.stderr.isatty() and not quiet
    cached = not (interactive or args.no_cache or write_baseline is not None)
    # A file gets no colour unless asked for, so its report is not a terminal's (nor cached as one).
    to_file = output_file is not None
    command_line = (args, output_format, statistics, color, exit_zero, quiet, verbose, to_file)
    guessed = _guess(args, command_line if cached else None)
    # The files changed are judged as committed, whatever the working tree holds.
    with guard(args.debug), _collector_paused(), guessed as guess, overlaid(committed):
        options = args.check_options(progress=sys.stderr.isatty())
        options.reuse_verdicts = True  # the command reads only the report
        if write_baseline is not None:
            raise typer.Exit(_write_baseline(options, write_baseline))
        # Only where the "Next:" block is shown: other views stay keyed (and cached) as before.
        shows_next = output_format in (OutputFormat.text, OutputFormat.full) and not (
            quiet or statistics
        )
        view = View(
            output_format,
            quiet,
            verbose,
            exit_zero,
            statistics,
            Terminal.of(io.StringIO() if to_file else sys.stdout, color),
            _invocation(given, args, options, diff_base) if shows_next else None,
        )
        if not cached:
            from eagle3lint.report.progress import FileProgress

            with FileProgress(interactive, Terminal.of(sys.stderr, color)) as progress:
                options.on_file = progress  # counts files, and learns the total (`expect`)
                output, code = _check(options, view)
        else:
            output, code = _cached_check(options, view, guess)
        write_output(output, output_file)
        if not args.no_cache:
            housekeeping()
    raise typer.Exit(code)


def _changed_files(args: RunArgs, ref: str) -> tuple[RunArgs, dict[Path, bytes]]:
    """`args` with the files changed since `ref` as its PATHs, and their contents at HEAD;
    exit 0 when there are none."""
    from eagle3lint.sources.changed import changed_since

    with guard(args.debug):
        changed = changed_since(ref, list(args.paths or []))
    if not changed:
        typer.echo(f"eagle3lint: no Python file changed since {ref}", err=True)
        raise typer.Exit(0)
    return replace(args, paths=list(changed)), changed


@contextmanager
def _collector_paused() -> Iterator[None]:
    """No cyclic garbage collection while a check runs. A check builds some 10^5 small objects
    (summaries, then findings) that live until it ends; the collector walked them again and again
    and found nothing to free, as they hold no reference cycles: 0.2 s of the 1.2 s a check of
    vLLM 0.33.0 takes after an edit. Reference counting still frees everything else (peak RSS of
    a cold `--jobs 1` check of vLLM 0.16.0, parsing in-process: 96 MB paused, 92 MB not)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@contextmanager
def _guess(args: RunArgs, command_line: tuple[object, ...] | None) -> Iterator[Guess | None]:
    """The run cache entry this command line used last, its changed files parsing already
    (`runcache.Guess`): started before the options are read. None for `command_line` None."""
    if command_line is None:
        yield None
        return
    from eagle3lint.runcache import Guess

    guess = Guess.start(repr(command_line), args.jobs)
    try:
        yield guess
    finally:
        guess.close()


@dataclass(frozen=True)
class View:
    """How a report is shown; every field changes the bytes of the output."""

    output_format: OutputFormat
    quiet: bool
    verbose: bool
    exit_zero: bool
    statistics: bool
    terminal: Terminal
    invocation: Invocation | None = None
    """The command line, which the text report's "Next:" block repeats: in the whole-run
    cache's key with the rest of the view."""


_FLAGS = (
    ("vllm", "--vllm"),
    ("sglang", "--sglang"),
    ("arch", "--arch"),
    ("hf_config", "--hf-config"),
    ("model_type", "--model-type"),
    ("select", "--select"),
    ("extend_select", "--extend-select"),
    ("ignore", "--ignore"),
    ("require", "--require"),
    ("baseline", "--baseline"),
)
"""The `RunArgs` that decide what a check finds, and their flags (the rest only change how it
runs)."""


def _invocation(
    given: RunArgs, args: RunArgs, options: CheckOptions, diff_base: str | None
) -> Invocation:
    """The commands that check again, or fix, what `check` finds for `given` (the command
    line; `args` its PATHs changed since `diff_base` when given)."""
    from eagle3lint.commands.fix import FIX_ARGS
    from eagle3lint.report.invocation import Arguments, Invocation, relative

    again = _options(given, RUN_ARGS) + (("--diff-base", diff_base) if diff_base else ())
    if args.extend_select:
        # fix takes no --extend-select: the selection it made, spelled out.
        args = replace(args, select=[",".join(options.select or ())], extend_select=None)
    # The changed files are absolute: relative to here, as a check run from here shows them.
    paths = [relative(str(p)) if diff_base is not None else str(p) for p in args.paths or ()]
    return Invocation(
        Arguments(again, tuple(str(p) for p in given.paths or ())),
        Arguments(_options(args, FIX_ARGS), tuple(paths)),
        options.release if not options.paths else None,
    )


def _options(args: RunArgs, takes: tuple[str, ...]) -> tuple[str, ...]:
    """The options of `args` a command taking the `RunArgs` named in `takes` is given."""
    words: list[str] = []
    for name, flag in _FLAGS:
        value = getattr(args, name) if name in takes else None
        for one in value if isinstance(value, list) else [] if value is None else [value]:
            words += [flag, str(one)]
    if "respect_gitignore" in takes and not args.respect_gitignore:
        words.append("--no-respect-gitignore")
    return tuple(words)


def _write_baseline(options: CheckOptions, path: Path) -> int:
    """Record every finding the check reports now (none filtered by an old baseline), keeping
    the entries of the file already at `path` that this run could not see."""
    from eagle3lint.baseline import Baseline, write_baseline
    from eagle3lint.engine import baseline_scope, excluder_for, run_check
    from eagle3lint.report.escape import printable

    previous = Baseline.load(path) if path.exists() else None
    in_use = options.baseline
    options.baseline = None
    run = run_check(options)
    report = run.report
    if report.errors:
        # Findings may be missing: recording now would drop entries that still hold.
        for error in report.errors:
            typer.echo(printable(f"{error.path}: {error.code} {error.message}"), err=True)
        typer.echo(f"eagle3lint: {printable(str(path))} not written", err=True)
        return 2
    reduced = [t.arch for t in report.targets if not t.required and not t.claims_eagle3]
    scope = baseline_scope(options, run.targets, excluder_for(options), reduced)
    count, dropped = write_baseline(path, report, scope, previous)
    pruned = f" (dropped {dropped} that no longer occur)" if dropped else ""
    typer.echo(
        f"eagle3lint: recorded {count} finding(s) in {printable(str(path))}{pruned}", err=True
    )
    if in_use is None or in_use.resolve() != path.resolve():
        # The hook reads no baseline until the configuration names it.
        typer.echo(
            "eagle3lint: to use it, add to pyproject.toml (or pass --baseline):\n\n"
            f'[tool.eagle3lint]\nbaseline = "{printable(path.as_posix())}"\n',
            err=True,
        )
    return 0


def _check(options: CheckOptions, view: View) -> tuple[str, int]:
    from eagle3lint.engine import run_check

    return _present(run_check(options).report, view)


def _present(report: Report, view: View) -> tuple[str, int]:
    """The output and the exit code of a report, shown as `view` says."""
    return render(report, view), report.exit_code(view.exit_zero)


def _cached_check(options: CheckOptions, view: View, guess: Guess | None = None) -> tuple[str, int]:
    """`_check`, answered from the whole-run cache when nothing it read has changed."""
    from eagle3lint.runcache import cached_check

    return cached_check(options, asdict(view), lambda report: _present(report, view), guess)


def render(report: Report, view: View) -> str:
    """The report as `view` shows it (`pair` shows its reports the same way)."""
    if view.output_format is OutputFormat.json:
        return json.dumps(report.to_json(), indent=2) + "\n"
    if view.output_format is OutputFormat.sarif:
        from eagle3lint.report.sarif import to_sarif

        return json.dumps(to_sarif(report, errors_only=view.quiet), indent=2) + "\n"
    if view.output_format is OutputFormat.github:
        from eagle3lint.report.github import github_annotations

        return "".join(
            f"{line}\n"
            for line in github_annotations(report, quiet=view.quiet, verbose=view.verbose)
        )
    from eagle3lint.report.text import TextOptions, render_text

    buffer = io.StringIO()
    options = TextOptions(
        full=view.output_format is OutputFormat.full,
        verbose=view.verbose,
        quiet=view.quiet,
        statistics=view.statistics,
        invocation=view.invocation,
    )
    render_text(report, view.terminal.console(buffer), options)
    return buffer.getvalue()


def check_json(options: CheckOptions) -> dict[str, object]:
    """The report `check --format json` prints for `options` (whole-run cache included)."""
    view = View(OutputFormat.json, False, False, True, False, Terminal(color=False, width=None))
    output, _ = _cached_check(options, view) if options.use_cache else _check(options, view)
    return json.loads(output)
