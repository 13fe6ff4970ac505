"""The whole-run cache of `check`: reused only while every input is unchanged."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

import eagle3lint.engine
import eagle3lint.runcache
import eagle3lint.sources.files
from eagle3lint.cli import app
from eagle3lint.index.parsing import ParsesAhead
from eagle3lint.sources.files import SETTLED_NS, stamp_now, stamp_of

ERA = Path(__file__).resolve().parent.parent / "fixtures" / "eras" / "e2_stub"
runner = CliRunner()


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("EAGLE3LINT_CACHE_DIR", str(tmp_path / "cache"))
    shutil.copytree(ERA, tmp_path / "tree")
    return tmp_path / "tree" / "vllm"


@pytest.fixture
def runs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the checks that really ran (not answered from the cache)."""
    calls: list[int] = []
    real = eagle3lint.engine.run_check

    def counted(*args: object, **kwargs: object) -> object:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(eagle3lint.engine, "run_check", counted)
    return calls


def check(root: Path, *args: str) -> str:
    result = runner.invoke(app, ["check", str(root), "--format", "json", *args])
    assert result.exit_code in (0, 1), result.output
    return result.stdout


def test_unchanged_tree_is_answered_from_the_cache(tree: Path, runs: list[int]) -> None:
    first = check(tree)
    assert check(tree) == first
    assert len(runs) == 1
    assert check(tree, "--no-cache") == first
    assert len(runs) == 2


def test_other_options_are_other_entries(tree: Path, runs: list[int]) -> None:
    check(tree)
    check(tree, "--select", "EAG1")
    check(tree, "--model-type", "kimi_k2")
    assert len(runs) == 3


def test_an_edited_input_invalidates(tree: Path, runs: list[int]) -> None:
    first = check(tree)
    model = tree / "model_executor" / "models" / "no_protocol.py"
    text = model.read_text()
    model.write_text(
        text.replace("import SupportsEagle,", "import SupportsEagle, SupportsEagle3,").replace(
            "SupportsPP, SupportsEagle):", "SupportsPP, SupportsEagle, SupportsEagle3):"
        )
    )
    assert model.read_text() != text
    assert check(tree) != first
    assert len(runs) == 2


def test_a_new_file_where_a_module_was_looked_for_invalidates(tree: Path, runs: list[int]) -> None:
    check(tree)
    # Model files import `.utils`-style helpers that this tree does not have; the run looked
    # for them, so creating one must count as a change.
    from eagle3lint.index.cache import default_cache_dir

    entry = next((default_cache_dir() / "runs").glob("*.json"))
    # Only one under the tree: the run also notes where transformers is not installed (beside
    # the tree, which is not under it).
    absent = [p for p in json.loads(entry.read_text())["absent"] if Path(p).is_relative_to(tree)]
    assert absent
    Path(absent[0]).parent.mkdir(parents=True, exist_ok=True)
    Path(absent[0]).write_text("")
    check(tree)
    assert len(runs) == 2


def test_colour_never_leaks_into_piped_output(
    tree: Path, runs: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A coloured run (FORCE_COLOR, --color always) is another entry: piped text stays plain."""
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setenv("FORCE_COLOR", "1")
    forced = runner.invoke(app, ["check", str(tree)]).stdout
    assert "\x1b[" in forced
    monkeypatch.delenv("FORCE_COLOR")
    always = runner.invoke(app, ["check", str(tree), "--color", "always"]).stdout
    assert "\x1b[" in always
    plain = runner.invoke(app, ["check", str(tree)]).stdout
    assert "\x1b[" not in plain
    assert len(runs) == 2  # --color always under FORCE_COLOR's output: the same bytes, one entry
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert "\x1b[" not in runner.invoke(app, ["check", str(tree)]).stdout


def test_contract_files_read_outside_the_index_are_inputs(tree: Path, runs: list[int]) -> None:
    first = check(tree)
    # The runner is read as text for the getter it calls; the config registry file is absent.
    runner_file = tree / "v1" / "worker" / "gpu_model_runner.py"
    runner_file.write_text(runner_file.read_text() + "# edited\n")
    assert check(tree) == first
    assert len(runs) == 2
    registry = tree / "transformers_utils" / "config.py"
    assert not registry.exists()
    registry.write_text("_CONFIG_REGISTRY = {\n}\n")
    check(tree)
    assert len(runs) == 3


def test_an_hf_config_folder_is_keyed_by_its_config_json(
    tree: Path, runs: list[int], tmp_path: Path
) -> None:
    folder = tmp_path / "checkpoint"
    folder.mkdir()
    config = folder / "config.json"
    config.write_text(json.dumps({"model_type": "llama"}))
    first = check(tree, "--hf-config", str(folder))
    assert check(tree, "--hf-config", str(folder)) == first
    assert len(runs) == 1
    config.write_text(json.dumps({"model_type": "kimi_k2"}))
    assert check(tree, "--hf-config", str(folder)) != first
    assert len(runs) == 2


def claiming(text: str) -> str:
    """no_protocol.py's text with its model claiming EAGLE-3 support (other findings)."""
    return text.replace("import SupportsEagle,", "import SupportsEagle, SupportsEagle3,").replace(
        "SupportsPP, SupportsEagle):", "SupportsPP, SupportsEagle, SupportsEagle3):"
    )


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[tuple[dict[str, str], ParsesAhead]]:
    """Records each `ParsesAhead.start`: the files it was given, and the object (whose
    `started` an index empties as it takes the parses over)."""
    calls: list[tuple[dict[str, str], ParsesAhead]] = []
    real = ParsesAhead.start

    def recorded(self: ParsesAhead, files: dict[str, str]) -> None:
        calls.append((dict(files), self))
        real(self, files)

    monkeypatch.setattr(ParsesAhead, "start", recorded)
    return calls


def _edit_and_check_taken_over(
    tree: Path, started: list[tuple[dict[str, str], ParsesAhead]]
) -> None:
    """Edit one model file, check: its parse started ahead, the run took it over, and the
    result is what a check without any cache gives."""
    model = tree / "model_executor" / "models" / "no_protocol.py"
    model.write_text(claiming(model.read_text()))
    edited = check(tree, "--jobs", "2")
    assert [files for files, _ in started] == [
        {str(model): "vllm/model_executor/models/no_protocol.py"}
    ]
    assert started[0][1].started == {}  # the run took the parse over
    assert edited == check(tree, "--no-cache")


def test_an_edited_file_is_parsed_from_the_start_and_used(
    tree: Path, started: list[tuple[dict[str, str], ParsesAhead]]
) -> None:
    check(tree, "--jobs", "2")
    _edit_and_check_taken_over(tree, started)


def test_a_parse_started_ahead_of_another_edit_is_not_used(
    tree: Path, started: list[tuple[dict[str, str], ParsesAhead]], monkeypatch: pytest.MonkeyPatch
) -> None:
    first = check(tree, "--jobs", "2")
    model = tree / "model_executor" / "models" / "no_protocol.py"
    text = model.read_text()
    model.write_text(claiming(text))
    assert check(tree, "--no-cache") != first
    real = ParsesAhead.start

    def edited_again(self: ParsesAhead, files: dict[str, str]) -> None:
        real(self, files)  # parses the edit above, which the run will not read
        model.write_text(text + "# a comment only\n")

    monkeypatch.setattr(ParsesAhead, "start", edited_again)
    assert check(tree, "--jobs", "2") == first


def test_files_settled_before_the_run_are_not_read_again(
    tree: Path, runs: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every file counts as settled (the copy was just made): their stamps are kept.
    monkeypatch.setattr(eagle3lint.sources.files, "SETTLED_NS", 0)
    first = check(tree)
    reads: list[Path] = []
    real = eagle3lint.runcache.read_source_bytes

    def counted(path: Path) -> bytes:
        reads.append(path)
        return real(path)

    monkeypatch.setattr(eagle3lint.runcache, "read_source_bytes", counted)
    assert check(tree) == first
    assert reads == []
    model = tree / "model_executor" / "models" / "no_protocol.py"
    model.write_text(claiming(model.read_text()))
    assert check(tree) != first
    assert reads == [model]
    assert len(runs) == 2


def test_a_file_changed_just_before_it_is_read_has_no_stamp(tmp_path: Path) -> None:
    path = tmp_path / "model.py"
    path.write_text("x = 1\n")
    info = os.stat(path)
    assert stamp_of(info, info.st_ctime_ns + SETTLED_NS - 1) is None
    assert stamp_of(info, info.st_ctime_ns - 1) is None  # a clock set back
    assert stamp_of(info, info.st_ctime_ns + SETTLED_NS) == stamp_now(path)


def test_parses_started_for_another_entry_are_used(
    tree: Path, started: list[tuple[dict[str, str], ParsesAhead]]
) -> None:
    check(tree, "--jobs", "2")
    # The same command line, other options (from the tree's configuration): another entry.
    (tree / "eagle3lint.toml").write_text('ignore = ["EAG5"]\n')
    _edit_and_check_taken_over(tree, started)


def test_a_second_process_is_answered_from_the_cache(tree: Path) -> None:
    """What a hook sees: each run is a new process, so the key must hold nothing that differs
    between processes (an object's address did, and every run missed)."""
    import subprocess
    import sys

    def run() -> str:
        done = subprocess.run(
            [sys.executable, "-m", "eagle3lint", "check", str(tree), "--format", "json"],
            capture_output=True,
            text=True,
            env=os.environ,
        )
        assert done.returncode in (0, 1), done.stderr
        return done.stdout

    assert run() == run()
    entries = list((tree.parent.parent / "cache" / "runs").glob("*.json"))
    assert len(entries) == 1, entries  # the second run stored nothing new: it replayed


MODELS = Path("model_executor/models")


@pytest.mark.parametrize(
    ("addition", "replayed"),
    [
        ("# a harmless comment\n\n   # and an indented one\n", True),
        ("# eagle3lint: ignore[EAG301]\n", False),  # a suppression may silence a finding
        ("x = 1\n", False),
        ("'''# not a comment'''\n", False),
    ],
)
def test_comments_appended_to_a_model_file_replay_the_run(
    tree: Path, runs: list[int], addition: str, replayed: bool
) -> None:
    """The commonest harmless edit changes nothing a check reads: no new run. Anything else
    that may (code, a suppression) is a run."""
    model = tree / MODELS / "rank_local.py"
    check(tree)
    model.write_text(model.read_text() + addition)
    after = check(tree)
    assert len(runs) == (1 if replayed else 2)
    assert after == check(tree, "--no-cache")  # what a run says of the file as it is now
    if replayed:
        check(tree)  # the entry now holds the file as it is: no run, no comparison to redo
        assert len(runs) == 2


def test_a_comment_joined_to_an_unended_last_line_is_a_run(tree: Path, runs: list[int]) -> None:
    model = tree / MODELS / "rank_local.py"
    model.write_text(model.read_text().rstrip("\n"))
    check(tree)
    model.write_text(model.read_text() + "  # now the last line's text changed\n")
    check(tree)
    assert len(runs) == 2


def test_comments_appended_to_a_file_fix_would_edit_are_a_run(tree: Path, runs: list[int]) -> None:
    """`[*]` promises a repair planned on the file's bytes: they are planned again."""
    model = tree / MODELS / "no_tap.py"
    check(tree, "--require", "*")
    model.write_text(model.read_text() + "# a comment\n")
    check(tree, "--require", "*")
    assert len(runs) == 2


def _moved(text: str, edit: str) -> str:
    lines = text.splitlines(keepends=True)
    loop = next(i for i, line in enumerate(lines) if "aux_hidden_states = []" in line)
    docstring = next(i for i, line in enumerate(lines) if "Stub era:" in line)
    return {
        "comment at the top": "# a note\n" + text,
        "comment and blank line in a function": "".join(
            [*lines[: loop + 1], "\n", "        # why the taps go here\n", *lines[loop + 1 :]]
        ),
        "comment removed": "".join(lines[1:]),
        "comment inside the docstring": "".join(
            [*lines[: docstring + 1], "# read as text\n", *lines[docstring + 1 :]]
        ),
        "comment added to a code line": text.replace(
            "aux_hidden_states = []", "aux_hidden_states = []  # the taps"
        ),
        "suppression line": "# eagle3lint: ignore[EAG301]\n" + text,
        "code": text.replace("aux_hidden_states = []", "aux_hidden_states = [] * 1"),
    }[edit]


@pytest.mark.parametrize(
    ("edit", "replayed"),
    [
        ("comment at the top", True),
        ("comment and blank line in a function", True),
        ("comment removed", True),
        ("comment inside the docstring", False),  # a string's text is code
        ("comment added to a code line", False),  # a fingerprint quotes the line's text
        ("suppression line", False),
        ("code", False),
    ],
)
def test_comment_lines_moved_in_a_given_file_replay_the_run(
    tree: Path, runs: list[int], edit: str, replayed: bool
) -> None:
    """What pre-commit does: the file given again after a harmless edit anywhere in it. Its
    line numbers move, but the output names none of its lines: the run is replayed. The
    targets that read it are reported, each finding noting that they read it (a name, no
    line); annotations, as the text format's "Next:" commands name the file."""
    model = tree / MODELS / "good_llama.py"
    check(model, "--format", "github")
    model.write_text(_moved(model.read_text(), edit))
    after = check(model, "--format", "github")
    assert "good_llama.py (changed)" in after
    assert len(runs) == (1 if replayed else 2)
    assert after == check(model, "--format", "github", "--no-cache")


def test_comment_lines_moved_in_a_file_the_output_names_are_a_run(
    tree: Path, runs: list[int]
) -> None:
    """Its findings' line numbers move with the comment: the run says where they are now."""
    model = tree / MODELS / "rank_local.py"
    before = check(model, "--format", "text")
    assert "rank_local.py:58:" in before
    model.write_text("# a note\n" + model.read_text())
    after = check(model, "--format", "text")
    assert len(runs) == 2
    assert "rank_local.py:59:" in after


def test_a_file_a_message_quotes_may_not_move(tree: Path) -> None:
    """A message quoting `path:line` of a file (a baselined finding's too, matched by its
    message) would change if the file's lines moved."""
    from dataclasses import replace

    from eagle3lint.engine import CheckOptions, run_check
    from eagle3lint.runcache import Manifest, _unquoted_code_lines

    model = tree / MODELS / "good_llama.py"
    run = run_check(CheckOptions(paths=[model]))
    manifest = Manifest(*run.index.inputs())
    assert list(_unquoted_code_lines(run, "", manifest)) == [str(model)]
    quoting = replace(run.every_finding[0], message="gate (good_llama.py:12)")
    run.every_finding.append(quoting)
    assert _unquoted_code_lines(run, "", manifest) == {}
    assert _unquoted_code_lines(replace(run, every_finding=[]), "good_llama.py", manifest) == {}
