"""Bad input never crashes `check`: each bad file is a named error, the rest is still analysed.

Most cases put one bad file next to a good out-of-tree model file and check the folder: the
report must name the bad file under `errors` (exit 2) and still hold the good model's target.
"""

from __future__ import annotations

import ast
import json
import os
import stat
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import libcst as cst
import pytest
from planning import plan_edits
from typer.testing import CliRunner, Result
from vllm_tree import ARCH, LLAMA, MODEL_FILE, write_vllm_tree

from eagle3lint.checkrun import judging
from eagle3lint.cli import app
from eagle3lint.codemod import registry
from eagle3lint.engine import CheckOptions, run_check
from eagle3lint.engines.vllm.targets import Target
from eagle3lint.engines.vllm.wing import VllmWing
from eagle3lint.findings import Finding, Severity
from eagle3lint.fixer import write_edits
from eagle3lint.plans import FileEdit
from eagle3lint.rule import Code, Rule, RuleContext, load_rules
from eagle3lint.sources.files import (
    MAX_FILE_BYTES,
    MAX_NESTING,
    TooDeeplyNested,
    UnreadableSource,
    decode_source,
    read_source,
)

Report = dict[str, Any]
NOBODY = 65534


def check(*args: str) -> tuple[int, Report]:
    """`eagle3lint check ARGS --format json` in-process: exit code and report (every target
    asked about: the test model claims no EAGLE-3 support, its blockers are what is checked)."""
    result = CliRunner().invoke(
        app, ["check", *args, "--format", "json", "--no-cache", "--jobs", "1", "--require", "*"]
    )
    assert "Traceback" not in result.output
    assert result.exit_code in (0, 1, 2), result.output
    return result.exit_code, json.loads(result.stdout)


def error_for(report: Report, path: Path) -> dict[str, Any]:
    [error] = [e for e in report["errors"] if e["path"] == str(path)]
    return error


def archs(report: Report) -> list[str]:
    return [t["arch"] for t in report["targets"]]


def deep(n: int) -> bytes:
    return b"x = " + b"(" * n + b"1" + b")" * n + b"\n"


BAD_FILES = {
    "syntax": (b"class Broken(:\n    pass\n", "EAG901", "syntax error"),
    "nul_bytes": (b"x = 1\n\x00\x01\x02\n", "EAG902", "binary file (contains NUL bytes)"),
    "png": (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "EAG902", "binary file"),
    "not_utf8": (b"x = '\xe9t\xe9'\n", "EAG902", "cannot decode"),
    "unknown_cookie": (b"# -*- coding: klingon -*-\nx = 1\n", "EAG902", "cannot decode"),
    "nested_brackets": (deep(5000), "EAG901", "too deeply nested"),
    "operator_chain": (b"x = " + b"a + " * 20_000 + b"a\n", "EAG901", "too deeply nested"),
    "elif_chain": (b"if a:\n    pass\n" + b"elif b:\n    pass\n" * 10_000, "EAG901", "elif"),
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_a_bad_file_is_a_named_error_and_the_rest_is_analysed(models: Path, name: str) -> None:
    data, code, message = BAD_FILES[name]
    bad = models / f"{name}.py"
    bad.write_bytes(data)
    exit_code, report = check(str(models))
    assert exit_code == 2
    error = error_for(report, bad)
    assert error["code"] == code
    assert message in error["message"]
    assert archs(report) == [ARCH]


def test_a_syntax_error_gives_its_line(models: Path) -> None:
    bad = models / "broken.py"
    bad.write_text("import torch\n\n\nclass BrokenForCausalLM(nn.Module:\n    pass\n")
    _, report = check(str(models))
    assert error_for(report, bad)["line"] == 4


def test_a_latin1_cookie_is_honoured(models: Path) -> None:
    """PEP 263: a latin-1 file with non-ASCII text is analysed, not refused as undecodable."""
    source = "# -*- coding: latin-1 -*-\n" + LLAMA.replace(
        "class LlamaModel(nn.Module):\n", 'class LlamaModel(nn.Module):\n    """Modèle à café."""\n'
    )
    model = models / "latin.py"
    model.write_bytes(source.replace("LlamaForCausalLM", "LatinForCausalLM").encode("latin-1"))
    assert b"\xe8" in model.read_bytes()  # not valid UTF-8: only the cookie makes it readable
    exit_code, report = check(str(models))
    assert report["errors"] == []
    assert exit_code == 1
    assert sorted(archs(report)) == ["LatinForCausalLM", ARCH]
    assert decode_source(model.read_bytes()).count("Modèle à café") == 1


def test_a_utf8_bom_is_read_with_the_same_lines(models: Path) -> None:
    _, plain = check(str(models))
    good = models / "good.py"
    good.write_bytes(b"\xef\xbb\xbf" + good.read_bytes())
    exit_code, with_bom = check(str(models))
    assert with_bom["errors"] == []
    assert exit_code == 1
    assert with_bom["targets"] == plain["targets"]


def test_an_empty_file_is_no_error(models: Path) -> None:
    (models / "empty.py").write_bytes(b"")
    exit_code, report = check(str(models))
    assert report["errors"] == []
    assert exit_code == 1
    assert archs(report) == [ARCH]


def test_a_10_mb_generated_file_is_reported_at_once(models: Path) -> None:
    huge = models / "generated.py"
    line = b"WEIGHTS_%07d = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]\n"
    with huge.open("wb") as out:
        for i in range(10 * 2**20 // len(line % 0) + 1):
            out.write(line % i)
    assert huge.stat().st_size > 10 * 2**20
    start = time.monotonic()
    exit_code, report = check(str(models))
    assert time.monotonic() - start < 10
    assert exit_code == 2
    assert "MiB limit" in error_for(report, huge)["message"]
    assert archs(report) == [ARCH]


@pytest.mark.slow  # 40 s of CPU: the file is a quarter of the limit, the size at stake
def test_a_large_file_under_the_limit_is_analysed_in_reasonable_time(models: Path) -> None:
    copies = MAX_FILE_BYTES // 4 // len(LLAMA)
    body = "".join(
        LLAMA.replace("LlamaModel", f"Llama{i}Model").replace(ARCH, f"Llama{i}ForCausalLM")
        for i in range(copies)
    )
    (models / "good.py").write_text(body)
    start = time.monotonic()
    exit_code, report = check(str(models))
    assert time.monotonic() - start < 60
    assert report["errors"] == []
    assert exit_code == 1
    assert len(report["targets"]) == copies


NESTING = {
    "brackets": deep(100_000),
    "lists": b"x = " + b"[" * 100_000 + b"]" * 100_000 + b"\n",
    "nots": b"x = " + b"not " * 100_000 + b"y\n",
    "unary": b"x = " + b"-" * 100_000 + b"1\n",
    "attributes": b"x = a" + b".b" * 100_000 + b"\n",
    "calls": b"x = f" + b"()" * 100_000 + b"\n",
    "ternaries": b"x = " + b"a if b else " * 100_000 + b"c\n",
    "lambdas": b"x = " + b"lambda a, b: " * 100_000 + b"1\n",
    "chained_in_brackets": b"x = " + b"1 + 1 + f(0, " * 20_000 + b"1" + b")" * 20_000 + b"\n",
    "indentation": b"".join(b" " * i + b"if x:\n" for i in range(1000)) + b" " * 1000 + b"pass\n",
    "elifs": b"if a:\n    pass\n" + b"elif b:\n    pass\n" * 100_000,
}


def test_deep_nesting_never_crashes_the_parser(tmp_path: Path) -> None:
    """libcst's native parser overflows the C stack (a segfault, no exception) on deep nesting
    and needs minutes for long chains: every shape is refused before it is parsed. Run in a
    subprocess, so that a regression fails this test instead of killing the test session."""
    folder = tmp_path / "nested"
    folder.mkdir()
    for name, data in NESTING.items():
        (folder / f"{name}.py").write_bytes(data)
    (folder / "fine.py").write_bytes(deep(150) + LLAMA.encode())
    result = subprocess.run(
        [sys.executable, "-m", "eagle3lint", "check", str(folder), "--no-cache", "--format=json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    report = json.loads(result.stdout)
    assert archs(report) == [ARCH]
    for name in NESTING:
        error = error_for(report, folder / f"{name}.py")
        assert error["code"] == "EAG901", error
        assert "too deeply nested" in error["message"] or "syntax error" in error["message"]


def test_no_file_of_a_real_release_is_refused(vllm_release: Callable[[str], Path]) -> None:
    """The limits are far from real code: vLLM 0.33's deepest line nests 77 levels."""
    refused = []
    for path in sorted(vllm_release("0.33.0").rglob("*.py")):
        data = path.read_bytes()
        assert len(data) < MAX_FILE_BYTES // 4, path
        try:
            decode_source(data)
        except TooDeeplyNested as exc:
            refused.append(f"{path}: {exc}")
    assert not refused
    assert MAX_NESTING >= 4 * 77


@pytest.fixture
def loops(models: Path) -> Path:
    """Symlinks that lead nowhere next to the good model: a file loop, a dangling link, and a
    folder link back up (a walk that followed it would never end)."""
    (models / "self.py").symlink_to("self.py")
    (models / "dangling.py").symlink_to("gone.py")
    (models / "sub").mkdir()
    (models / "sub" / "up").symlink_to("..", target_is_directory=True)
    return models


def test_symlink_loops_and_dangling_links_are_named(loops: Path) -> None:
    exit_code, report = check(str(loops))
    assert exit_code == 2
    assert error_for(report, loops / "self.py")["message"] == "too many levels of symbolic links"
    assert error_for(report, loops / "dangling.py")["message"] == "no such file or directory"
    assert archs(report) == [ARCH]


def test_a_symlink_loop_given_as_a_path_is_named(loops: Path) -> None:
    exit_code, report = check(str(loops / "self.py"), str(loops / "good.py"))
    assert exit_code == 2
    assert error_for(report, loops / "self.py")["code"] == "EAG902"
    assert "symbolic links" in error_for(report, loops / "self.py")["message"]
    assert archs(report) == [ARCH]


def test_a_missing_path_is_named(models: Path) -> None:
    missing = models / "nothere.py"
    exit_code, report = check(str(models / "good.py"), str(missing))
    assert exit_code == 2
    assert error_for(report, missing) == {
        "path": str(missing),
        "line": None,
        "code": "EAG902",
        "message": "no such file or directory",
    }
    assert archs(report) == [ARCH]


def test_only_missing_paths_exit_2(tmp_path: Path) -> None:
    exit_code, report = check(str(tmp_path / "a.py"), str(tmp_path / "b"))
    assert exit_code == 2
    assert len(report["errors"]) == 2


def as_user(uid: int, action: Callable[[], Any]) -> Any:
    """`action()` in a forked child that runs as `uid`: root may read any file, whatever its
    mode, so an unreadable file only exists for another user. The result comes back as JSON."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        status = 0
        try:
            os.close(read_end)
            os.setgid(uid)
            os.setuid(uid)
            payload = {"result": action()}
        except BaseException:
            payload = {"error": traceback.format_exc()}
            status = 1
        with os.fdopen(write_end, "w") as out:
            json.dump(payload, out)
        os._exit(status)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        payload = json.loads(pipe.read() or "{}")
    os.waitpid(pid, 0)
    if "error" in payload:
        if "PermissionError" in payload["error"] and "setuid" in payload["error"]:
            pytest.skip("this system does not let root switch users")
        pytest.fail(payload["error"])
    return payload["result"]


def test_an_unreadable_file_is_named(shared_tmp: Path) -> None:
    models = shared_tmp / "models"
    models.mkdir(mode=0o755)
    (models / "good.py").write_text(LLAMA)
    secret = models / "secret.py"
    secret.write_text(LLAMA.replace(ARCH, "SecretForCausalLM"))
    check(str(models))  # everything the command imports lazily is imported before the fork
    secret.chmod(0o000)
    if os.geteuid() == 0:
        exit_code, report = as_user(NOBODY, lambda: check(str(models)))
    else:
        exit_code, report = check(str(models))
    assert exit_code == 2
    assert error_for(report, secret) == {
        "path": str(secret),
        "line": None,
        "code": "EAG902",
        "message": "permission denied",
    }
    assert archs(report) == [ARCH]


def test_a_folder_without_tree_or_models_says_what_was_expected(tmp_path: Path) -> None:
    folder = tmp_path / "helpers"
    folder.mkdir()
    (folder / "utils.py").write_text("def helper() -> int:\n    return 1\n")
    exit_code, report = check(str(folder))
    assert exit_code == 2
    message = error_for(report, folder)["message"]
    assert "no vLLM tree (a folder holding model_executor/models/)" in message
    assert "no model classes" in message and "ForCausalLM" in message
    # Pre-commit passes changed files one by one: a file without a model is no error.
    exit_code, report = check(str(folder / "utils.py"))
    assert (exit_code, report["errors"]) == (0, [])


def test_a_folder_without_python_files_says_what_was_expected(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["check", str(tmp_path), "--no-cache"])
    assert result.exit_code == 2
    assert "no vLLM tree (a folder holding model_executor/models/)" in result.stderr


def test_an_unexpected_exception_is_one_line(models: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_: object, **__: object) -> None:
        raise ValueError("first line\nsecond line")

    # Out-of-tree files: their model classes are what the wing builds targets from.
    monkeypatch.setattr(VllmWing, "file_targets", broken)
    result = CliRunner().invoke(app, ["check", str(models), "--no-cache"])
    assert result.exit_code == 2
    assert result.stderr == (
        "eagle3lint: internal error ValueError: first line (run with --debug for the traceback)\n"
    )
    assert result.stdout == ""
    debug = CliRunner().invoke(app, ["check", str(models), "--no-cache", "--debug"])
    assert debug.exit_code == 2
    assert "Traceback (most recent call last)" in debug.stderr


def test_an_extractor_crash_costs_only_its_file(
    models: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from eagle3lint.index import extract

    summarize = extract.summarize

    def fragile(source: str, relpath: str, *how: object) -> object:
        if relpath == "odd.py":
            raise IndexError("list index out of range")
        return summarize(source, relpath, *how)

    monkeypatch.setattr(extract, "summarize", fragile)
    (models / "odd.py").write_text(LLAMA.replace(ARCH, "OddForCausalLM"))
    exit_code, report = check(str(models))
    assert exit_code == 2
    error = error_for(report, models / "odd.py")
    assert error["code"] == "EAG903"
    assert error["message"] == "internal error while analysing: IndexError: list index out of range"
    assert archs(report) == [ARCH]


def test_an_unreadable_contract_file_is_named_and_no_other_contract_is_used(
    tmp_path: Path,
) -> None:
    vllm = write_vllm_tree(tmp_path)
    speculative = vllm / "config" / "speculative.py"
    speculative.parent.mkdir()
    speculative.write_bytes(b"model_type = 1\n\x00")
    exit_code, report = check(str(vllm))
    assert exit_code == 2
    error = error_for(report, speculative)
    assert error["code"] == "EAG902"
    assert error["message"] == (
        "binary file (contains NUL bytes): the tree's EAGLE-3 contract could not be read, "
        "so no target was checked"
    )
    assert report["vllm"]["details"]["era"] == "unread"
    assert archs(report) == []


class Boom(Rule):
    """A third-party rule with a bug: it raises on every target."""

    slug = "boom"
    plugin = "eagle3lint-boom"
    codes = (Code("BOOM001", "boom", "always raises", Severity.ERROR),)

    def check(self, target: Target, ctx: RuleContext) -> Iterator[Finding]:
        yield from ()
        raise KeyError(target.arch)


def test_a_rule_that_raises_is_an_internal_error_for_that_rule_and_target(models: Path) -> None:
    (models / "other.py").write_text(LLAMA.replace(ARCH, "OtherForCausalLM"))
    options = CheckOptions(paths=[models], use_cache=False, jobs=1, require=["*"])
    builtins = load_rules()
    alone = run_check(options, rules=builtins).report
    with_boom = run_check(options, rules=[builtins[0], Boom, *builtins[1:]]).report

    assert alone.errors == with_boom.errors == []
    assert len(with_boom.targets) == len(alone.targets) == 2
    for before, after in zip(alone.targets, with_boom.targets, strict=True):
        [internal] = [f for f in after.findings if f.code == "EAG903"]
        assert internal.rule == "boom"
        assert internal.severity is Severity.ERROR
        assert internal.message == (
            f"internal error in rule boom for {after.arch}: KeyError: '{after.arch}'"
        )
        assert internal.path == after.path
        # Every other rule still ran, before and after the broken one.
        assert [f for f in after.findings if f.code != "EAG903"] == before.findings
        assert before.findings


def test_unreadable_source_carries_its_code_and_path(tmp_path: Path) -> None:
    nested = tmp_path / "nested.py"
    nested.write_bytes(deep(MAX_NESTING + 1))
    with pytest.raises(TooDeeplyNested) as info:
        read_source(nested)
    assert isinstance(info.value, UnreadableSource)
    assert (info.value.code, info.value.path) == ("EAG901", nested)
    nested.write_bytes(deep(MAX_NESTING - 1))
    assert read_source(nested).startswith("x = ((")


# -- fix never loses data ------------------------------------------------------------------


@pytest.fixture
def fixable(tmp_path: Path) -> Path:
    """A tree whose model `fix` can repair; returns its `vllm` folder."""
    return write_vllm_tree(tmp_path / "checkout")


def fix(*args: str) -> Result:
    result = CliRunner().invoke(app, ["fix", *args, "--no-cache", "--jobs", "1", "--require", "*"])
    assert "Traceback" not in result.output
    return result


def snapshot(folder: Path) -> dict[str, tuple[bytes, int, int]]:
    """Every file under `folder` (temporary ones too): content, mode and modification time."""
    return {
        str(p.relative_to(folder)): (p.read_bytes(), p.stat().st_mode, p.stat().st_mtime_ns)
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def planned(vllm: Path) -> list[FileEdit]:
    """The edits `fix` would make, as it plans them after its check."""
    report = run_check(CheckOptions(paths=[vllm], use_cache=False, jobs=1, require=["*"])).report
    return plan_edits(report)[0]


def test_fix_diff_never_writes(fixable: Path) -> None:
    before = snapshot(fixable.parent)
    result = fix(str(fixable), "--diff")
    assert result.exit_code == 1, result.output
    assert "+    def set_aux_hidden_state_layers" in result.stdout
    assert "1 file(s) would change" in result.stderr
    assert "would change" not in result.stdout  # the patch alone: `fix --diff > fix.patch`
    assert snapshot(fixable.parent) == before


def test_fix_replaces_the_file_atomically_keeping_its_permissions(fixable: Path) -> None:
    model = fixable.parent / MODEL_FILE
    model.chmod(0o640)
    before = model.stat()
    names = sorted(p.name for p in model.parent.iterdir())
    result = fix(str(fixable))
    assert "1 file(s) changed" in result.stdout, result.output
    after = model.stat()
    assert stat.S_IMODE(after.st_mode) == 0o640
    assert after.st_ino != before.st_ino  # a complete new file renamed over the old one
    ast.parse(model.read_bytes())
    assert sorted(p.name for p in model.parent.iterdir()) == names  # no temporary file left


def test_fix_refuses_a_file_that_changed_since_it_was_read(fixable: Path) -> None:
    [edit] = [e for e in planned(fixable) if e.changed]
    users_version = edit.original + b"# saved by the user's editor meanwhile\n"
    edit.path.write_bytes(users_version)
    assert write_edits([edit]) == (
        f"{edit.path} changed on disk since it was read; run fix again; no file written"
    )
    assert edit.path.read_bytes() == users_version


def test_fix_leaves_a_read_only_file_and_says_so(fixable: Path) -> None:
    model = fixable.parent / MODEL_FILE
    model.chmod(0o444)
    before = snapshot(fixable.parent)
    result = fix(str(fixable))
    assert result.exit_code == 2
    assert f"not written: {model} is read-only; no file written\n" in result.stdout
    assert snapshot(fixable.parent) == before


def test_fix_never_writes_a_file_it_cannot_parse(fixable: Path) -> None:
    """The file broke between the check and the rewrite (saved half-edited meanwhile)."""
    model = fixable.parent / MODEL_FILE
    report = run_check(CheckOptions(paths=[fixable], use_cache=False, jobs=1, require=["*"])).report
    model.write_text(LLAMA + "\ndef half_written(:\n")
    edits, skipped = plan_edits(report)
    assert not [e for e in edits if e.changed]
    assert any(f"{model} does not parse" in line for line in skipped), skipped
    assert model.read_text().endswith("def half_written(:\n")


def test_fix_never_writes_a_rewrite_that_does_not_compile(
    fixable: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(module: cst.Module, *_: object) -> cst.Module:
        return module.with_changes(body=[*module.body, cst.SimpleStatementLine([cst.Return()])])

    everything_broken = ({repair: broken for repair in registry.BUILTIN}, ())
    monkeypatch.setattr(registry, "load_codemods", lambda: everything_broken)
    before = snapshot(fixable.parent)
    result = fix(str(fixable))
    assert "the rewritten code does not compile" in result.stdout, result.output
    assert "0 file(s) changed" in result.stdout
    assert result.exit_code == 1
    assert snapshot(fixable.parent) == before


def test_a_plugin_that_fails_to_load_or_start_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A broken third-party pack is an EAG903 input error; the built-in rules still run."""
    from eagle3lint.rule import load_plugins

    rules, _ = load_plugins()

    class Refuses(rules[0]):  # type: ignore[misc, valid-type]
        slug = "refuses-to-start"

        def __init__(self, options: object = None) -> None:
            raise RuntimeError("no options for me")

    monkeypatch.setattr(
        judging, "load_plugins", lambda: ([*rules, Refuses], ["rule plugin bad (x:y) failed"])
    )
    root = write_vllm_tree(tmp_path)
    run = run_check(CheckOptions(paths=[root], use_cache=False))
    messages = [e.message for e in run.report.errors]
    assert any("failed to start" in m for m in messages)
    assert any("rule plugin bad" in m for m in messages)
    assert run.report.targets and run.report.exit_code() == 2
