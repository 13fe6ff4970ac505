"""The "Next:" block that ends a text report: the commands that fix, explain or decide what the
run found, built from the command that ran, and runnable as printed."""

from __future__ import annotations

import io
import json
import shlex
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from eagle3lint.cli import app

MODELS = Path("vllm/model_executor/models")
LLAMA = "GoodLlamaForCausalLM"
FIXED = MODELS / "half_impl.py"
"""A file `fix` rewrites in the era fixture."""


def run(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def next_block(output: str) -> list[str]:
    """The commands of the "Next:" block (their comments dropped); [] when there is none."""
    lines = output.splitlines()
    if "Next:" not in lines:
        return []
    block = lines[lines.index("Next:") + 1 :]
    assert block and all(line.startswith("  ") for line in block), output  # it ends the report
    return [line.strip().split("  # ")[0].strip() for line in block]


def again(command: str) -> Result:
    """The command as a shell would run it."""
    words = shlex.split(command)
    assert words[0] == "eagle3lint", command
    return run(*words[1:])


def test_a_run_with_fixable_errors_ends_with_the_commands_that_fix_and_explain(
    era_copy: Path,
) -> None:
    result = run("check", "vllm", "--require", "*", "--no-cache")
    assert result.exit_code == 1, result.output
    preview, apply, explain, decide = next_block(result.stdout)
    assert preview == "eagle3lint fix vllm --require '*' --diff"
    assert apply == "eagle3lint fix vllm --require '*'"
    # The code of the most error findings (a finding several targets share counts once).
    report = json.loads(run("check", "vllm", "--require", "*", "--format", "json").stdout)
    errors = Counter(
        code
        for code, *_ in {
            (f["code"], f["path"], f["line"], f["column"], f["message"])
            for t in report["targets"]
            for f in t["findings"]
            if f["severity"] == "error"
        }
    )
    top = min(errors, key=lambda code: (-errors[code], code))
    assert (top, errors[top]) == ("EAG201", 5)  # a warning code is as frequent: not it
    assert explain == f"eagle3lint explain {top}"
    assert decide == "eagle3lint check vllm --require '*' --hf-config config.json"
    assert "# your checkpoint's config.json (or --model-type TYPE) decides what is unverified" in (
        result.stdout
    )

    # The preview is a patch on stdout, exit 1 (files would change), and writes nothing.
    before = (era_copy / FIXED).read_bytes()
    shown = again(preview)
    assert shown.exit_code == 1, shown.output
    assert f"--- a/{FIXED.as_posix()}" in shown.stdout and "\n+" in shown.stdout
    assert (era_copy / FIXED).read_bytes() == before
    page = again(explain)
    assert page.exit_code == 0 and page.stdout.startswith(f"# {top} "), page.output

    # Applied, the repairs leave no fixable finding: the next report suggests no fix.
    fixed = again(apply)
    assert fixed.exit_code == 1, fixed.output  # blockers without an automatic fix remain
    assert (era_copy / FIXED).read_bytes() != before
    after = run("check", "vllm", "--require", "*", "--no-cache")
    assert "[*]" not in after.stdout
    assert [c for c in next_block(after.stdout) if c.startswith("eagle3lint fix")] == []


def test_the_commands_repeat_the_options_that_decide_what_was_found(era_copy: Path) -> None:
    result = run(
        "check",
        str(MODELS / "no_protocol.py"),
        "--select",
        "EAG1,EAG2",
        "--extend-select",
        "EAG3",
        "--ignore",
        "EAG103",
        "--require",
        "*",
        "--jobs",
        "1",
        "--no-cache",
        "--exit-zero",
        "--verbose",  # files given: the findings and one count line, the rest behind -v
    )
    preview, apply, explain = next_block(result.stdout)
    # fix takes no --extend-select: the selection the check made instead. Options that only
    # change how the run goes (--jobs, --no-cache, --exit-zero) are left out.
    assert preview == (
        f"eagle3lint fix {MODELS / 'no_protocol.py'} --select EAG1,EAG2,EAG3 --ignore EAG103 "
        "--require '*' --diff"
    )
    assert apply == preview.removesuffix(" --diff")
    assert explain == "eagle3lint explain EAG201"
    assert again(preview).exit_code == 1


def test_a_path_a_shell_would_split_or_read_as_an_option_is_quoted(
    era_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = era_copy.parent / "-a tree's copy"
    era_copy.rename(folder)
    monkeypatch.chdir(folder.parent)
    result = run("check", "--require", "*", "--no-cache", "--", f"{folder.name}/vllm")
    assert result.exit_code == 1, result.output
    preview = next_block(result.stdout)[0]
    # --diff before the `--` that ends the options: after it, it would be a PATH (and fix
    # would write).
    assert preview == "eagle3lint fix --require '*' --diff -- '-a tree'\"'\"'s copy/vllm'"
    before = (folder / FIXED).read_bytes()
    shown = again(preview)
    assert shown.exit_code == 1, shown.output
    assert f"+++ b/-a tree's copy/{FIXED.as_posix()}" in shown.stdout
    assert (folder / FIXED).read_bytes() == before


def test_an_unverified_target_asked_about_gets_the_options_that_decide_it(era_copy: Path) -> None:
    result = run("check", "vllm", "--arch", LLAMA, "--no-cache")
    assert result.exit_code == 1, result.output  # asked about, and not known to be ready
    explain, decide = next_block(result.stdout)
    assert explain == "eagle3lint explain EAG502"  # a warning: no error was found
    assert decide == f"eagle3lint check vllm --arch {LLAMA} --hf-config config.json"
    # The placeholder, replaced by a real checkpoint's config, decides it.
    (era_copy / "config.json").write_text(
        json.dumps({"architectures": [LLAMA], "model_type": "llama"})
    )
    decided = again(decide)
    assert decided.exit_code == 0, decided.output
    assert next_block(decided.stdout) == []
    # An option given already is not suggested again; what is left is.
    typed = run("check", "vllm", "--arch", LLAMA, "--model-type", "mistral", "--no-cache")
    assert typed.exit_code == 1, typed.output
    assert f"eagle3lint check vllm --arch {LLAMA} --model-type mistral --hf-config" not in (
        typed.stdout
    )
    assert all("--model-type TYPE" not in line for line in typed.stdout.splitlines())


def test_a_run_with_nothing_shown_has_no_next_block(era_copy: Path) -> None:
    # A file is judged by every target that reads it: with the README's baseline recipe, only
    # what a change adds is shown, here nothing.
    baseline = era_copy / "baseline.json"
    assert run("check", "vllm", "--write-baseline", str(baseline), "--no-cache").exit_code == 0
    args = ("--baseline", str(baseline), "--no-cache")
    result = run("check", str(MODELS / "good_llama.py"), *args)
    assert result.exit_code == 0, result.output
    assert "All checks passed!" in result.stdout
    assert next_block(result.stdout) == []


@pytest.mark.parametrize(
    "view",
    [("--quiet",), ("--statistics",), ("--format", "json"), ("--format", "sarif")],
    ids=["quiet", "statistics", "json", "sarif"],
)
def test_views_without_the_summary_have_no_next_block(era_copy: Path, view: tuple[str]) -> None:
    result = run("check", "vllm", "--require", "*", "--no-cache", *view)
    assert result.exit_code == 1, result.output
    assert "Next:" not in result.stdout.splitlines()
    assert "eagle3lint fix vllm" not in result.stdout


def test_the_full_format_ends_with_the_same_block(era_copy: Path) -> None:
    text = run("check", "vllm", "--require", "*", "--no-cache")
    full = run("check", "vllm", "--require", "*", "--no-cache", "--format", "full")
    assert next_block(full.stdout) == next_block(text.stdout) != []


def test_a_cached_release_gets_a_patch_for_a_checkout_of_it(
    era_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from eagle3lint.engines.vllm.wing import VllmWing

    # The era fixture stands for release 0.16.0, as the cache would hold it.
    release = tmp_path / "cache" / "vllm-0.16.0" / "vllm"
    shutil.copytree(era_copy / "vllm", release)

    def fetch(*_: object, **__: object) -> Path:
        return release

    monkeypatch.setattr(VllmWing, "fetch_release", fetch)
    monkeypatch.chdir(tmp_path)
    result = run("check", "--vllm", "0.16.0", "--require", "*", "--no-cache")
    assert result.exit_code == 1, result.output
    patch, apply = next_block(result.stdout)[:2]
    assert patch == "eagle3lint fix --vllm 0.16.0 --require '*' --diff > eagle3lint.patch"
    assert apply == "git apply eagle3lint.patch"
    assert "# in a checkout of vLLM 0.16.0" in result.stdout
    # What the block does not suggest: fix refuses to edit the cache.
    refused = run("fix", "--vllm", "0.16.0", "--require", "*")
    assert refused.exit_code == 2 and "not yours to edit" in refused.output

    command, target = patch.split(" > ")
    shown = again(command)
    assert shown.exit_code == 1, shown.output
    (tmp_path / target).write_text(shown.stdout)
    # A checkout of the release (the era fixture as it was, a repository of its own) takes it.
    subprocess.run(["git", "init", "-q"], cwd=era_copy, check=True)
    applied = subprocess.run(
        ["git", "apply", str(tmp_path / target)],
        cwd=era_copy,
        capture_output=True,
        text=True,
        check=False,
    )
    assert applied.returncode == 0, applied.stderr
    assert (era_copy / FIXED).read_bytes() != (release / FIXED.relative_to("vllm")).read_bytes()


def test_the_whole_run_cache_keys_on_what_the_block_repeats(
    era_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--hf-config` given or set by the configuration is the same check, but not the same
    command to repeat: each has its own output."""
    monkeypatch.setenv("EAGLE3LINT_CACHE_DIR", str(tmp_path / "cache"))
    (era_copy / "config.json").write_text(
        json.dumps({"architectures": [LLAMA, "NoTapForCausalLM"], "model_type": "llama"})
    )
    (era_copy / "pyproject.toml").write_text('[tool.eagle3lint]\nhf-config = "config.json"\n')
    config = str(era_copy / "config.json")  # as the configuration's is read
    for _ in range(2):  # the second run of each is answered from the cache
        configured = run("check", "vllm")
        given = run("check", "vllm", "--hf-config", config)
        assert configured.exit_code == given.exit_code == 1, configured.output + given.output
        assert next_block(configured.stdout)[0] == "eagle3lint fix vllm --diff"
        assert next_block(given.stdout)[0] == f"eagle3lint fix vllm --hf-config {config} --diff"


def test_what_decides_besides_an_option_is_no_command(era_copy: Path) -> None:
    """An unverified target only a tree with transformers beside it decides (EAG413) gets no
    command: there is none to give."""
    from dataclasses import replace

    from rich.console import Console

    from eagle3lint.checkrun.options import CheckOptions
    from eagle3lint.engine import run_check
    from eagle3lint.findings import Unverified
    from eagle3lint.report.invocation import Arguments, Invocation
    from eagle3lint.report.text import TextOptions, render_text

    report = run_check(CheckOptions(paths=[Path("vllm")], archs=[LLAMA], use_cache=False)).report
    [target] = report.targets
    assert target.unverified_required  # the EAG502 finding: --hf-config or --model-type
    invocation = Invocation(Arguments(("--arch", LLAMA), ("vllm",)), Arguments((), ("vllm",)))

    def rendered() -> list[str]:
        out = io.StringIO()
        render_text(report, Console(file=out, width=200), TextOptions(invocation=invocation))
        return next_block(out.getvalue())

    assert rendered()[-1] == f"eagle3lint check vllm --arch {LLAMA} --hf-config config.json"
    tree_only = Unverified("transformers' model", "not installed", ("a vLLM tree",))
    target.unverified = [replace(f, unverified=tree_only) for f in target.unverified]
    assert [c for c in rendered() if c.startswith("eagle3lint check")] == []


def test_a_commit_blocked_by_files_given_gets_the_findings_and_one_count_line(
    era_copy: Path,
) -> None:
    # As ruff's hook prints a blocked commit; the summary and the "Next:" block behind -v.
    no_tap = str(MODELS / "no_tap.py")
    result = run("check", no_tap, "--no-cache")
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    assert all(": EAG" in line for line in lines[:-1]) and lines[:-1]
    assert lines[-1] == (
        f"Found 1 error; [*] 1 fixable with `eagle3lint fix {no_tap}` "
        "(-v for the summary and next steps)."
    )
    verbose = run("check", no_tap, "--no-cache", "-v")
    assert next_block(verbose.stdout)[0] == f"eagle3lint fix {no_tap} --diff"
