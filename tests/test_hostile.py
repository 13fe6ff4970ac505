"""Hostile input (issue 13): special files, unreadable contract files, symlinked model files.

Each test reproduces one attack of the hostile-input campaign on a small tree of our own. A
test that would hang before the fix (a FIFO read) is bounded by `no_hang`, so a regression
fails instead of stalling the suite.
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import importlib.util
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from test_robustness import NOBODY, archs, as_user, check, error_for
from typer.testing import CliRunner
from vllm_tree import ARCH, LLAMA, MODEL_FILE, write_vllm_tree

from eagle3lint.cli import app
from eagle3lint.sources import wheels as download
from eagle3lint.sources.files import read_regular


class Hung(Exception):
    """Raised by `no_hang` when the block did not finish in time."""


@contextmanager
def no_hang(seconds: int = 20) -> Iterator[None]:
    """Fail (instead of blocking the suite) when the block runs longer than `seconds`."""

    def expired(*_: object) -> None:
        raise Hung(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def dev_zero(path: Path) -> Path:
    path.symlink_to("/dev/zero")
    return path


def unix_socket(path: Path) -> Path:
    """A socket file (bound by a relative name: socket paths are limited to 108 bytes)."""
    server = socket.socket(socket.AF_UNIX)
    here = os.getcwd()
    os.chdir(path.parent)
    try:
        server.bind(path.name)
    finally:
        os.chdir(here)
        server.close()
    return path


SPECIAL = {
    "fifo": (fifo, "is a FIFO (named pipe), not a regular file"),
    "dev_zero": (dev_zero, "is a character device, not a regular file"),
    "socket": (unix_socket, "is a socket, not a regular file"),
}


def checked(*args: str) -> tuple[int, dict[str, Any]]:
    with no_hang():
        return check(*args)


# -- 2. special files ---------------------------------------------------------------------------
@pytest.mark.parametrize("kind", sorted(SPECIAL))
def test_a_special_file_as_a_model_file_is_named(models: Path, kind: str) -> None:
    make, message = SPECIAL[kind]
    bad = make(models / f"{kind}.py")
    exit_code, report = checked(str(models))
    assert exit_code == 2
    assert error_for(report, bad) == {
        "path": str(bad),
        "line": None,
        "code": "EAG902",
        "message": message,
    }
    assert archs(report) == [ARCH]


@pytest.mark.parametrize("kind", sorted(SPECIAL))
def test_a_special_file_given_as_path_is_named_and_the_other_paths_are_checked(
    models: Path, tmp_path: Path, kind: str
) -> None:
    make, message = SPECIAL[kind]
    bad = make(tmp_path / f"{kind}.py")
    exit_code, report = checked(str(bad), str(models / "good.py"))
    assert exit_code == 2
    assert error_for(report, bad)["message"] == message
    assert archs(report) == [ARCH]


@pytest.mark.parametrize("kind", ["fifo", "dev_zero"])
def test_a_special_file_as_a_contract_file_is_named(tmp_path: Path, kind: str) -> None:
    vllm = write_vllm_tree(tmp_path)
    interfaces = vllm / "model_executor" / "models" / "interfaces.py"
    interfaces.unlink()
    make, message = SPECIAL[kind]
    make(interfaces)
    exit_code, report = checked(str(vllm))
    assert exit_code == 2
    assert error_for(report, interfaces)["message"] == (
        f"{message}: the tree's EAGLE-3 contract could not be read, so no target was checked"
    )
    assert report["vllm"]["details"]["era"] == "unread"
    assert report["targets"] == []


@pytest.mark.parametrize("rel", ["config/speculative.py", "v1/spec_decode/eagle.py"])
def test_a_fifo_as_a_gate_or_proposer_file_is_named(tmp_path: Path, rel: str) -> None:
    vllm = write_vllm_tree(tmp_path)
    (vllm / rel).parent.mkdir(parents=True)
    bad = fifo(vllm / rel)
    exit_code, report = checked(str(vllm), "--jobs", "2")
    assert exit_code == 2
    assert error_for(report, bad)["code"] == "EAG902"
    assert report["targets"] == []


@pytest.mark.parametrize("kind", ["fifo", "dev_zero"])
def test_a_special_file_as_hf_config_is_a_usage_error(
    models: Path, tmp_path: Path, kind: str
) -> None:
    make, message = SPECIAL[kind]
    config = make(tmp_path / "config.json")
    with no_hang():
        result = CliRunner().invoke(app, ["check", str(models), "--hf-config", str(config)])
    assert result.exit_code == 2
    assert f"--hf-config: {config} {message}" in result.output


def test_a_special_file_as_pyproject_is_a_usage_error(
    models: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fifo(tmp_path / "pyproject.toml")
    monkeypatch.chdir(tmp_path)
    with no_hang():
        result = CliRunner().invoke(app, ["check", str(models)])
    assert result.exit_code == 2
    assert "is a FIFO (named pipe), not a regular file" in result.output


def test_reads_stop_at_their_limit_even_when_the_file_grows(tmp_path: Path) -> None:
    """/dev/zero is refused by kind; a regular file is read no further than the limit."""
    big = tmp_path / "big.py"
    big.write_bytes(b"x" * 5000)
    with pytest.raises(Exception, match="over the 4 KiB limit"):
        read_regular(big, 4096)
    assert read_regular(big, 5000) == b"x" * 5000


# -- 3. nothing vanishes silently ------------------------------------------------------------
def test_an_undecodable_model_runner_is_an_error_not_another_contract(tmp_path: Path) -> None:
    vllm = write_vllm_tree(tmp_path)
    runner = vllm / "v1" / "worker" / "gpu_model_runner.py"
    runner.parent.mkdir(parents=True)
    runner.write_bytes(b"x = '\xff'\nself.model.get_eagle3_aux_hidden_state_layers()\n")
    exit_code, report = checked(str(vllm))
    assert exit_code == 2
    assert error_for(report, runner)["code"] == "EAG902"
    assert report["targets"] == []


def test_an_unreadable_interfaces_file_is_an_error_not_an_older_era(shared_tmp: Path) -> None:
    vllm = write_vllm_tree(shared_tmp)
    for folder in [shared_tmp, *(p for p in shared_tmp.rglob("*") if p.is_dir())]:
        folder.chmod(0o755)
    for file in shared_tmp.rglob("*.py"):
        file.chmod(0o644)
    interfaces = vllm / "model_executor" / "models" / "interfaces.py"
    check(str(vllm))
    interfaces.chmod(0o000)
    exit_code, report = as_user(NOBODY, lambda: check(str(vllm)))
    assert exit_code == 2
    assert error_for(report, interfaces)["message"].startswith("permission denied: the tree's")
    assert report["targets"] == []


def test_a_vllm_package_not_named_vllm_is_refused(tmp_path: Path) -> None:
    vllm = write_vllm_tree(tmp_path)
    renamed = vllm.rename(tmp_path / "vllm016")
    result = CliRunner().invoke(app, ["check", str(renamed)])
    assert result.exit_code == 2
    assert "is not named vllm" in result.output


def test_a_tree_without_registered_architectures_is_not_a_clean_run(tmp_path: Path) -> None:
    vllm = write_vllm_tree(tmp_path)
    registry = vllm / "model_executor" / "models" / "registry.py"
    registry.write_text("_VLLM_MODELS = {}\n")
    exit_code, report = checked(str(vllm))
    assert exit_code == 2
    assert error_for(report, registry)["message"] == (
        "no registered architecture was found in this tree's model registry"
    )


@pytest.fixture
def linked_model(tmp_path: Path) -> Path:
    """A tree whose llama.py is a symlink to a file outside the tree."""
    vllm = write_vllm_tree(tmp_path / "tree")
    outside = tmp_path / "elsewhere" / "llama.py"
    outside.parent.mkdir()
    (vllm.parent / MODEL_FILE).rename(outside)
    (vllm.parent / MODEL_FILE).symlink_to(outside)
    return vllm


def test_a_model_file_linked_from_outside_is_checked_in_its_folder(linked_model: Path) -> None:
    models = linked_model / "model_executor" / "models"
    exit_code, report = checked(str(models))
    assert exit_code == 1
    assert archs(report) == [ARCH]


def test_a_linked_model_file_is_checked_against_its_trees_contract(linked_model: Path) -> None:
    link = linked_model.parent / MODEL_FILE
    exit_code, report = checked(str(link))
    assert exit_code == 1
    assert report["vllm"]["contract_source"] == "tree"
    assert report["vllm"]["root"] == str(linked_model)
    assert archs(report) == [ARCH]
    result = CliRunner().invoke(
        app, ["fix", str(link), "--no-cache", "--jobs", "1", "--require", "*"]
    )
    assert result.exit_code == 0, result.output
    fixed = link.read_text()
    # 0.16's idioms: the explicit tap and getter, not 0.18's EagleModelMixin.
    assert "EagleModelMixin" not in fixed
    assert "def get_eagle3_aux_hidden_state_layers" in fixed
    assert link.is_symlink()


def test_an_unreadable_folder_under_a_path_is_named(shared_tmp: Path) -> None:
    models = shared_tmp / "models"
    models.mkdir(mode=0o755)
    (models / "good.py").write_text(LLAMA)
    hidden = models / "hidden"
    hidden.mkdir()
    (hidden / "other.py").write_text(LLAMA.replace(ARCH, "OtherForCausalLM"))
    check(str(models))
    hidden.chmod(0o000)
    exit_code, report = as_user(NOBODY, lambda: check(str(models)))
    assert exit_code == 2
    assert error_for(report, hidden)["message"] == "folder not checked: permission denied"
    assert archs(report) == [ARCH]


def test_an_unreadable_path_does_not_stop_the_other_paths(shared_tmp: Path) -> None:
    models = shared_tmp / "models"
    models.mkdir(mode=0o755)
    (models / "good.py").write_text(LLAMA)
    closed = shared_tmp / "closed"
    closed.mkdir(mode=0o700)
    secret = closed / "secret.py"
    secret.write_text(LLAMA)
    check(str(models))
    exit_code, report = as_user(NOBODY, lambda: check(str(secret), str(models)))
    assert exit_code == 2
    assert error_for(report, secret)["message"] == "permission denied"
    assert archs(report) == [ARCH]


# -- 10. what CPython refuses, and lines as editors count them ---------------------------------
@pytest.mark.parametrize(
    ("source", "line"),
    [
        ("try:\n    pass\nexcept Exception, e:\n    pass\n", 3),
        ('x = 1\nprint "python 2"\n', 2),
        ("def f():\n    return 1\n  x = 2\n", 3),
    ],
)
def test_what_cpython_cannot_compile_is_a_syntax_error(
    models: Path, source: str, line: int
) -> None:
    bad = models / "py2.py"
    bad.write_text("import torch\n" + source)
    exit_code, report = checked(str(models))
    assert exit_code == 2
    error = error_for(report, bad)
    assert (error["code"], error["line"]) == ("EAG901", line + 1)
    assert error["message"].startswith("syntax error: ")
    assert archs(report) == [ARCH]


def locations(report: dict[str, Any]) -> list[tuple[str, int, list[tuple[str, int, int]]]]:
    return [
        (t["arch"], t["line"], [(f["code"], f["line"], f["column"]) for f in t["findings"]])
        for t in report["targets"]
    ]


@pytest.mark.parametrize(
    "variant",
    [
        lambda text: text.replace("\n", "\r"),
        lambda text: text.replace("\n", "\r\n"),
        lambda text: text.replace("\nclass ", "\n\fclass ").replace("    def ", "\f    def "),
    ],
    ids=["lone-cr", "crlf", "form-feed"],
)
def test_line_numbers_are_the_ones_editors_show(models: Path, variant: Any, tmp_path: Path) -> None:
    _, plain = checked(str(models))
    other = tmp_path / "other"
    other.mkdir()
    (other / "good.py").write_bytes(variant(LLAMA).encode())
    exit_code, report = checked(str(other))
    assert exit_code == 1
    assert report["errors"] == []
    assert locations(report) == locations(plain)


# -- 7. file names cannot inject lines -------------------------------------------------------
INJECTED = "x\n::error file=forged.py,line=1::forged\nAll checks passed\x1b[2J\u202e.py"


@pytest.mark.parametrize("output_format", ["text", "github", "sarif", "json"])
def test_a_file_name_cannot_inject_lines_or_escapes(
    models: Path, output_format: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    (models / INJECTED).write_bytes(b"class Broken(:\n")
    monkeypatch.chdir(models)
    result = CliRunner().invoke(
        app, ["check", ".", "--format", output_format, "--no-cache", "--jobs", "1"]
    )
    assert result.exit_code == 2
    lines = result.stdout.splitlines()
    if output_format == "github":
        # One annotation per finding and error; none of them forged.
        assert all(line.startswith(("::error ", "::warning ", "::notice ")) for line in lines)
        assert sum("forged" in line for line in lines) == 1
    else:
        assert not any(line.startswith("::") for line in lines)
        assert not any(line.startswith("All checks passed") for line in lines)
    assert "\x1b" not in result.stdout
    assert "\u202e" not in result.stdout
    if output_format in ("json", "sarif"):
        json.loads(result.stdout)


def test_messages_on_stderr_are_escaped_too(tmp_path: Path) -> None:
    missing = tmp_path / "a\n::error::forged"
    result = CliRunner().invoke(app, ["check", str(missing), "--hf-config", str(missing)])
    assert result.exit_code == 2
    assert not any(line.startswith("::") for line in result.output.splitlines())


# -- 6. plugins cannot break or forge a run ---------------------------------------------------
PLUGIN = """\
import sys

from eagle3lint.findings import Finding, Severity
from eagle3lint.rule import Code, Rule


class Evil(Rule):
    slug = "evil"
    codes = (Code("EVL001", "evil", "an evil rule", Severity.ERROR),)

    def check(self, target, ctx):
        {body}


RULES = [Evil]
"""


def install_plugin(site: Path, source: str, name: str = "evilpack") -> None:
    """What `pip install` leaves for a rule plugin: a module and a dist-info folder that
    declares its entry point."""
    site.mkdir(exist_ok=True)
    (site / f"{name}.py").write_text(source)
    info = site / f"{name}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[eagle3lint.rules]\n{name} = {name}\n")
    (info / "RECORD").write_text("")


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Install a plugin from its source into a site folder on sys.path, for this test only."""
    from eagle3lint.rule import load_plugins

    def install(source: str) -> None:
        install_plugin(tmp_path / "site", source)
        monkeypatch.syspath_prepend(str(tmp_path / "site"))
        load_plugins.cache_clear()

    yield install
    monkeypatch.undo()
    sys.modules.pop("evilpack", None)
    load_plugins.cache_clear()


def check_with_plugin(models: Path, *args: str) -> tuple[int, dict[str, Any], str]:
    """`check MODELS --format json` with every target asked about (`--require *`)."""
    command = ["check", str(models), "--format", "json", "--no-cache", "--jobs", "1"]
    with no_hang():
        result = CliRunner().invoke(app, [*command, "--require", "*", *args])
    assert "Traceback" not in result.output
    return result.exit_code, json.loads(result.stdout), result.stderr


BAD_FINDINGS = {
    "none": ("yield None", "yielded NoneType None, not a Finding"),
    "str": ("yield 'EVL001'", "yielded str 'EVL001', not a Finding"),
    "dict": ("yield {'code': 'EVL001'}", "yielded dict {'code': 'EVL001'}, not a Finding"),
    "code_none": (
        "yield Finding(None, 'evil', Severity.ERROR, 'm', 'p.py', 1)",
        "reported code None, which it does not declare",
    ),
    "line_none": (
        "yield Finding('EVL001', 'evil', Severity.ERROR, 'm', 'p.py', None)",
        "reported line None",
    ),
    "other_code": (
        "yield Finding('EAG101', 'evil', Severity.ERROR, 'm', 'p.py', 1)",
        "reported code 'EAG101', which it does not declare",
    ),
    "exit": ("sys.exit(0)", "internal error in rule evil for {arch}: SystemExit: 0"),
}


@pytest.mark.parametrize("case", sorted(BAD_FINDINGS))
def test_a_plugin_yielding_something_wrong_is_an_internal_error_of_that_rule(
    models: Path, plugin: Any, case: str
) -> None:
    body, message = BAD_FINDINGS[case]
    plugin(PLUGIN.format(body=body))
    exit_code, report, _ = check_with_plugin(models)
    assert exit_code == 1
    [target] = report["targets"]
    [internal] = [f for f in target["findings"] if f["code"] == "EAG903"]
    assert internal["rule"] == "evil"
    assert message.replace("{arch}", ARCH) in internal["message"]
    # The built-in rules still ran.
    assert {"EAG101", "EAG301"} <= {f["code"] for f in target["findings"]}


def test_a_plugin_that_prints_cannot_corrupt_json_or_sarif(models: Path, plugin: Any) -> None:
    plugin("print('{garbage') or 0\n" + PLUGIN.format(body="print('::error::x'); yield from ()"))
    exit_code, report, stderr = check_with_plugin(models)
    assert exit_code == 1
    assert archs(report) == [ARCH]
    assert "{garbage" in stderr and "::error::x" in stderr
    result = CliRunner().invoke(app, ["check", str(models), "--format", "sarif", "--no-cache"])
    json.loads(result.stdout)


def test_a_plugin_stuck_in_a_loop_is_stopped(
    models: Path, plugin: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plugin(PLUGIN.format(body="while True:\n            pass"))
    (tmp_path / "pyproject.toml").write_text("[tool.eagle3lint]\nrule-timeout = 0.5\n")
    monkeypatch.chdir(tmp_path)
    exit_code, report, _ = check_with_plugin(models)
    assert exit_code == 1
    [internal] = [f for f in report["targets"][0]["findings"] if f["code"] == "EAG903"]
    assert internal["message"] == f"rule evil took longer than 0.5 s on {ARCH} (see rule-timeout)"


BAD_DECLARATIONS = {
    "no_slug": (
        PLUGIN.format(body="yield from ()").replace('    slug = "evil"\n', ""),
        "rule class Evil has no valid slug",
    ),
    "no_codes": (
        PLUGIN.format(body="yield from ()").replace(
            'codes = (Code("EVL001", "evil", "an evil rule", Severity.ERROR),)', "codes = ()"
        ),
        "rule evil declares no codes",
    ),
    "rules_5": (PLUGIN.format(body="yield from ()") + "RULES = 5\n", "failed to load: TypeError"),
    "builtin_slug": (
        PLUGIN.format(body="yield from ()").replace('"evil"', '"protocol-inheritance"'),
        "rule slug protocol-inheritance is already taken by eagle3lint",
    ),
    "builtin_code": (
        PLUGIN.format(body="yield from ()").replace('"EVL001"', '"EAG102"'),
        "code EAG102 is already reported by rule protocol-inheritance",
    ),
    "exit_on_import": ("import sys\nsys.exit(0)\n", "failed to load: SystemExit(0)"),
}


@pytest.mark.parametrize("case", sorted(BAD_DECLARATIONS))
def test_a_badly_declared_plugin_is_refused_with_a_named_error(
    models: Path, plugin: Any, case: str
) -> None:
    source, message = BAD_DECLARATIONS[case]
    plugin(source)
    exit_code, report, _ = check_with_plugin(models)
    assert exit_code == 2
    [error] = [e for e in report["errors"] if e["path"] == "<plugins>"]
    assert error["code"] == "EAG903"
    assert message in error["message"]
    [target] = report["targets"]
    assert {"EAG101", "EAG102"} & {f["code"] for f in target["findings"]}
    assert all(f["rule"] != "evil" for f in target["findings"])
    listed = CliRunner().invoke(app, ["rules"])
    assert listed.exit_code == 2
    assert "Traceback" not in listed.output
    assert message in listed.stderr
    assert "EAG101" in listed.stdout


# -- 4. fix never overwrites a save made while it writes ---------------------------------------
@pytest.fixture
def planned_edit(tmp_path: Path) -> Any:
    from planning import plan_edits

    from eagle3lint.engine import CheckOptions, run_check

    vllm = write_vllm_tree(tmp_path / "checkout")
    report = run_check(CheckOptions(paths=[vllm], use_cache=False, jobs=1, require=["*"])).report
    [edit] = [e for e in plan_edits(report)[0] if e.changed]
    return edit


SAVED = b"# saved by the user's editor while fix was writing\n"


def test_a_save_while_fix_syncs_its_new_file_is_kept(
    planned_edit: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The editor saves while fix writes and syncs its temporary file: before, fix had already
    compared the file and renamed over the save (10 of 10 timed tries)."""
    from eagle3lint import fixer

    real_fsync = os.fsync
    users_version = planned_edit.original + SAVED

    def save_meanwhile(fd: int) -> None:
        planned_edit.path.write_bytes(users_version)
        real_fsync(fd)

    monkeypatch.setattr(fixer.os, "fsync", save_meanwhile)
    problem = fixer.write_edits([planned_edit])
    assert problem == (
        f"{planned_edit.path} changed on disk since it was read; run fix again; no file written"
    )
    assert planned_edit.path.read_bytes() == users_version
    assert sorted(p.name for p in planned_edit.path.parent.glob(".*eagle3lint")) == []


def test_a_save_into_the_file_just_before_the_rename_is_put_back(
    planned_edit: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last window: an in-place save between the comparison and the rename goes into the
    old file, which fix still holds open and reads again."""
    from eagle3lint import fixer

    real_replace = os.replace
    users_version = planned_edit.original + SAVED
    calls = []

    def save_then_replace(src: str, dst: Path) -> None:
        if not calls:
            with open(dst, "r+b") as old:  # in place, as many editors save
                old.write(users_version)
        calls.append(src)
        real_replace(src, dst)

    monkeypatch.setattr(fixer.os, "replace", save_then_replace)
    problem = fixer.write_edits([planned_edit])
    assert problem == (
        f"{planned_edit.path} changed while it was being written; left as saved, run fix again"
        "; no file written"
    )
    assert planned_edit.path.read_bytes() == users_version


# -- 1 and 8. downloads: no code from the working directory, only the published wheel -------
GOOD_MODEL = "GOOD = 1\n"
TAMPERED_MODEL = "TAMPERED = 1\n"


def wheel(path: Path, model: str, extra: dict[str, bytes] | None = None) -> Path:
    """A wheel of a tiny `vllm` 9.9.0 whose model file holds `model`."""
    files = {
        "vllm/__init__.py": b"",
        "vllm/model_executor/models/registry.py": b"_VLLM_MODELS = {}\n",
        "vllm/model_executor/models/llama.py": model.encode(),
        "vllm-9.9.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: vllm\nVersion: 9.9.0\n",
        "vllm-9.9.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nTag: py3-none-any\n",
        "vllm-9.9.0.dist-info/RECORD": b"",
        **(extra or {}),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return path


WHEEL_NAME = "vllm-9.9.0-py3-none-any.whl"


@pytest.fixture
def index(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A PEP 503 index on 127.0.0.1 publishing a good vllm 9.9.0 wheel and its sha256; yields
    its URL and the folder it serves (a test may swap the served file)."""
    root = tmp_path / "index"
    good = wheel(root / "files" / WHEEL_NAME, GOOD_MODEL)
    digest = hashlib.sha256(good.read_bytes()).hexdigest()
    page = root / "simple" / "vllm" / "index.html"
    page.parent.mkdir(parents=True)
    page.write_text(
        f'<html><body><a href="../../files/{WHEEL_NAME}#sha256={digest}">{WHEEL_NAME}</a>'
        "</body></html>\n"
    )
    handler = functools.partial(QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple", root
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def offline_pip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """pip with no configuration of the machine's (its indexes and find-links would be asked
    about vllm too), and an empty eagle3lint cache; returns the cache folder."""
    for name in list(os.environ):
        if name.startswith("PIP_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    cache = tmp_path / "cache"
    monkeypatch.setenv("EAGLE3LINT_CACHE_DIR", str(cache))
    return cache


def test_a_release_is_the_wheel_the_index_publishes_not_one_from_find_links(
    index: tuple[str, Path], offline_pip: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, _ = index
    elsewhere = wheel(tmp_path / "links" / WHEEL_NAME, TAMPERED_MODEL)
    monkeypatch.setenv("PIP_FIND_LINKS", str(elsewhere.parent))
    monkeypatch.setenv("PIP_INDEX_URL", url)
    monkeypatch.setenv(download.INDEX_ENV, url)
    vllm = download.fetch_release("9.9.0", offline_pip)
    assert (vllm / "model_executor" / "models" / "llama.py").read_text() == GOOD_MODEL
    complete = json.loads((vllm.parent / download.COMPLETE).read_text())
    assert (
        complete["wheel"]
        == hashlib.sha256((index[1] / "files" / WHEEL_NAME).read_bytes()).hexdigest()
    )


def test_a_wheel_that_is_not_the_published_one_is_refused(
    index: tuple[str, Path], offline_pip: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, root = index
    wheel(root / "files" / WHEEL_NAME, TAMPERED_MODEL)  # the index serves another file
    monkeypatch.setenv("PIP_INDEX_URL", url)
    monkeypatch.setenv(download.INDEX_ENV, url)
    with pytest.raises(download.DownloadError, match="is not the wheel the index publishes"):
        download.fetch_release("9.9.0", offline_pip)
    assert not (offline_pip / "releases" / "9.9.0").exists()


def test_a_version_the_index_lacks_names_its_newest_release(
    index: tuple[str, Path], offline_pip: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 12's wording survives the digest check: the index page answers before pip runs."""
    monkeypatch.setenv(download.INDEX_ENV, index[0])
    with pytest.raises(download.DownloadError) as raised:
        download.fetch_release("9.9.1", offline_pip)
    assert str(raised.value) == (
        "vLLM 9.9.1 is not on PyPI (the index answered; the newest release there is 9.9.0)"
    )


def test_an_index_that_cannot_be_reached_says_offline(
    offline_pip: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv(download.INDEX_ENV, f"http://127.0.0.1:{port}/simple")
    with pytest.raises(download.DownloadError, match="offline") as raised:
        download.fetch_release("9.9.0", offline_pip)
    assert "not on PyPI" not in str(raised.value)


def hostile_checkout(folder: Path, markers: Path) -> Path:
    """A checkout that runs code if anything imports from it: a pip.py and pip/ package, a
    typer.py, and an installed-looking rule plugin, each leaving a marker file."""
    folder.mkdir()
    markers.mkdir()
    prelude = f"open({str(markers)!r} + '/' + __name__, 'w').close()\n"
    (folder / "pip.py").write_text(prelude)
    (folder / "typer.py").write_text(prelude)
    install_plugin(folder, prelude + PLUGIN.format(body="yield from ()"), name="evilpack")
    (folder / "pyproject.toml").write_text('[tool.eagle3lint]\nvllm-version = "9.9.0"\n')
    return folder


def test_nothing_runs_from_the_working_directory(
    index: tuple[str, Path], offline_pip: Path, tmp_path: Path
) -> None:
    """`python -m eagle3lint check` inside a hostile checkout whose pyproject asks for a
    release: pip must not be the checkout's pip.py, nor eagle3lint load its plugin."""
    url, _ = index
    markers = tmp_path / "markers"
    checkout = hostile_checkout(tmp_path / "checkout", markers)
    env = {**os.environ, download.INDEX_ENV: url, "PIP_INDEX_URL": url}
    for command in (["check", "--format", "json"], ["rules"]):
        result = subprocess.run(
            [sys.executable, "-m", "eagle3lint", *command],
            cwd=checkout,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert "Traceback" not in result.stderr, result.stderr
        assert sorted(p.name for p in markers.iterdir()) == [], result.stderr
    assert (offline_pip / "releases" / "9.9.0" / "vllm").is_dir()


def extract(tmp_path: Path, files: dict[str, bytes]) -> Path:
    archive = tmp_path / "wheel" / WHEEL_NAME
    archive.parent.mkdir(exist_ok=True)
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as out:
        for name, data in files.items():
            out.writestr(name, data)
    download._extract_python(archive, tmp_path / "tree")
    return tmp_path / "tree"


@pytest.mark.filterwarnings("ignore:Duplicate name")
@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({"vllm/bomb.py": b"\0" * (64 * 2**20)}, "expands beyond"),
        ({f"vllm/m{i}.py": b"" for i in range(12)}, "lists 12 entries"),
        ({"vllm/" + "x" * 300 + ".py": b""}, "file name too long"),
        ({"vllm/a.py": b"", "vllm/a.py/b.py": b""}, "could not be extracted"),
        ({"other/a.py": b""}, "holds no vllm/ Python sources"),
    ],
    ids=["ratio", "entries", "long-name", "file-and-folder", "no-sources"],
)
def test_a_hostile_wheel_is_refused_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, bytes], message: str
) -> None:
    monkeypatch.setattr(download, "MAX_ENTRIES", 10)
    with pytest.raises(download.DownloadError, match=message):
        extract(tmp_path, files)


def test_a_wheel_listing_a_name_twice_is_refused(tmp_path: Path) -> None:
    archive = tmp_path / WHEEL_NAME
    with zipfile.ZipFile(archive, "w") as out, pytest.warns(UserWarning):
        out.writestr("vllm/a.py", b"A = 1\n")
        out.writestr("vllm/a.py", b"A = 2\n")
    with pytest.raises(download.DownloadError, match=r"lists vllm/a\.py twice"):
        download._extract_python(archive, tmp_path / "tree")


@pytest.mark.parametrize("version", ["", "1" * 300 + ".0", "0.16.0/../../x"])
def test_a_bad_version_is_a_usage_error(version: str, offline_pip: Path) -> None:
    result = CliRunner().invoke(app, ["check", "--vllm", version])
    assert result.exit_code == 2
    assert "is not a vLLM version number" in result.output


def test_a_cache_folder_that_is_a_file_is_named(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.write_text("")
    with pytest.raises(
        download.DownloadError, match=r"cannot keep vllm==9\.9\.0 in the cache folder"
    ):
        download.fetch_release("9.9.0", cache)


# -- 8. a shared cache cannot change results ---------------------------------------------------
def cached_run(models: Path) -> tuple[int, str, str]:
    """`check` as CI runs it (output not a terminal), which answers from the run cache."""
    result = CliRunner().invoke(app, ["check", str(models), "--format", "json", "--require", "*"])
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("how", ["other-owner", "group-writable"])
def test_a_forged_run_cache_entry_is_not_used(
    models: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    monkeypatch.setenv("EAGLE3LINT_CACHE_DIR", str(tmp_path / "cache"))
    exit_code, output, _ = cached_run(models)
    assert exit_code == 1
    [entry] = (tmp_path / "cache" / "runs").glob("*.json")
    data = json.loads(entry.read_text())
    data.update(output='{"targets": [], "forged": "all clear"}\n', code=0)
    entry.write_text(json.dumps(data))
    if how == "other-owner":
        os.chown(entry, NOBODY, NOBODY)
    else:
        entry.chmod(0o664)
    assert cached_run(models)[:2] == (1, output)


def test_a_cache_folder_others_can_write_is_not_used(
    models: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    monkeypatch.setenv("EAGLE3LINT_CACHE_DIR", str(shared))
    exit_code, _, stderr = cached_run(models)
    assert exit_code == 1
    assert f"cache not used: {shared} is writable by other users" in stderr
    assert list(shared.iterdir()) == []
    with pytest.raises(download.DownloadError, match="is writable by other users"):
        download.fetch_release("0.16.0", shared)


def test_a_summary_written_by_someone_else_is_not_used(tmp_path: Path) -> None:
    from eagle3lint.index.cache import SummaryCache
    from eagle3lint.index.model import FileSummary

    cache = SummaryCache(tmp_path)
    summary = FileSummary(module="m", path="m.py")
    cache.store("ab" * 20, summary)
    assert cache.load("ab" * 20) == summary
    os.chown(cache._path("ab" * 20), NOBODY, NOBODY)
    assert cache.load("ab" * 20) is None


# -- 5. the cost of one file is bounded -------------------------------------------------------
@pytest.mark.parametrize("line", [b"f(a,b)\n", b"x=1;\n"])
def test_a_file_too_costly_to_parse_is_named_at_once(models: Path, line: bytes) -> None:
    """About 2 MB (under the byte limit) of the cheapest lines that cost the parser most."""
    costly = models / "generated.py"
    costly.write_bytes(line * (1_950_000 // len(line)))
    exit_code, report = checked(str(models))
    assert exit_code == 2
    error = error_for(report, costly)
    assert error["code"] == "EAG902"
    assert error["message"].startswith("too large to analyse: about ")
    assert archs(report) == [ARCH]


def test_the_costliest_file_accepted_stays_under_500_mb(tmp_path: Path) -> None:
    """A file just under the token limit, made of the lines that cost the parser most per
    byte, parsed in a process of its own: its peak memory is what one worker can reach.

    The peak is the process's own (VmHWM), not `ru_maxrss`: Linux carries the peak of the
    address space replaced by exec into the latter, so it reported the test runner's 530 MB
    after a full run, not the probe's 430."""
    from eagle3lint.sources.files import MAX_TOKENS

    folder = tmp_path / "models"
    folder.mkdir()
    (folder / "worst.py").write_bytes(b"f(a,b)\n" * (MAX_TOKENS // 7 - 100))
    probe = (
        "import sys\n"
        "from eagle3lint.cli import main\n"
        "sys.argv = ['eagle3lint', 'check', sys.argv[1], '--no-cache', '--jobs', '1']\n"
        "try:\n    main()\n"
        "except SystemExit:\n"
        "    status = open('/proc/self/status').read()\n"
        "    print(status.split('VmHWM:')[1].split()[0], file=sys.stderr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe, str(folder)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert "too large" not in result.stdout
    peak_kb = int(result.stderr.strip().splitlines()[-1])
    assert peak_kb < 500 * 1024


# -- 9. named errors, never "internal error" ----------------------------------------------------
@pytest.mark.parametrize("module", ["/", "/etc/passwd", "../../outside", "a/b"])
def test_a_registry_entry_holding_a_path_is_named(tmp_path: Path, module: str) -> None:
    vllm = write_vllm_tree(tmp_path)
    registry = vllm / "model_executor" / "models" / "registry.py"
    registry.write_text(
        registry.read_text().replace(
            f'"{ARCH}": ("llama", "{ARCH}"),',
            f'"{ARCH}": ("llama", "{ARCH}"),\n    "EvilForCausalLM": ("{module}", "Evil"),',
        )
    )
    exit_code, report = checked(str(vllm))
    assert exit_code == 2
    [error] = report["errors"]
    assert error["code"] == "EAG903"
    assert "EvilForCausalLM: the registry points at" in error["message"]
    assert archs(report) == [ARCH]


def nested_json(depth: int) -> str:
    return '{"a": ' * depth + "1" + "}" * depth


def test_deeply_nested_hf_config_is_a_usage_error(models: Path, tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text(nested_json(100_000))
    result = CliRunner().invoke(app, ["check", str(models), "--hf-config", str(config)])
    assert result.exit_code == 2
    assert "nests too deeply" in result.output
    assert "internal error" not in result.output


def test_deeply_nested_pyproject_is_a_usage_error(
    models: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pyproject.toml").write_text("x = " + "[" * 100_000 + "]" * 100_000 + "\n")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["check", str(models)])
    assert result.exit_code == 2
    assert "internal error" not in result.output
    assert "pyproject.toml" in result.output


def test_a_deeply_nested_cache_entry_is_rebuilt(
    models: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EAGLE3LINT_CACHE_DIR", str(tmp_path / "cache"))
    exit_code, output, _ = cached_run(models)
    entries = [*(tmp_path / "cache").rglob("*.json")]
    assert entries
    for entry in entries:
        entry.write_text(nested_json(100_000))
    assert cached_run(models)[:2] == (exit_code, output)


# -- acceptance: a real tree salted with one of each special file -------------------------------
SALT = {
    "salt_fifo": (fifo, "is a FIFO (named pipe), not a regular file"),
    "salt_zero": (dev_zero, "is a character device, not a regular file"),
    "salt_socket": (unix_socket, "is a socket, not a regular file"),
    "salt_folder": (lambda p: p.mkdir() or p, "is a directory"),
    "salt_dangling": (lambda p: p.symlink_to(p.parent / "nowhere.py") or p, "no such file"),
    "salt_loop": (lambda p: p.symlink_to(p) or p, "symbolic link loop"),
    "salt_binary": (lambda p: p.write_bytes(b"\0\1\2") or p, "binary file"),
    "salt_py2": (lambda p: p.write_text("try:\n    pass\nexcept E, e:\n    pass\n") or p, "syntax"),
}


def run_check_process(vllm: Path) -> tuple[int, dict[str, Any]]:
    """`eagle3lint check` in a process of its own, as CI runs it (bounded: a hang fails)."""
    command = ["check", str(vllm), "--format", "json", "--jobs", "2", "--no-cache"]
    result = subprocess.run(
        [sys.executable, "-m", "eagle3lint", *command],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert "Traceback" not in result.stderr, result.stderr
    return result.returncode, json.loads(result.stdout)


def test_a_release_salted_with_special_files_finishes_names_each_and_checks_the_rest(
    release_copy: Any,
) -> None:
    vllm = release_copy("0.16.0")
    _, clean = run_check_process(vllm)
    models = vllm / "model_executor" / "models"
    registry = models / "registry.py"
    entries = "".join(f'    "{name.title()}ForCausalLM": ("{name}", "Salt"),\n' for name in SALT)
    opening = "_TEXT_GENERATION_MODELS = {\n"
    registry.write_text(registry.read_text().replace(opening, opening + entries, 1))
    for name, (make, _) in SALT.items():
        make(models / f"{name}.py")
    exit_code, report = run_check_process(vllm)
    assert exit_code == 2
    for name, (_, message) in SALT.items():
        if name == "salt_folder":
            # A folder named salt_folder.py is not a module: the registry entry is named.
            [error] = [e for e in report["errors"] if e["path"].endswith(name)]
            assert "which is not in this tree" in error["message"]
            continue
        assert message in error_for(report, models / f"{name}.py")["message"], name
    assert len(report["errors"]) == len(SALT)
    assert archs(report) == archs(clean)
    assert [t["findings"] for t in report["targets"]] == [t["findings"] for t in clean["targets"]]


# -- bench/fuzz_inputs.py, a few rounds of each surface ------------------------------------------
@pytest.mark.parametrize("surface", ["config", "hf-config", "cache-entry", "wheel", "file-name"])
def test_fuzzed_inputs_get_a_value_or_a_named_error(surface: str) -> None:
    spec = importlib.util.spec_from_file_location(
        "fuzz_inputs", Path(__file__).parent.parent / "bench" / "fuzz_inputs.py"
    )
    assert spec is not None and spec.loader is not None
    fuzz_inputs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fuzz_inputs)
    assert fuzz_inputs.fuzz(surface, rounds=15, seed=13) == []


# -- `pair` reads drafts through the same reader --------------------------------------------------
@pytest.mark.parametrize("kind", ["fifo", "dev_zero"])
@pytest.mark.parametrize("name", ["model.safetensors", "model.safetensors.index.json"])
def test_a_special_file_in_a_draft_checkpoint_is_a_usage_error(
    tmp_path: Path, kind: str, name: str
) -> None:
    from eagle3lint.drafts.checkpoint import read_header, weight_files
    from eagle3lint.errors import UsageError

    make, message = SPECIAL[kind]
    special = make(tmp_path / name)
    with no_hang(), pytest.raises(UsageError, match=re.escape(message)):
        if name.endswith(".json"):
            weight_files(tmp_path)
        else:
            read_header(special)


@pytest.mark.release  # asks the real package index
def test_listing_releases_for_matrix_runs_no_pip_from_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from eagle3lint.sources.release_index import _ask_index

    markers = tmp_path / "markers"
    checkout = hostile_checkout(tmp_path / "checkout", markers)
    monkeypatch.chdir(checkout)
    versions = _ask_index()
    assert "0.16.0" in versions
    assert sorted(p.name for p in markers.iterdir()) == []
