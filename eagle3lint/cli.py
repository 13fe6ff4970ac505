"""The `eagle3lint` command line: check, fix, rules, explain.

Heavy modules (libcst, the index, the rules) are imported inside the commands so that
`eagle3lint --help` answers at once.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import sys
import traceback
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from eagle3lint.matrix.formats import MatrixFormat

if TYPE_CHECKING:
    from rich.console import Console

    from eagle3lint.engine import CheckOptions
    from eagle3lint.report.model import Report

app = typer.Typer(
    name="eagle3lint",
    help="Find (and fix) what keeps a vLLM model from running EAGLE-3, before the weights load.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


class OutputFormat(StrEnum):
    text = "text"
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
JobsOpt = Annotated[
    int | None, typer.Option("--jobs", "-j", help="Parser processes (default: cores).")
]
NoCacheOpt = Annotated[bool, typer.Option("--no-cache", help="Neither read nor write the cache.")]
DebugOpt = Annotated[bool, typer.Option("--debug", help="Show tracebacks of internal errors.")]
FormatOpt = Annotated[OutputFormat, typer.Option("--format", help="Report format.")]
ExitZeroOpt = Annotated[bool, typer.Option("--exit-zero", help="Exit 0 even with errors.")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="Only error findings.")]
VerboseOpt = Annotated[bool, typer.Option("--verbose", "-v", help="Info findings too.")]


def _options(
    paths: list[Path] | None,
    vllm: str | None,
    arch: list[str] | None,
    hf_config: Path | None,
    model_type: str | None,
    select: list[str] | None,
    ignore: list[str] | None,
    jobs: int | None,
    no_cache: bool,
    progress: bool,
) -> CheckOptions:
    from eagle3lint.config import load_config
    from eagle3lint.engine import CheckOptions
    from eagle3lint.sources.download import check_version

    # The repository's [tool.eagle3lint] supplies what the command line leaves out.
    config = load_config()
    version = vllm if vllm is not None else config.vllm_version
    if version is not None:
        check_version(version)
    return CheckOptions(
        paths=list(paths or []),
        vllm_version=version,
        archs=list(arch or []),
        hf_config=hf_config or config.hf_config,
        model_type=model_type,
        select=_codes(select) or config.select,
        ignore=_codes(ignore) or config.ignore,
        exclude=config.exclude,
        rule_options=config.rule_options,
        rule_timeout=config.rule_timeout,
        jobs=jobs,
        use_cache=not no_cache,
        progress=progress,
    )


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
    """Turn expected failures into exit 2 with a message, and anything else into one line."""
    from contextlib import contextmanager

    from eagle3lint.sources.discovery import UsageError
    from eagle3lint.sources.download import DownloadError

    @contextmanager
    def guard():
        try:
            yield
        except (typer.Exit, typer.Abort, SystemExit):
            raise
        except BrokenPipeError:
            # The reader went away (`| head`): nothing more can be said to it, quietly.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise typer.Exit(2) from None
        except (UsageError, DownloadError) as exc:
            _fail(str(exc), debug)
        except KeyboardInterrupt:
            _fail("interrupted", debug)
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
def check(
    paths: PathsArg = None,
    vllm: VllmOpt = None,
    arch: ArchOpt = None,
    hf_config: HfConfigOpt = None,
    model_type: ModelTypeOpt = None,
    select: SelectOpt = None,
    ignore: IgnoreOpt = None,
    output_format: FormatOpt = OutputFormat.text,
    exit_zero: ExitZeroOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
    jobs: JobsOpt = None,
    no_cache: NoCacheOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Report every EAGLE-3 blocker of every architecture (exit 0 none, 1 errors, 2 bad input)."""
    with _guard(debug):
        options = _options(
            paths,
            vllm,
            arch,
            hf_config,
            model_type,
            select,
            ignore,
            jobs,
            no_cache,
            progress=sys.stderr.isatty(),
        )
        # A progress line only for a person watching: not when piped, not with --quiet.
        interactive = sys.stdout.isatty() and sys.stderr.isatty() and not quiet
        view = (output_format, quiet, verbose, exit_zero)
        if interactive or no_cache:
            from eagle3lint.report.progress import FileProgress

            with FileProgress(interactive) as progress:
                options.on_file = progress.advance
                output, code = _check(options, view)
        else:
            output, code = _cached_check(options, view)
        sys.stdout.write(output)
        sys.stdout.flush()
    raise typer.Exit(code)


View = tuple[OutputFormat, bool, bool, bool]
"""How a report is shown: format, --quiet, --verbose, --exit-zero."""


def _check(options: CheckOptions, view: View) -> tuple[str, int]:
    from eagle3lint.engine import run_check

    return _present(run_check(options).report, view)


def _present(report: Report, view: View) -> tuple[str, int]:
    """The output and the exit code of a report, shown as `view` says."""
    output_format, quiet, verbose, exit_zero = view
    return _render(report, output_format, quiet=quiet, verbose=verbose), report.exit_code(exit_zero)


def _cached_check(options: CheckOptions, view: View) -> tuple[str, int]:
    """`_check`, answered from the whole-run cache when nothing it read has changed."""
    from eagle3lint.contract.model import GATE_FILES, PROPOSER_FILES
    from eagle3lint.contract.reader import RUNNER_FILES
    from eagle3lint.engine import discover_for, run_check
    from eagle3lint.index.cache import default_cache_dir
    from eagle3lint.rule import load_plugins
    from eagle3lint.runcache import Manifest, RunCache, code_fingerprint

    workspace = discover_for(options)
    cache = RunCache(default_cache_dir())
    setting = {k: v for k, v in vars(options).items() if k not in ("on_file", "progress", "jobs")}
    key = cache.key(
        os.getcwd(),
        os.environ.get("NO_COLOR"),
        [str(v) for v in view],
        setting,
        vars(workspace),
        code_fingerprint(load_plugins()[0]),
    )
    hit = cache.load(key)
    if hit is not None:
        return hit
    outside_index = [options.hf_config] if options.hf_config else []
    if workspace.vllm_dir is not None:
        rels = (*GATE_FILES, *PROPOSER_FILES, *RUNNER_FILES)
        outside_index += [workspace.vllm_dir / rel for rel in rels]
    before = Manifest.snapshot(outside_index)
    run = run_check(options, workspace=workspace)
    output, code = _present(run.report, view)
    if not run.report.errors:
        cache.store(key, output, code, Manifest.of(run.index.inputs(), before))
    return output, code


def _render(report: Report, output_format: OutputFormat, *, quiet: bool, verbose: bool) -> str:
    if output_format is OutputFormat.json:
        return json.dumps(report.to_json(), indent=2) + "\n"
    if output_format is OutputFormat.sarif:
        from eagle3lint.report.sarif import to_sarif

        return json.dumps(to_sarif(report), indent=2) + "\n"
    if output_format is OutputFormat.github:
        from eagle3lint.report.github import github_annotations

        return "".join(
            f"{line}\n" for line in github_annotations(report, quiet=quiet, verbose=verbose)
        )
    from eagle3lint.report.text import render_text

    console = _text_console()
    render_text(report, console, verbose=verbose, quiet=quiet)
    return console.file.getvalue()  # type: ignore[attr-defined]


def _text_console(tty: bool | None = None, piped_width: int | None = None) -> Console:
    """A console writing to a buffer for stdout (a terminal when `tty`, default: when stdout
    is one). Piped output stays plain (no colours, rich's default) and unwrapped, or
    `piped_width` wide."""
    from rich.console import Console

    tty = sys.stdout.isatty() if tty is None else tty
    return Console(
        file=io.StringIO(),
        force_terminal=tty,
        width=shutil.get_terminal_size().columns if tty else piped_width,
        no_color=bool(os.environ.get("NO_COLOR")),
        highlight=False,
        soft_wrap=not tty and piped_width is None,
    )


def check_json(options: CheckOptions) -> dict[str, object]:
    """The report `check --format json` prints for `options` (whole-run cache included)."""
    view = (OutputFormat.json, False, False, True)
    output, _ = _cached_check(options, view) if options.use_cache else _check(options, view)
    return json.loads(output)


@app.command()
def matrix(
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
    arch: ArchOpt = None,
    hf_config: HfConfigOpt = None,
    model_type: ModelTypeOpt = None,
    output_format: Annotated[
        MatrixFormat, typer.Option("--format", help="Output format.")
    ] = MatrixFormat.text,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write to this file, not stdout.")
    ] = None,
    jobs: JobsOpt = None,
    no_cache: NoCacheOpt = False,
    debug: DebugOpt = False,
) -> None:
    """EAGLE-3 readiness of every architecture across vLLM releases (columns) as a table."""
    with _guard(debug):
        from eagle3lint.matrix.command import (
            build,
            columns_of,
            command_line,
            render,
            write_output,
        )

        options = _options(
            None, None, arch, hf_config, model_type, None, None, jobs, no_cache, progress=False
        )
        columns = columns_of(list(paths or []), list(vllm or []))
        command = command_line(paths, vllm, options, output_format, output)
        table = build(columns, options, check_json, sys.stderr.isatty(), command)
        # A file or a pipe gets the table as wide as it needs (up to 200 columns), uncoloured.
        console = lambda: _text_console(tty=False if output else None, piped_width=200)  # noqa: E731
        write_output(render(table, output_format, console), output)
    raise typer.Exit(0)


@app.command()
def fix(
    paths: PathsArg = None,
    vllm: VllmOpt = None,
    arch: ArchOpt = None,
    hf_config: HfConfigOpt = None,
    model_type: ModelTypeOpt = None,
    select: SelectOpt = None,
    ignore: IgnoreOpt = None,
    diff: Annotated[
        bool, typer.Option("--diff", help="Print a unified diff; write nothing.")
    ] = False,
    jobs: JobsOpt = None,
    no_cache: NoCacheOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Apply every fixable finding, then check again (exit 0 ready, 1 blockers remain)."""
    with _guard(debug):
        from eagle3lint.fixer import run_fix

        options = _options(
            paths,
            vllm,
            arch,
            hf_config,
            model_type,
            select,
            ignore,
            jobs,
            no_cache,
            progress=sys.stderr.isatty(),
        )
        code = run_fix(options, diff=diff)
    raise typer.Exit(code)


@app.command()
def pair(
    paths: PathsArg = None,
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
    vllm: VllmOpt = None,
    pp: Annotated[int, typer.Option("--pp", min=1, help="Pipeline-parallel size.")] = 1,
    select: SelectOpt = None,
    ignore: IgnoreOpt = None,
    output_format: FormatOpt = OutputFormat.text,
    exit_zero: ExitZeroOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
    jobs: JobsOpt = None,
    no_cache: NoCacheOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Check an EAGLE-3 drafter against its target for one release (exit codes as check)."""
    with _guard(debug):
        from eagle3lint.pairing.command import run_pair
        from eagle3lint.pairing.draft import DraftPairing

        pairing = DraftPairing.load(draft, list(draft_weights or []), target, pp)
        options = _options(
            paths, vllm, None, target, None, select, ignore, jobs, no_cache, progress=False
        )
        output, code = run_pair(
            options,
            pairing,
            output_format.value,
            lambda report: _render(report, output_format, quiet=quiet, verbose=verbose),
            exit_zero,
        )
        sys.stdout.write(output)
        sys.stdout.flush()
    raise typer.Exit(code)


@app.command()
def rules() -> None:
    """List the rules: code, name, what it checks, fixable, plugin (exit 2: a plugin refused)."""
    from rich.console import Console
    from rich.table import Table

    from eagle3lint.codes import all_codes
    from eagle3lint.report.escape import printable
    from eagle3lint.rule import load_plugins

    table = Table("code", "rule", "name", "checks", "fixable", "plugin")
    for entry in all_codes():
        code = entry.code
        table.add_row(
            *map(printable, (code.code, entry.rule, code.name, code.summary)),
            "yes" if code.fixable else "",
            printable(entry.plugin),
        )
    Console(no_color=bool(os.environ.get("NO_COLOR"))).print(table)
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
            from rich.console import Console
            from rich.markdown import Markdown

            Console(no_color=bool(os.environ.get("NO_COLOR"))).print(Markdown(page))
        else:
            typer.echo(page, nl=False)


def main() -> None:
    app()
