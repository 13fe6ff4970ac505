"""Hostile input, round 3 (issue 25): output cannot be forged, and a matrix is bounded.

Names eagle3lint prints come from the analysed tree: an architecture name from a registry
entry, a release label from `_version.py`, a file name from the file system, a drafter's name
from its config, a message and a code's name from a plugin. Each format must keep them from
starting a GitHub workflow command (a line whose first non-blank characters are `::`), adding
lines, carrying terminal escapes, breaking a Markdown table or putting markup in it, or
starting a CSV cell a spreadsheet runs as a formula.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import stat
import threading
from pathlib import Path
from typing import Any

import pytest
from test_hostile import PLUGIN, index, no_hang, offline_pip, plugin  # noqa: F401 (fixtures)
from test_pair import LLAMA, draft_folder, head, tensors
from typer.testing import CliRunner
from vllm_tree import ARCH, write_vllm_tree
from vllm_tree import LLAMA as LLAMA_SOURCE

from eagle3lint.cli import app
from eagle3lint.commands.check import check_json as real_check_json
from eagle3lint.report.escape import (
    csv_cell,
    markdown_code_block,
    markdown_text,
    printable,
    workflow_property,
)

FORGED_ARCHS = [
    "::error file=forged.py,line=1::FORGED",
    "::stop-commands::tok",
    "  ::warning::indented",
    "A|B`code`<script>alert(1)</script>&amp;[link](http://example.com)",
    "back\\|slash",
    '=HYPERLINK("http://example.com","x")',
    "+1",
    "-1",
    "@SUM(1)",
    "\t=1",
    "\r=1",
    "x\n::error::after a line break",
    "\x1b[31mred\x1b[0m",
    "\u202eevil",
    "[/bold][red]markup",
    "ends with a colon:",
]
FORGED_VERSION = "0.16.0\n::error::version"


def forged_tree(root: Path) -> Path:
    """A vLLM tree registering each forged name (all the Llama class), and a forged version."""
    vllm = write_vllm_tree(root)
    entries = "".join(f"    {name!r}: ('llama', {ARCH!r}),\n" for name in FORGED_ARCHS)
    registry = f"_TEXT_GENERATION_MODELS = {{\n{entries}}}\n\n"
    (vllm / "model_executor" / "models" / "registry.py").write_text(
        registry + "_VLLM_MODELS = {**_TEXT_GENERATION_MODELS}\n"
    )
    (vllm / "_version.py").write_text(f"__version__ = version = {FORGED_VERSION!r}\n")
    return vllm


def command_lines(output: str) -> list[str]:
    """The lines GitHub's runner reads as workflow commands: `::` after leading blanks."""
    return [line for line in output.splitlines() if line.lstrip().startswith("::")]


def assert_no_controls(output: str) -> None:
    for character in ("\x1b", "\r", "\u202e", "\x00"):
        assert character not in output, repr(character)


def matrix(tree: Path, output_format: str) -> str:
    with no_hang(60):
        result = CliRunner().invoke(
            app, ["matrix", str(tree), "--format", output_format, "--no-cache", "--jobs", "1"]
        )
    assert "Traceback" not in result.output
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.fixture(scope="module")
def forged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return forged_tree(tmp_path_factory.mktemp("forged")).parent


# -- the matrix ---------------------------------------------------------------------------------
def test_the_forged_names_are_all_registered(forged: Path) -> None:
    """The premise of the tests below: every forged name reaches the matrix, exactly (JSON
    carries exact strings)."""
    data = json.loads(matrix(forged, "json"))
    assert sorted(row["arch"] for row in data["rows"]) == sorted(FORGED_ARCHS)
    assert [r["label"] for r in data["releases"]] == [FORGED_VERSION]


@pytest.mark.parametrize("output_format", ["text", "markdown", "csv", "json", "html"])
def test_matrix_output_starts_no_workflow_command_and_carries_no_escape(
    forged: Path, output_format: str
) -> None:
    output = matrix(forged, output_format)
    assert command_lines(output) == []
    assert_no_controls(output)


def table_cells(line: str) -> list[str]:
    """A Markdown table row split as GitHub splits it: at each `|` no backslash precedes."""
    return re.split(r"(?<!\\)\|", line.strip())[1:-1]


def test_matrix_markdown_tables_keep_their_columns_and_hold_no_markup(forged: Path) -> None:
    output = matrix(forged, "markdown")
    tables = re.findall(r"(?:^\|.*\n)+", output, re.MULTILINE)
    assert len(tables) == 2
    for table in tables:
        widths = {len(table_cells(line)) for line in table.splitlines()}
        assert len(widths) == 1, table
    rows = tables[1].splitlines()[2:]
    assert len(rows) == len(FORGED_ARCHS)
    assert "<script" not in output and "</script" not in output
    assert not re.search(r"(?<!\\)\]\(http", output)  # no link
    assert not re.search(r"(?<!\\)`code", output)


def test_matrix_csv_cells_start_no_formula(forged: Path) -> None:
    rows = list(csv.reader(io.StringIO(matrix(forged, "csv"))))
    assert len(rows) == 1 + len(FORGED_ARCHS)
    assert {len(row) for row in rows} == {7}
    for row in rows:
        for cell in row:
            assert not cell.lstrip().startswith(("=", "+", "-", "@", "::")), cell
    names = {row[1] for row in rows[1:]}
    assert '\'=HYPERLINK("http://example.com","x")' in names
    assert "'+1" in names and "'@SUM(1)" in names


def test_matrix_html_keeps_its_own_two_scripts(forged: Path) -> None:
    output = matrix(forged, "html")
    assert output.count("<script") == 2
    assert output.count("</script>") == 2


# -- check's formats, with forged file names --------------------------------------------------
FORGED_FILES = [
    "::error file=forged.py,line=1::FORGED.py",
    "::stop-commands::tok.py",
    " ::notice::space.py",
    "x\n::error::line.py",
    "[bold]\x1b[2J.py",
]


@pytest.fixture
def forged_files(models: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The models folder, working directory, holding a model file under each forged name."""
    for name in FORGED_FILES:
        (models / name).write_text(LLAMA_SOURCE)
    monkeypatch.chdir(models)
    return models


def check_output(*args: str) -> tuple[int, str]:
    with no_hang(60):
        result = CliRunner().invoke(
            app, ["check", *args, "--no-cache", "--jobs", "1", "--require", "*"]
        )
    assert "Traceback" not in result.output
    return result.exit_code, result.stdout


@pytest.mark.parametrize("output_format", ["text", "full"])
def test_a_file_name_starts_no_workflow_command_in_text(
    forged_files: Path, output_format: str
) -> None:
    exit_code, output = check_output(".", "--format", output_format)
    assert exit_code == 1
    assert command_lines(output) == []
    assert_no_controls(output)
    # Each forged file is still reported, under its escaped name.
    for name in FORGED_FILES:
        assert printable(name) in output


GITHUB_COMMAND = re.compile(r"^::(error|warning|notice) ([^:]*)::([^\r\n]*)$")


def unescape_property(value: str) -> str:
    return value.replace("%2C", ",").replace("%3A", ":").replace("%0A", "\n").replace("%25", "%")


def test_github_commands_are_eagle3lints_own_and_name_the_real_files(forged_files: Path) -> None:
    exit_code, output = check_output(".", "--format", "github")
    assert exit_code == 1
    files = set()
    for line in output.splitlines():
        command = GITHUB_COMMAND.match(line)
        assert command, line
        properties = dict(item.split("=", 1) for item in command[2].split(","))
        assert set(properties) <= {"file", "line", "col", "title"}
        files.add(unescape_property(properties.get("file", "")))
    # Control characters are shown escaped; every other character of the name is exact.
    assert {name.replace("\n", "\\n").replace("\x1b", "\\x1b") for name in FORGED_FILES} <= files
    assert_no_controls(output)


def test_sarif_names_the_real_files(forged_files: Path) -> None:
    _, output = check_output(".", "--format", "sarif")
    uris = {
        location["physicalLocation"]["artifactLocation"]["uri"]
        for result in json.loads(output)["runs"][0]["results"]
        for location in result["locations"]
    }
    from urllib.parse import quote

    assert {quote(name) for name in FORGED_FILES} <= uris
    assert_no_controls(output)


def test_a_path_named_colon_starts_no_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`:` is not there: its error line would begin `::` (the path, then `: EAG902`)."""
    monkeypatch.chdir(tmp_path)
    exit_code, output = check_output(":")
    assert exit_code == 2
    assert command_lines(output) == []
    assert "\\x3a: EAG902" in output


def test_plugin_text_is_escaped_in_every_format(models: Path, plugin: Any) -> None:  # noqa: F811
    forged = "::error file=p.py::forged\n::stop-commands::x [/bold]\x1b[2J"
    where = str(models / "good.py")
    body = (
        f"yield Finding('EVL001', 'evil', Severity.ERROR, {forged!r}, {where!r}, 1, "
        f"hint={forged!r})"
    )
    source = PLUGIN.format(body=body)
    plugin(source.replace('"an evil rule"', repr(forged)))
    for output_format in ("text", "full", "github"):
        _, output = check_output(str(models), "--format", output_format)
        assert "EVL001" in output
        if output_format == "github":
            assert all(GITHUB_COMMAND.match(line) for line in output.splitlines())
        else:
            assert command_lines(output) == []
        assert_no_controls(output)
    with no_hang(60):
        listed = CliRunner().invoke(app, ["rules"])
    assert listed.exit_code == 0, listed.output
    assert "EVL001" in listed.stdout
    assert command_lines(listed.stdout) == []
    assert_no_controls(listed.stdout)


# -- pair's table and messages on stderr ------------------------------------------------------
def test_a_drafter_name_cannot_forge_pairs_table(vllm_release: Any, tmp_path: Path) -> None:
    vllm_release("0.18.0")
    name = "Llama" * 30 + " ::error file=x.py::forged [/bold]\x1b[2J"
    folder = draft_folder(tmp_path, head(architectures=[name]), tensors())
    with no_hang(120):
        result = CliRunner().invoke(
            app, ["pair", "--vllm", "0.18.0", "--target", str(LLAMA), "--draft", str(folder)]
        )
    assert "Traceback" not in result.output
    assert result.exit_code in (1, 2), result.output
    assert "drafter" in result.stdout
    assert command_lines(result.stdout) == []
    assert_no_controls(result.stdout)


def test_the_cache_warning_on_stderr_is_escaped(
    models: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = tmp_path / "x\n::error::forged"
    shared.mkdir()
    shared.chmod(0o777)
    monkeypatch.setenv("EAGLE3LINT_CACHE_DIR", str(shared))
    result = CliRunner().invoke(app, ["check", str(models), "--format", "json"])
    assert "cache not used" in result.stderr
    assert command_lines(result.stderr) == []


# -- the layer itself --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("::error::x", "\\x3a:error\\x3a:x"),
        (":", "\\x3a"),
        ("a:b", "a:b"),
        ("C:", "C\\x3a"),
        (":::", "\\x3a\\x3a\\x3a"),
        ("a\nb\x1b", "a\\nb\\x1b"),
    ],
)
def test_terminal_text_has_no_colon_pair_and_no_control(text: str, shown: str) -> None:
    assert printable(text) == shown


def test_markdown_text_renders_as_the_text_and_breaks_nothing() -> None:
    assert markdown_text("a|b") == "a\\|b"
    assert markdown_text("a\\|b") == "a\\\\\\|b"
    assert markdown_text("<b>&") == "&lt;b&gt;&amp;"
    assert markdown_text("`x` [l](u)") == "\\`x\\` \\[l\\](u)"
    assert markdown_text("::x") == "&#58;:x"
    assert markdown_text("gpt_oss, deepseek_v2") == "gpt_oss, deepseek_v2"


def test_a_code_block_cannot_be_closed_by_its_content() -> None:
    block = markdown_code_block("a ```` b\n::error::x", "bash")
    fence, body, closing = block.split("\n")
    assert fence == "`````bash" and closing == "`````"
    assert body == "a ```` b\\n\\x3a:error\\x3a:x"


@pytest.mark.parametrize("text", ["=1", "+1", "-1", "@x", " =1", "\uff1d1", "::x", " ::x"])
def test_a_csv_cell_that_would_be_a_formula_or_a_command_is_quoted(text: str) -> None:
    assert csv_cell(text) == "'" + text


def test_a_csv_cell_is_one_line() -> None:
    assert csv_cell("\t=1") == "\\t=1"
    assert csv_cell("\r\n") == "\\r\\n"
    assert csv_cell("0.16.0") == "0.16.0"


def test_a_workflow_property_keeps_its_separators_escaped() -> None:
    assert workflow_property("a:b,c%\n") == "a%3Ab%2Cc%25\\n"


# -- matrix: bounded ranges, a failing release is a column of errors ---------------------------
PYPI_FINAL_RELEASES = re.findall(
    r"\S+",
    "0.0.1 0.1.0 0.1.1 0.1.2 0.1.3 0.1.4 0.1.5 0.1.6 0.1.7 0.2.0 0.2.1.post1 0.2.2 0.2.3 0.2.4 "
    "0.2.5 0.2.6 0.2.7 0.3.0 0.3.1 0.3.2 0.3.3 0.4.0 0.4.0.post1 0.4.1 0.4.2 0.4.3 0.5.0 "
    "0.5.0.post1 0.5.1 0.5.2 0.5.3 0.5.3.post1 0.5.4 0.5.5 0.6.0 0.6.1 0.6.1.post1 0.6.1.post2 "
    "0.6.2 0.6.3 0.6.3.post1 0.6.4 0.6.4.post1 0.6.5 0.6.6 0.6.6.post1 0.7.0 0.7.1 0.7.2 0.7.3 "
    "0.8.0 0.8.1 0.8.2 0.8.3 0.8.4 0.8.5 0.8.5.post1 0.9.0 0.9.0.1 0.9.1 0.9.2 0.10.0 0.10.1 "
    "0.10.1.1 0.10.2 0.11.0 0.11.1 0.11.2 0.12.0 0.13.0 0.14.0 0.14.1 0.15.0 0.15.1 0.16.0 "
    "0.17.0 0.17.1 0.18.0 0.18.1 0.19.0 0.19.1 0.20.0 0.20.1 0.20.2 0.21.0 0.22.0 0.22.1 0.23.0 "
    "0.24.0 0.25.0 0.25.1 0.26.0 0.27.0 0.27.1 0.28.0 0.29.0 0.30.0 0.31.0 0.32.0 0.33.0 0.34.0",
)
"""What `pip index versions vllm` lists (final releases), when this was written."""
ERAS = Path(__file__).resolve().parent.parent / "fixtures" / "eras"
GOOD_TREES = [ERAS / "e2_stub", ERAS / "e3_mixin"]


def test_the_documented_ranges_fit_under_the_cap() -> None:
    from eagle3lint.matrix.columns import expand_specs

    assert len(PYPI_FINAL_RELEASES) == 101
    assert len(expand_specs(["0.11.0..0.33.0"], PYPI_FINAL_RELEASES)) == 35
    assert len(expand_specs(["0.11.0..latest"], PYPI_FINAL_RELEASES)) == 36


def test_a_range_past_the_cap_is_a_usage_error_before_any_download(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from eagle3lint.engines.vllm.wing import VllmWing

    monkeypatch.setattr(VllmWing, "list_releases", lambda *_: list(PYPI_FINAL_RELEASES))

    def no_download(*_: object) -> None:
        raise AssertionError("a release was fetched")

    monkeypatch.setattr(VllmWing, "fetch_release", no_download)
    with no_hang(60):
        result = CliRunner().invoke(app, ["matrix", "--vllm", "0.0.0..99.0.0"])
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert "the range holds 101 releases, more than the 50 one range may expand to" in (
        result.output
    )
    assert "--vllm 0.8.1..0.34.0 holds the newest 50" in result.output


def fifo_contract_tree(root: Path) -> Path:
    """A tree whose `interfaces.py` is a FIFO: its contract cannot be read."""
    import os

    vllm = write_vllm_tree(root)
    interfaces = vllm / "model_executor" / "models" / "interfaces.py"
    interfaces.unlink()
    os.mkfifo(interfaces)
    return root


def unreachable_index(monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    from eagle3lint.sources import wheels as download

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv(download.INDEX_ENV, f"http://127.0.0.1:{port}/simple")


def run_matrix(*args: str) -> tuple[int, str, str]:
    with no_hang(120):
        result = CliRunner().invoke(app, ["matrix", *args])
    assert "Traceback" not in result.output
    return result.exit_code, result.stdout, result.stderr


def good_matrix() -> dict[str, Any]:
    code, output, _ = run_matrix(*map(str, GOOD_TREES), "--format", "json", "--jobs", "1")
    assert code == 0
    return json.loads(output)


@pytest.fixture
def failing_column(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[list[str], str]:
    """(matrix arguments adding one release that cannot be checked, its label)."""
    how = request.param
    monkeypatch.setenv("EAGLE3LINT_CACHE_DIR", str(tmp_path / "cache"))
    if how == "download refused":
        unreachable_index(monkeypatch)
        return ["--vllm", "9.9.0"], "9.9.0"
    if how == "wheel not the published one":
        from test_hostile import TAMPERED_MODEL, WHEEL_NAME, wheel

        index = request.getfixturevalue("index")
        request.getfixturevalue("offline_pip")
        url, root = index
        wheel(root / "files" / WHEEL_NAME, TAMPERED_MODEL)
        monkeypatch.setenv("PIP_INDEX_URL", url)
        monkeypatch.setenv("EAGLE3LINT_INDEX_URL", url)
        return ["--vllm", "9.9.0"], "9.9.0"
    if how == "contract unreadable":
        return [str(fifo_contract_tree(tmp_path / "fifo"))], str(tmp_path / "fifo")
    broken = tmp_path / "broken"
    write_vllm_tree(broken)
    from eagle3lint.commands import check

    monkeypatch.setenv(BROKEN_ENV, f"{broken}\n{how}")
    monkeypatch.setattr(check, "check_json", check_failing_on_broken)
    return [str(broken)], str(broken)


BROKEN_ENV = "EAGLE3LINT_TEST_BROKEN"
"""The tree `check_failing_on_broken` fails on, and how (`check raises`, `worker dies`): two
lines."""


def check_failing_on_broken(options: Any) -> dict[str, Any]:
    """`commands.check.check_json`, except on the tree named by BROKEN_ENV (a module-level
    function: the matrix's pool pickles it by name)."""
    import os

    path, how = os.environ[BROKEN_ENV].split("\n")
    if Path(path) in options.paths:
        if how == "worker dies":
            os._exit(3)
        raise RuntimeError("boom")
    return real_check_json(options)


FAILURES = [
    ("download refused", "1"),
    ("wheel not the published one", "1"),
    ("contract unreadable", "1"),
    ("contract unreadable", "2"),
    ("check raises", "1"),
    ("check raises", "2"),
    ("worker dies", "2"),
]
"""How a release fails, and the jobs: with two, the failing (last) release runs in the pool."""


@pytest.mark.parametrize(
    ("failing_column", "jobs"), FAILURES, indirect=["failing_column"], ids=map(" ".join, FAILURES)
)
def test_a_release_that_fails_is_a_column_of_errors(
    failing_column: tuple[list[str], str], jobs: str
) -> None:
    args, label = failing_column
    expected = good_matrix()
    trees = [*map(str, GOOD_TREES), *args]
    code, output, stderr = run_matrix(*trees, "--format", "json", "--jobs", jobs)
    assert code == 2
    data = json.loads(output)
    releases = {r["label"]: r for r in data["releases"]}
    assert releases[label]["checked"] is False
    assert releases[label]["errors"][0].startswith(("EAG902 ", "EAG903 "))
    assert f"eagle3lint: {printable(label)} could not be checked: EAG90" in stderr
    rows = {row["arch"]: row for row in data["rows"]}
    assert set(rows) == {row["arch"] for row in expected["rows"]}
    for row in expected["rows"]:
        cells = rows[row["arch"]]["cells"]
        assert cells.pop(label) == {"status": "error", "codes": []}
        assert cells == row["cells"]
    for output_format, mark in [("text", "error"), ("markdown", "! error"), ("csv", "error")]:
        code, output, _ = run_matrix(*trees, "--format", output_format, "--jobs", jobs)
        assert code == 2
        assert mark in output


def test_the_progress_lines_of_a_matrix_read_no_markup_in_a_release_name() -> None:
    from rich.console import Console

    from eagle3lint.matrix.status import ReleaseProgress

    progress = ReleaseProgress(["tree[/]::error::x\x1b[2J", "0.16.0"], enabled=True)
    progress.event((0, "analysing", 20))
    progress.done(0, {"errors": [{"code": "EAG902"}], "targets": []})
    console = Console(file=io.StringIO(), width=100)
    console.print(progress._progress.make_tasks_table(progress._progress.tasks))  # type: ignore[union-attr]
    shown = console.file.getvalue()  # type: ignore[attr-defined]
    assert "tree[/]\\x3a:error\\x3a:x\\x1b[2J" in shown and "could not be checked" in shown


def test_a_named_pipe_stays_a_pipe_and_gets_the_whole_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Renamed over, `-o /dev/null` made /dev/null a regular file for the whole machine (seen
    2026-12-07): a device or a pipe is written to, as a shell redirection would."""
    write_vllm_tree(tmp_path)
    monkeypatch.chdir(tmp_path)
    fifo = tmp_path / "report.pipe"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    result = CliRunner().invoke(app, ["check", "vllm", "--format", "json", "-o", str(fifo)])
    reader.join(timeout=30)
    assert result.exit_code in (0, 1), result.output
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert json.loads(received[0])


def test_a_baseline_is_never_a_pipe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A baseline is read before it is written: a pipe is refused, and stays a pipe."""
    write_vllm_tree(tmp_path)
    monkeypatch.chdir(tmp_path)
    os.mkfifo(tmp_path / "baseline.json")
    result = CliRunner().invoke(app, ["check", "vllm", "--write-baseline", "baseline.json"])
    assert result.exit_code == 2
    assert "FIFO" in result.output and "Traceback" not in result.output
    assert stat.S_ISFIFO(os.lstat(tmp_path / "baseline.json").st_mode)


@pytest.mark.parametrize("option", ["--output", "--write-baseline"])
def test_a_symbolic_link_is_written_through(
    option: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_vllm_tree(tmp_path)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "kept").mkdir()
    link = tmp_path / "report.json"
    link.symlink_to(Path("kept", "real.json"))
    result = CliRunner().invoke(app, ["check", "vllm", "--format", "json", option, str(link)])
    assert result.exit_code in (0, 1), result.output
    assert link.is_symlink()
    assert json.loads((tmp_path / "kept" / "real.json").read_text())


def test_a_folder_named_as_the_output_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_vllm_tree(tmp_path)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "out").mkdir()
    result = CliRunner().invoke(app, ["check", "vllm", "-o", "out"])
    assert result.exit_code == 2
    assert "--output out:" in result.output and "Traceback" not in result.output
