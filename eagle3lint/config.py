"""`[tool.eagle3lint]` in the nearest pyproject.toml: a repository's defaults for `check` and `fix`.

    [tool.eagle3lint]
    select = ["EAG1", "EAG2", "EAG3"]     # code prefixes, as --select
    ignore = ["EAG306"]                   # as --ignore
    require = ["KimiK25ForConditionalGeneration"]  # must be EAGLE-3 ready (as --require)
    vllm-version = "0.16.0"               # as --vllm
    hf-config = "checkpoints/config.json" # as --hf-config, relative to this pyproject.toml
    exclude = ["**/tests/*", "*_test.py"] # globs of files not to check
    rule-timeout = 30                     # seconds a rule may take on one target
    baseline = "eagle3lint-baseline.json" # findings accepted for now (as --baseline)

    [tool.eagle3lint.rules.forward-taps]  # options of one rule, by its slug
    aux-layers = [2, 30, 58]

The nearest `eagle3lint.toml` or pyproject.toml with a `[tool.eagle3lint]` table, walking up
from the first path analysed, applies, as ruff finds its own; when there is none, the one of
the working directory.
Command-line flags override it.

The walk stops at the repository root (a folder holding `.git`), and it neither passes through
a folder nor uses a file that someone other than the user, root or (in their own folders) the
owner of the path analysed could have written (`eagle3lint.trust.climb`): an
`eagle3lint.toml` planted in /tmp by another user, with `ignore = ["EAG"]`, would otherwise
turn every blocker of a tree below it into an exit 0. A configuration passed over so is named
on stderr, once (`config not used:`): it would have applied, so the run must say why it did
not. One above the first untrusted folder is not looked for, so not named either.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from eagle3lint import trust
from eagle3lint.errors import ConfigError as ConfigError  # re-exported for older imports
from eagle3lint.report.escape import printable
from eagle3lint.sandbox import DEFAULT_RULE_TIMEOUT
from eagle3lint.sources.documents import read_toml
from eagle3lint.sources.files import SourceNotFound, UnreadableSource

KEYS = {
    "select",
    "ignore",
    "require",
    "vllm-version",
    "hf-config",
    "exclude",
    "baseline",
    "rules",
    "rule-timeout",
}


@dataclass
class Config:
    """The settings of one `[tool.eagle3lint]` table (all empty when there is none)."""

    path: Path | None = None
    """The pyproject.toml they come from."""
    select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    require: list[str] = field(default_factory=list)
    vllm_version: str | None = None
    hf_config: Path | None = None
    exclude: list[str] = field(default_factory=list)
    baseline: Path | None = None
    rule_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    rule_timeout: float = DEFAULT_RULE_TIMEOUT


def find_config(start: Path, named: bool = True) -> tuple[Path, dict[str, Any]] | None:
    """The nearest configuration at or above `start` (a path analysed if `named`, else the
    working directory) that `trust.climb` allows: an `eagle3lint.toml` (its top level is the
    table), else a pyproject.toml with a `[tool.eagle3lint]` table (one without is skipped,
    as ruff does). Read through the regular-file reader: a FIFO or a device there is a usage
    error, not a hang."""
    first = start if os.path.isdir(start) else start.parent
    for folder, trusted in trust.climb(first, named):
        for name in ("eagle3lint.toml", "pyproject.toml"):
            candidate = folder / name
            if not os.path.lexists(candidate):
                continue
            if not trust.may_use(candidate, trusted):
                _say_not_used(candidate)
                continue
            table = _table(candidate, _read_toml(candidate))
            if table is not None:
                return candidate, table
    return None


def _table(path: Path, data: dict[str, Any] | None) -> Any:
    """The eagle3lint table of a configuration file's document, None when it has none."""
    if data is None or path.name == "eagle3lint.toml":
        return data
    tool = data.get("tool", {})
    return tool.get("eagle3lint") if isinstance(tool, dict) else None


@cache
def _say_not_used(path: Path) -> None:
    """Name an untrusted file that would have been the configuration (read only to tell)."""
    try:
        if _table(path, _read_toml(path)) is None:
            return
    except ConfigError:
        return
    message = f"{path}: another user could have written it"
    print(f"eagle3lint: config not used: {printable(message)}", file=sys.stderr)


def _read_toml(path: Path) -> dict[str, Any] | None:
    """The TOML document at `path`, None when there is no file there."""
    try:
        return read_toml(path, path.name)
    except SourceNotFound:
        return None
    except UnreadableSource as exc:
        raise ConfigError(f"{path}: {exc}") from exc


def config_start(paths: list[Path]) -> Path | None:
    """Where to look for the configuration: above the first path analysed (so a tree's own
    settings apply from any working directory); None (the working directory) without one."""
    for path in paths:
        candidate = path.expanduser().absolute()
        if os.path.exists(candidate):  # False, not an exception, for a path that cannot be seen
            return candidate
    return None


def load_config(start: Path | None = None) -> Config:
    """The configuration that applies to `start`, a path analysed, else the working
    directory's (a release checked from a project, `--vllm` or a cached tree, takes the
    project's settings). The owner of `start` is trusted in their folders with the user and
    root: checking a colleague's tree takes its settings. The working directory, which is not
    named, brings no owner of its own."""
    found = None
    if start is not None:
        start = start.resolve()
        found = find_config(start)
    found = found or find_config(Path.cwd().resolve(), named=False)
    if found is None:
        return Config()
    path, table = found
    where = f"{path}" if path.name == "eagle3lint.toml" else f"{path} [tool.eagle3lint]"
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: must be a table")
    unknown = sorted(set(table) - KEYS)
    if unknown:
        raise ConfigError(
            f"{where}: unknown key {', '.join(unknown)} (known: {', '.join(sorted(KEYS))})"
        )
    hf_config = _string(table, "hf-config", where)
    baseline = _string(table, "baseline", where)
    for key in ("select", "ignore"):
        if selectors := _strings(table, key, where):
            from eagle3lint.codes import check_selectors  # loads every rule plugin

            check_selectors(selectors, f"{where} {key}")
    return Config(
        path=path,
        select=_strings(table, "select", where),
        ignore=_strings(table, "ignore", where),
        require=_strings(table, "require", where),
        vllm_version=_string(table, "vllm-version", where),
        hf_config=path.parent / hf_config if hf_config else None,
        exclude=_strings(table, "exclude", where),
        baseline=path.parent / baseline if baseline else None,
        rule_options=_rule_options(table.get("rules", {}), where),
        rule_timeout=_timeout(table, where),
    )


def _timeout(table: dict[str, Any], where: str) -> float:
    value = table.get("rule-timeout", DEFAULT_RULE_TIMEOUT)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 3600:
        raise ConfigError(
            f"{where}: rule-timeout must be a number of seconds (0-3600], not {value!r}"
        )
    return float(value)


def _strings(table: dict[str, Any], key: str, where: str) -> list[str]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: {key} must be a list of strings, not {value!r}")
    return value


def _string(table: dict[str, Any], key: str, where: str) -> str | None:
    value = table.get(key)
    if value is not None and not isinstance(value, str):
        raise ConfigError(f"{where}: {key} must be a string, not {value!r}")
    return value


def _rule_options(rules: Any, where: str) -> dict[str, dict[str, Any]]:
    if not isinstance(rules, dict):
        raise ConfigError(f"{where}: rules must be a table of rule tables")
    if not rules:
        return {}  # nothing to validate: the rule plugins stay unloaded
    from eagle3lint.rule import load_rules

    by_slug = {cls.slug: cls for cls in load_rules()}
    options: dict[str, dict[str, Any]] = {}
    for slug, values in rules.items():
        cls = by_slug.get(slug)
        if cls is None:
            raise ConfigError(
                f"{where}: unknown rule {slug!r} in rules (known: {', '.join(sorted(by_slug))})"
            )
        if not isinstance(values, dict):
            raise ConfigError(f"{where}: rules.{slug} must be a table of options")
        try:
            cls.validate_options(values)
        except ValueError as exc:
            raise ConfigError(f"{where}: {exc}") from exc
        options[slug] = values
    return options
