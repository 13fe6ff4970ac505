"""The `eagle3lint` command line: check, fix, rules, explain.

Heavy modules (libcst, the index, the rules) are imported inside the commands so that
`eagle3lint --help` answers at once.
"""

from __future__ import annotations

import dataclasses
import functools
import gc
import inspect
import io
import json
import os
import sys
import traceback
import typing
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from eagle3lint.matrix.formats import MatrixFormat
from eagle3lint.report.terminal import ColorChoice, Terminal

if TYPE_CHECKING:
    from rich.console import Console

    from eagle3lint.engine import CheckOptions
    from eagle3lint.report.model import Report
    from eagle3lint.runcache import Guess

app = typer.Typer(
    name="eagle3lint",
    help="Find (and fix) what keeps a vLLM model from running EAGLE-3, before the weights load.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _show_version(value: bool) -> None:
    if value:
        from eagle3lint import __version__

        typer.echo(f"eagle3lint {__version__}")
        raise typer.Exit(0)


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            "-V",
            help="Print the version and exit.",
            callback=_show_version,
            is_eager=True,
        ),
    ] = False,
) -> None:
    """Find (and fix) what keeps a vLLM model from running EAGLE-3, before the weights load."""


class OutputFormat(StrEnum):
    text = "text"
    full = "full"
    json = "json"
    sarif = "sarif"
    github = "github"


PathsArg = Annotated[
    list[Path] | None,
    typer.Argument(
        help="vLLM checkout or package folder, model files, or folders of out-of-tree model "
        "files. None: the installed vLLM.",
        show_default=False,
    ),
]
ArchOpt = Annotated[
    list[str] | None, typer.Option("--arch", help="Only this registered architecture (repeatable).")
]
VllmOpt = Annotated[
    str | None,
    typer.Option("--vllm", "--vllm-version", help="Check release X.Y.Z's sources from PyPI."),
]
HfConfigOpt = Annotated[
    Path | None, typer.Option("--hf-config", help="The model's config.json (or its folder).")
]
ModelTypeOpt = Annotated[
    str | None, typer.Option("--model-type", help="The target's text model_type.")
]
SelectOpt = Annotated[
    list[str] | None,
    typer.Option("--select", help="Only these codes or prefixes (EAG1,EAG301; repeatable)."),
]
IgnoreOpt = Annotated[
    list[str] | None, typer.Option("--ignore", help="Skip these codes or prefixes.")
]
ExtendSelectOpt = Annotated[
    list[str] | None,
    typer.Option("--extend-select", help="Add these codes or prefixes to the selection."),
]
RequireOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--require",
        help="Architectures that must be EAGLE-3 ready even if their code claims no support "
        "(comma-separated, repeatable; * for all).",
    ),
]
JobsOpt = Annotated[
    int | None, typer.Option("--jobs", "-j", help="Parser processes (default: cores).")
]
RespectGitignoreOpt = Annotated[
    bool,
    typer.Option(
        "--respect-gitignore/--no-respect-gitignore",
        help="Skip files git ignores when walking folders (default).",
    ),
]
NoCacheOpt = Annotated[bool, typer.Option("--no-cache", help="Neither read nor write the cache.")]
ColorOpt = Annotated[
    ColorChoice,
    typer.Option(
        "--color",
        help="Colour the output: auto (a terminal, unless NO_COLOR; FORCE_COLOR "
        "forces it), always, never.",
    ),
]
DebugOpt = Annotated[bool, typer.Option("--debug", help="Show tracebacks of internal errors.")]
FormatOpt = Annotated[OutputFormat, typer.Option("--format", help="Report format.")]
ExitZeroOpt = Annotated[bool, typer.Option("--exit-zero", help="Exit 0 even with errors.")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="Only error findings.")]
VerboseOpt = Annotated[bool, typer.Option("--verbose", "-v", help="Info findings too.")]


BaselineOpt = Annotated[
    Path | None,
    typer.Option("--baseline", help="Do not report the findings recorded in this file."),
]


@dataclass
class RunArgs:
    """The options `check`, `fix`, `pair` and `matrix` share, as given on the command line.

    A command declares the ones it takes with `@takes(...)` and receives them as one value;
    `check_options` turns them, with the repository's configuration, into the engine's."""

    paths: PathsArg = None
    vllm: VllmOpt = None
    arch: ArchOpt = None
    hf_config: HfConfigOpt = None
    model_type: ModelTypeOpt = None
    select: SelectOpt = None
    extend_select: ExtendSelectOpt = None
    ignore: IgnoreOpt = None
    require: RequireOpt = None
    jobs: JobsOpt = None
    no_cache: NoCacheOpt = False
    respect_gitignore: RespectGitignoreOpt = True
    baseline: BaselineOpt = None
    debug: DebugOpt = False

    def check_options(self, progress: bool) -> CheckOptions:
        """The engine's options: these, with `[tool.eagle3lint]` supplying what they leave
        out (selectors and the version checked first: a typo is exit 2, not an empty run)."""
        from eagle3lint.codes import check_selectors
        from eagle3lint.config import config_start, load_config
        from eagle3lint.engine import CheckOptions

        if not self.no_cache:
            from eagle3lint.cachedir import cap_bytes

            cap_bytes()  # a bad EAGLE3LINT_CACHE_MAX_MB is refused now, not after the run
        config = load_config(config_start(list(self.paths or [])))
        version = self.vllm if self.vllm is not None else config.vllm_version
        if version is not None:
            from eagle3lint.sources.download import check_version

            check_version(version)
        for flag, values in (
            ("--select", self.select),
            ("--ignore", self.ignore),
            ("--extend-select", self.extend_select),
        ):
            check_selectors(_codes(values), flag)
        chosen = _codes(self.select) or config.select
        if self.extend_select:
            chosen = [*(chosen or ["EAG"]), *_codes(self.extend_select)]
        return CheckOptions(
            paths=list(self.paths or []),
            vllm_version=version,
            archs=list(self.arch or []),
            hf_config=self.hf_config or config.hf_config,
            model_type=self.model_type,
            select=chosen,
            ignore=_codes(self.ignore) or config.ignore,
            require=_codes(self.require) or config.require,
            exclude=config.exclude,
            exclude_root=config.path.parent if config.path else None,
            respect_gitignore=self.respect_gitignore,
            baseline=self.baseline or config.baseline,
            rule_options=config.rule_options,
            rule_timeout=config.rule_timeout,
            jobs=self.jobs,
            use_cache=not self.no_cache,
            progress=progress,
        )


def takes(*shared: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """A command taking the `RunArgs` options named in `shared` (declared once, there) as its
    first parameter, before its own options."""
    hints = typing.get_type_hints(RunArgs, include_extras=True)
    defaults = {f.name: f.default for f in dataclasses.fields(RunArgs)}

    def decorate(command: Callable[..., None]) -> Callable[..., None]:
        own = list(inspect.signature(command, eval_str=True).parameters.values())[1:]
        params = [
            inspect.Parameter(
                name, inspect.Parameter.KEYWORD_ONLY, default=defaults[name], annotation=hints[name]
            )
            for name in shared
        ] + [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own]

        @functools.wraps(command)
        def run(**values: Any) -> None:
            command(RunArgs(**{name: values.pop(name) for name in shared}), **values)

        run.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        run.__annotations__ = {p.name: p.annotation for p in params}
        return run

    return decorate


RUN_ARGS = tuple(f.name for f in dataclasses.fields(RunArgs))
FIX_ARGS = tuple(
    name for name in RUN_ARGS if name not in ("extend_select", "respect_gitignore", "baseline")
)
"""`fix` takes no baseline: what it repairs is every fixable finding."""


def _codes(values: list[str] | None) -> list[str]:
    """`--select EAG1,EAG301 --select EAG5` → the prefixes, as ruff takes them."""
    return [code.strip() for value in values or () for code in value.split(",") if code.strip()]


def _fail(message: str, debug: bool) -> None:
    if debug:
        traceback.print_exc()
    from eagle3lint.report.escape import printable

    typer.echo(f"eagle3lint: {printable(message)}", err=True)
    raise typer.Exit(2)


def _guard(debug: bool):
    """Turn expected failures into exit 2 with a message, and anything else into one line;
    SIGTERM, like Ctrl-C, is an interruption (`eagle3lint.signals`)."""
    from eagle3lint.errors import DownloadError, UsageError
    from eagle3lint.signals import Terminated, terminate_as_interrupt

    @contextmanager
    def guard():
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

    return guard()


@app.command()
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
) -> None:
    """Report every EAGLE-3 blocker of every architecture (exit 0 none, 1 errors, 2 bad input)."""
    # A progress line only for a person watching: not when piped, not with --quiet.
    interactive = sys.stdout.isatty() and sys.stderr.isatty() and not quiet
    cached = not (interactive or args.no_cache or write_baseline is not None)
    command_line = (args, output_format, statistics, color, exit_zero, quiet, verbose)
    guessed = _guess(args, command_line if cached else None)
    with _guard(args.debug), _collector_paused(), guessed as guess:
        options = args.check_options(progress=sys.stderr.isatty())
        if write_baseline is not None:
            raise typer.Exit(_write_baseline(options, write_baseline))
        view = View(
            output_format, quiet, verbose, exit_zero, statistics, Terminal.of(sys.stdout, color)
        )
        if not cached:
            from eagle3lint.report.progress import FileProgress

            with FileProgress(interactive, Terminal.of(sys.stderr, color)) as progress:
                options.on_file = progress.advance
                output, code = _check(options, view)
        else:
            output, code = _cached_check(options, view, guess)
        sys.stdout.write(output)
        sys.stdout.flush()
        if not args.no_cache:
            _housekeeping()
    raise typer.Exit(code)


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


def _housekeeping() -> None:
    """Keep the cache under its size cap (checked at most once an hour)."""
    from eagle3lint.cachedir import maybe_prune
    from eagle3lint.index.cache import default_cache_dir

    maybe_prune(default_cache_dir())


@dataclass(frozen=True)
class View:
    """How a report is shown; every field changes the bytes of the output."""

    output_format: OutputFormat
    quiet: bool
    verbose: bool
    exit_zero: bool
    statistics: bool
    terminal: Terminal


def _write_baseline(options: CheckOptions, path: Path) -> int:
    """Record every finding the check reports now (none filtered by an old baseline)."""
    from eagle3lint.baseline import write_baseline
    from eagle3lint.engine import run_check

    options.baseline = None
    report = run_check(options).report
    count = write_baseline(path, report)
    from eagle3lint.report.escape import printable

    typer.echo(f"eagle3lint: recorded {count} finding(s) in {printable(str(path))}", err=True)
    for error in report.errors:
        typer.echo(printable(f"{error.path}: {error.code} {error.message}"), err=True)
    return 2 if report.errors else 0


def _check(options: CheckOptions, view: View) -> tuple[str, int]:
    from eagle3lint.engine import run_check

    return _present(run_check(options).report, view)


def _present(report: Report, view: View) -> tuple[str, int]:
    """The output and the exit code of a report, shown as `view` says."""
    return _render(report, view), report.exit_code(view.exit_zero)


def _cached_check(options: CheckOptions, view: View, guess: Guess | None = None) -> tuple[str, int]:
    """`_check`, answered from the whole-run cache when nothing it read has changed."""
    from eagle3lint.runcache import cached_check

    return cached_check(options, asdict(view), lambda report: _present(report, view), guess)


def _render(report: Report, view: View) -> str:
    if view.output_format is OutputFormat.json:
        return json.dumps(report.to_json(), indent=2) + "\n"
    if view.output_format is OutputFormat.sarif:
        from eagle3lint.report.sarif import to_sarif

        return json.dumps(to_sarif(report), indent=2) + "\n"
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
    )
    render_text(report, view.terminal.console(buffer), options)
    return buffer.getvalue()


def _text_console(tty: bool | None = None, piped_width: int | None = None) -> Console:
    """A console writing to a buffer for stdout (a terminal when `tty`, default: when stdout
    is one). Piped output stays plain (no colours) and unwrapped, or `piped_width` wide."""
    tty = sys.stdout.isatty() if tty is None else tty
    terminal = Terminal.of(sys.stdout) if tty else Terminal(color=False, width=piped_width)
    return terminal.console(io.StringIO())


def check_json(options: CheckOptions) -> dict[str, object]:
    """The report `check --format json` prints for `options` (whole-run cache included)."""
    view = View(OutputFormat.json, False, False, True, False, Terminal(color=False, width=None))
    output, _ = _cached_check(options, view) if options.use_cache else _check(options, view)
    return json.loads(output)


@app.command()
@takes("arch", "hf_config", "model_type", "jobs", "no_cache", "debug")
def matrix(
    args: RunArgs,
    paths: Annotated[
        list[Path] | None,
        typer.Argument(help="vLLM trees, one release each.", show_default=False),
    ] = None,
    vllm: Annotated[
        list[str] | None,
        typer.Option(
            "--vllm", help="Release X.Y.Z, range A..B (every final release) or latest; repeatable."
        ),
    ] = None,
    output_format: Annotated[
        MatrixFormat, typer.Option("--format", help="Output format.")
    ] = MatrixFormat.text,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write to this file, not stdout.")
    ] = None,
) -> None:
    """EAGLE-3 readiness of every architecture across vLLM releases (columns) as a table."""
    with _guard(args.debug):
        from eagle3lint.matrix.command import (
            build,
            columns_of,
            command_line,
            render,
            report_failures,
            write_output,
        )

        options = args.check_options(progress=False)
        # A matrix shows full verdicts: every architecture as asked, claimed or not; no repairs.
        options.require = ["*"]
        options.plan_fixes = False
        columns = columns_of(list(paths or []), list(vllm or []))
        command = command_line(paths, vllm, options, output_format, output)
        table = build(columns, options, check_json, sys.stderr.isatty(), command)
        # A file or a pipe gets the table as wide as it needs (up to 200 columns), uncoloured.
        console = lambda: _text_console(tty=False if output else None, piped_width=200)  # noqa: E731
        write_output(render(table, output_format, console), output)
        code = report_failures(table)
    raise typer.Exit(code)


@app.command()
@takes(*FIX_ARGS)
def fix(
    args: RunArgs,
    diff: Annotated[
        bool, typer.Option("--diff", help="Print a unified diff; write nothing.")
    ] = False,
    recover: Annotated[
        bool,
        typer.Option(
            "--recover",
            help="Only undo what an interrupted fix run wrote (fix also does it first).",
        ),
    ] = False,
) -> None:
    """Apply every fixable finding, then check again (exit 0 ready, 1 blockers remain)."""
    with _guard(args.debug):
        from eagle3lint.errors import UsageError
        from eagle3lint.fixer import run_fix

        if diff and recover:
            raise UsageError("--diff writes nothing and --recover writes: give one of them")
        options = args.check_options(progress=sys.stderr.isatty())
        code = run_fix(options, diff=diff, recover=recover)
        if not args.no_cache:
            _housekeeping()
    raise typer.Exit(code)


@app.command()
@takes("paths", "vllm", "select", "ignore", "jobs", "no_cache", "debug")
def pair(
    args: RunArgs,
    target: Annotated[
        Path, typer.Option("--target", help="The target's config.json (or its folder).")
    ] = ...,  # type: ignore[assignment]
    draft: Annotated[
        Path, typer.Option("--draft", help="The drafter's config.json (or its folder).")
    ] = ...,  # type: ignore[assignment]
    draft_weights: Annotated[
        list[Path] | None,
        typer.Option(
            "--draft-weights",
            help="Drafter .safetensors files (headers only; default: those in the --draft folder).",
        ),
    ] = None,
    pp: Annotated[int, typer.Option("--pp", min=1, help="Pipeline-parallel size.")] = 1,
    output_format: FormatOpt = OutputFormat.text,
    exit_zero: ExitZeroOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Check an EAGLE-3 drafter against its target for one release (exit codes as check)."""
    with _guard(args.debug):
        from eagle3lint.commands.pair import run_pair
        from eagle3lint.drafts.draft import DraftPairing

        pairing = DraftPairing.load(draft, list(draft_weights or []), target, pp)
        options = replace(args, hf_config=target).check_options(progress=False)
        view = View(output_format, quiet, verbose, exit_zero, False, Terminal.of(sys.stdout))
        output, code = run_pair(
            options, pairing, output_format.value, lambda report: _render(report, view), exit_zero
        )
        sys.stdout.write(output)
        sys.stdout.flush()
    raise typer.Exit(code)


@app.command()
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


@app.command()
def explain(
    code: Annotated[str, typer.Argument(help="A code, such as EAG101.", show_default=False)],
) -> None:
    """What a code means: what vLLM does, the error it raises, releases, an example, the fix."""
    with _guard(debug=False):
        from eagle3lint.codes import find_code
        from eagle3lint.explain import explanation_markdown

        page = explanation_markdown(find_code(code))
        if sys.stdout.isatty():
            from rich.markdown import Markdown

            Terminal.of(sys.stdout).console(sys.stdout).print(Markdown(page))
        else:
            typer.echo(page, nl=False)


cache_app = typer.Typer(help="The cache folder: what it holds, and emptying it.")
app.add_typer(cache_app, name="cache")


@cache_app.command("info")
def cache_info() -> None:
    """Where the cache is, what it holds and its size cap (EAGLE3LINT_CACHE_MAX_MB)."""
    with _guard(debug=False):
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
    with _guard(debug=False):
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


def main() -> None:
    app()
