"""The commands the README and docs/ show, held to what eagle3lint does.

Every `eagle3lint ...` command line in a fenced block of the README, docs/ and examples/ is
parsed by the real command line (fast tier): an option renamed or removed, a value of the wrong
kind, a command that does not exist fails here, and docs/usage.md's synopsis must list every
option of each command. The README's tour and docs/pairing.md's worked examples are run for
real on the releases they name (release tier), and each line they show must be in what the
command prints (`…` stands for text left out), with the exit codes the tables below give.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import typer
from typer._click.exceptions import Exit, UsageError

from eagle3lint.cli import COMMANDS, build_app

REPO = Path(__file__).resolve().parent.parent
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
DOCS += sorted((REPO / "examples").glob("*/README.md"))
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
SYNOPSIS = re.compile(r"\s\[|\|[a-z]|\.\.\.|ARCH\b|NAME\b|X\.Y\.Z|CONFIG\b|FILE\b|REF\b")
"""What a usage synopsis line holds and a command never does (`[--arch NAME]`, `text|json`)."""

TOUR_EXIT = {
    "eagle3lint check --vllm 0.16.0": 1,
    "eagle3lint explain": 0,
    "eagle3lint fix --vllm 0.16.0": 1,  # changes pending: --diff exits 1, as ruff does
    "eagle3lint pair": 0,
    "eagle3lint matrix": 0,
}


def command_lines(text: str) -> Iterator[str]:
    """The eagle3lint command lines of the fenced blocks of `text` (continuations joined)."""
    for _, body in FENCE.findall(text):
        joined = re.sub(r"\\\n\s*", "", body)
        for line in joined.splitlines():
            line = line.strip().removeprefix("$ ")
            if not line.startswith("eagle3lint ") or SYNOPSIS.search(line):
                continue
            command = line.split(" # ")[0].split(" > ")[0].split(" | ")[0].strip()
            yield command


def documented() -> list[tuple[str, str]]:
    return [
        (str(path.relative_to(REPO)), command)
        for path in DOCS
        for command in dict.fromkeys(command_lines(path.read_text()))
    ]


@pytest.mark.parametrize(("doc", "command"), documented())
def test_every_documented_command_parses(doc: str, command: str) -> None:
    parses(doc, command)


@pytest.mark.parametrize(
    "command",
    [
        "eagle3lint check vllm --output-formatt json",
        "eagle3lint check --format yaml",
        "eagle3lint lint vllm",
        "eagle3lint check -j x",
    ],
)
def test_a_drifted_command_would_fail(command: str) -> None:
    with pytest.raises((pytest.fail.Exception, AssertionError)):
        parses("README.md", command)


def parses(doc: str, command: str) -> None:
    """The command line is one eagle3lint accepts: the command exists, every option does, and
    each value has the right kind (paths need not exist here)."""
    args = shlex.split(command)[1:]
    if args in (["--version"], ["--help"]):
        return
    assert args and args[0] in COMMANDS, f"{doc}: no command {args[:1]}"
    group = typer.main.get_command(build_app(args[0]))
    try:
        with group.make_context("eagle3lint", list(args)) as context:
            sub = group.get_command(context, args[0])
            assert sub is not None
            rest = args[1:]
            if hasattr(sub, "get_command"):  # `cache info`: a group of its own
                sub = sub.get_command(context, rest[0])
                rest = rest[1:]
            sub.make_context(args[0], rest, parent=context)
    except Exit:
        pass  # --version, --help
    except UsageError as exc:
        pytest.fail(f"{doc}: `{command}` is refused: {exc.format_message()}")


def tour() -> list[tuple[str, list[str]]]:
    """The README tour's commands, each with the lines it shows."""
    text = (REPO / "README.md").read_text()
    [block] = [b for lang, b in FENCE.findall(text) if lang == "console"]
    steps: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            steps[-1][1].append(line)
    return steps


def test_the_tour_names_its_exit_codes() -> None:
    for command, _ in tour():
        assert [p for p in TOUR_EXIT if command.startswith(p)], f"no exit code for `{command}`"


@pytest.mark.parametrize(("command", "shown"), tour(), ids=[c for c, _ in tour()])
def test_the_tour_prints_what_the_readme_shows(
    command: str,
    shown: list[str],
    vllm_release: Callable[[str], Path],
    release_cache: Path,
    tmp_path: Path,
) -> None:
    for version in re.findall(r"--vllm (\S+)", command):
        vllm_release(version)  # in the cache the command reads: it never downloads here
    words = shlex.split(command.split(" > ")[0])
    done = subprocess.run(
        [sys.executable, "-m", "eagle3lint", *words[1:]],
        cwd=REPO,
        env={**os.environ, "EAGLE3LINT_CACHE_DIR": str(release_cache), "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    [expected] = [code for prefix, code in TOUR_EXIT.items() if command.startswith(prefix)]
    assert done.returncode == expected, done.stdout + done.stderr
    printed = (done.stdout + done.stderr).replace(str(release_cache), "~/.cache/eagle3lint")
    lines = printed.splitlines()
    for line in shown:
        if line.endswith("…"):
            assert any(p.startswith(line[:-1].rstrip()) for p in lines), line
        else:
            assert line in lines, line


def synopsis() -> dict[str, set[str]]:
    """docs/usage.md's synopsis: each command with the options it lists."""
    text = (REPO / "docs" / "usage.md").read_text()
    [block] = [b for lang, b in FENCE.findall(text) if lang == "text"][:1]
    found: dict[str, set[str]] = {}
    command = ""
    for line in block.splitlines():
        if line.startswith("eagle3lint "):
            command = line.split()[1]
            found.setdefault(command, set())
        found[command] |= set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", line))
    return found


@pytest.mark.parametrize("command", ["check", "fix", "pair", "matrix"])
def test_the_usage_synopsis_lists_every_option_and_no_other(command: str) -> None:
    group = typer.main.get_command(build_app(command))
    with group.make_context("eagle3lint", [command, "--help"], resilient_parsing=True) as ctx:
        sub = group.get_command(ctx, command)
    real = {
        opt
        for param in sub.params
        for opt in (*param.opts, *param.secondary_opts)
        if opt.startswith("--") and opt != "--help"
    }
    listed = synopsis()[command]
    assert listed <= real, f"listed but not an option: {sorted(listed - real)}"
    # Aliases (`--format` of `--output-format`, `--vllm-version`) need not be listed twice.
    missing = {
        opt
        for param in sub.params
        if param.opts and not {*param.opts, *param.secondary_opts} & listed
        for opt in param.opts[:1]
        if opt.startswith("--") and opt != "--help"
    }
    assert not missing, f"options missing from docs/usage.md: {sorted(missing)}"


def worked_examples() -> list[tuple[str, list[str]]]:
    """docs/pairing.md's worked examples: each `$ eagle3lint pair` command with its output."""
    text = (REPO / "docs" / "pairing.md").read_text()
    examples = []
    for _, block in FENCE.findall(text):
        joined = re.sub(r"\\\n\s*", "", block)
        lines = joined.splitlines()
        if lines and lines[0].startswith("$ eagle3lint pair"):
            examples.append((lines[0][2:], [line for line in lines[1:] if line.strip()]))
    return examples


PAIRING_EXIT = {"llama-3.1-8b-head": 1, "qwen3-8b-speculator.eagle3": 0, "Qwen3-8B-DFlash-b16": 0}


def shown_in(line: str, printed: list[str]) -> bool:
    """`line` is one of `printed`, where `…` in it stands for any text."""
    pattern = ".*".join(re.escape(part) for part in line.split("…"))
    return any(re.fullmatch(pattern, p) for p in printed)


def heads(into: Path) -> None:
    """The draft folders the worked examples name, in the shapes such heads ship (configs and
    safetensors headers, as tests/test_pair.py writes them)."""
    from test_pair import (
        DFLASH_HEAD,
        QWEN_TENSORS,
        head,
        speculators_head,
        tensors,
        write_safetensors,
    )

    for name, config, weights in (
        ("llama-3.1-8b-head", head(), tensors()),
        (
            "qwen3-8b-speculator.eagle3",
            speculators_head("qwen3", "Qwen3ForCausalLM"),
            QWEN_TENSORS,
        ),
        (
            "Qwen3-8B-DFlash-b16",
            {**DFLASH_HEAD, "dflash_config": {"target_layer_ids": [1, 9, 17, 25, 33]}},
            {"fc.weight": [4096, 5 * 4096]},
        ),
    ):
        (into / name).mkdir()
        (into / name / "config.json").write_text(json.dumps(config, indent=2))
        write_safetensors(into / name / "model.safetensors", weights)


@pytest.mark.parametrize(("command", "shown"), worked_examples(), ids=lambda v: str(v)[:60])
def test_the_pairing_examples_print_what_the_docs_show(
    command: str, shown: list[str], vllm_release: Callable[[str], Path], tmp_path: Path
) -> None:
    for version in re.findall(r"--vllm (\S+)", command):
        vllm_release(version)
    heads(tmp_path)
    (tmp_path / "fixtures").symlink_to(REPO / "fixtures")
    done = subprocess.run(
        [sys.executable, "-m", "eagle3lint", *shlex.split(command)[1:]],
        cwd=tmp_path,
        env={**os.environ, "COLUMNS": "400"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    [model] = [m for m in PAIRING_EXIT if f'"{m}"' in command]
    assert done.returncode == PAIRING_EXIT[model], done.stdout + done.stderr
    printed = done.stdout.splitlines()
    for line in shown:
        assert shown_in(line, printed), f"{line!r} not in:\n{done.stdout}"


def _table_rows(path: Path, after: str = "|") -> list[list[str]]:
    """The cells of each data row of the first markdown table of `path` whose header starts
    with `after` (after its header); none when there is no such table."""
    lines = path.read_text().splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(after)), len(lines))
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    rows = [line for line in lines[start:end] if line.startswith("| ")]
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows[1:]]


def test_the_readme_agreement_figures_are_the_suites_last_measure() -> None:
    """The README's agreement figures are those the end-to-end suite and the sweep last wrote
    (`docs/end-to-end.md`, `docs/e2e-sweep/README.md`, both generated): a run that changes them
    must change the README too."""
    readme = " ".join((REPO / "README.md").read_text().split())
    for release, cases, agree, _, cannot in _table_rows(REPO / "docs" / "end-to-end.md"):
        decided = int(cases) - int(cannot)
        assert f"{release} {agree} of {decided}" in readme, (release, agree, decided)
    sweep = REPO / "docs" / "e2e-sweep" / "README.md"
    for release, targets, swept, decided, agree, *_ in _table_rows(sweep):
        wanted = f"{release}: {agree} of {decided} decided ({swept} of {targets} targets swept)"
        assert wanted in readme, wanted
    repaired = readme.partition("repaired by `fix`")[2]
    for release, _, decided, agree, *_ in _table_rows(sweep, after="| release | repaired |"):
        wanted = f"on {release}: {agree} of {decided} agree"
        assert wanted in repaired, wanted


TIER_SENTENCE = (
    r"It runs (?P<fast>\d+) of the (?P<all>\d+) tests \(release (?P<release>\d+),\s+runtime "
    r"(?P<runtime>\d+), e2e (?P<e2e>\d+), slow (?P<slow>\d+)\)"
)


def test_the_tier_counts_docs_testing_quotes_are_the_suites(tmp_path: Path) -> None:
    counts_file = tmp_path / "counts.json"
    collect = ["--collect-only", "-q", "-p", "no:cacheprovider", f"--tier-counts={counts_file}"]
    # -P: the working directory off sys.path, as `pytest` (CI's command) has it, so a test
    # importing `tests.x` fails here as it fails there.
    collected = subprocess.run(
        [sys.executable, "-P", "-m", "pytest", *collect],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert collected.returncode == 0, collected.stdout[-2000:]
    counts = json.loads(counts_file.read_text())
    assert sum(v for k, v in counts.items() if k != "all") == counts["all"]
    quoted = re.search(TIER_SENTENCE, (REPO / "docs" / "testing.md").read_text())
    assert quoted, "docs/testing.md no longer says how many tests each tier holds"
    expected = (
        f"It runs {counts['fast']} of the {counts['all']} tests (release {counts['release']}, "
        f"runtime {counts['runtime']}, e2e {counts['e2e']}, slow {counts['slow']})"
    )
    assert {k: int(v) for k, v in quoted.groupdict().items()} == counts, expected
