"""The options several commands share, declared once: `RunArgs` (what a command passes on to
the engine, `@takes` picks a command's share) and the output options of `check` and `pair`."""

from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from eagle3lint.engines import Platform
from eagle3lint.report.terminal import ColorChoice

if TYPE_CHECKING:
    from eagle3lint.checkrun.options import CheckOptions


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
        readable=False,
    ),
]
ArchOpt = Annotated[
    list[str] | None, typer.Option("--arch", help="Only this registered architecture (repeatable).")
]
VllmOpt = Annotated[
    str | None,
    typer.Option("--vllm", "--vllm-version", help="Check release X.Y.Z's sources from PyPI."),
]
SglangOpt = Annotated[
    str | None,
    typer.Option("--sglang", help="Check SGLang release X.Y.Z's sources from PyPI."),
]
HfConfigOpt = Annotated[
    Path | None, typer.Option("--hf-config", help="The model's config.json (or its folder).")
]
ModelTypeOpt = Annotated[
    str | None, typer.Option("--model-type", help="The target's text model_type.")
]
PlatformOpt = Annotated[
    Platform | None,
    typer.Option(
        "--platform",
        help="The platform vLLM runs on, which picks its model runner (default: the installed "
        "vLLM's build, else cuda).",
        show_default=False,
    ),
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
    int | None, typer.Option("--jobs", "-j", min=1, help="Parser processes (default: cores).")
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
FormatOpt = Annotated[
    OutputFormat, typer.Option("--output-format", "--format", help="Report format.")
]
"""`--output-format` as `check` (and ruff) spell it, `--format` as before."""
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
    sglang: SglangOpt = None
    arch: ArchOpt = None
    hf_config: HfConfigOpt = None
    model_type: ModelTypeOpt = None
    platform: PlatformOpt = None
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
        from eagle3lint.checkrun.options import CheckOptions
        from eagle3lint.config import config_start, load_config
        from eagle3lint.errors import UsageError

        if not self.no_cache:
            from eagle3lint.cachedir import cap_bytes

            cap_bytes()  # a bad EAGLE3LINT_CACHE_MAX_MB is refused now, not after the run
        config = load_config(config_start(list(self.paths or [])))
        if self.vllm is not None and self.sglang is not None:
            raise UsageError("give --vllm or --sglang, not both: one release is checked at a time")
        engine = "sglang" if self.sglang is not None else "vllm"
        version = self.sglang or (self.vllm if self.vllm is not None else config.vllm_version)
        if version is not None:
            from eagle3lint.engines import wing_named

            wing_named(engine).check_version(version)
        for flag, values in (
            ("--select", self.select),
            ("--ignore", self.ignore),
            ("--extend-select", self.extend_select),
        ):
            if values is None:
                continue  # nothing to check: the rule plugins stay unloaded
            if not _codes(values):
                # ruff refuses it too: an empty selection would otherwise select everything.
                raise UsageError(f"{flag} names no rule code or prefix (EAG1,EAG301)")
            from eagle3lint.codes import check_selectors

            check_selectors(_codes(values), flag)
        chosen = _codes(self.select) or config.select
        if self.extend_select:
            chosen = [*(chosen or ["EAG"]), *_codes(self.extend_select)]
        return CheckOptions(
            paths=list(self.paths or []),
            release=version,
            release_engine=engine,
            archs=list(self.arch or []),
            hf_config=self.hf_config or config.hf_config,
            model_type=self.model_type,
            platform=str(self.platform) if self.platform is not None else None,
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


def takes(
    *shared: str, helps: Mapping[str, str] | None = None
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """A command taking the `RunArgs` options named in `shared` (declared once, there) as its
    first parameter, before its own options; `helps` gives an option the help text of what it
    means to this command (`pair`'s PATH is the tree whose release runs the pair)."""
    hints = typing.get_type_hints(RunArgs, include_extras=True)
    defaults = {f.name: f.default for f in dataclasses.fields(RunArgs)}
    unknown = set(helps or {}) - set(shared)
    if unknown:
        raise ValueError(f"help given for options the command does not take: {sorted(unknown)}")

    def annotation(name: str) -> Any:
        if not helps or name not in helps:
            return hints[name]
        kind, info = typing.get_args(hints[name])[:2]
        info = copy.copy(info)  # the shared declaration keeps its own help
        info.help = helps[name]
        return Annotated[kind, info]

    def decorate(command: Callable[..., None]) -> Callable[..., None]:
        own = list(inspect.signature(command, eval_str=True).parameters.values())[1:]
        params = [
            inspect.Parameter(
                name,
                inspect.Parameter.KEYWORD_ONLY,
                default=defaults[name],
                annotation=annotation(name),
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
"""Every shared option: what `check` takes."""


def _codes(values: list[str] | None) -> list[str]:
    """`--select EAG1,EAG301 --select EAG5` → the prefixes, as ruff takes them."""
    return [code.strip() for value in values or () for code in value.split(",") if code.strip()]
