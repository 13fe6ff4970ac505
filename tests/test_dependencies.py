"""A change is judged by what it breaks: a run over changed files judges every target whose
verdict read one of them (a model file, or a contract file such as `interfaces.py`), with the
dependency record of earlier runs or without it, and says which changed file each reads."""

from __future__ import annotations

import json
import random
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from eagle3lint.cachedir import default_cache_dir
from eagle3lint.cli import app

MODELS = Path("vllm/model_executor/models")
INTERFACES = MODELS / "interfaces.py"
GETTER = "def get_eagle3_aux_hidden_state_layers(self)"


def check(*args: str) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(app, ["check", *args, "--format", "json"])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)


def archs(report: dict[str, Any]) -> set[str]:
    return {t["arch"] for t in report["targets"]}


def errors(report: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {
        (t["arch"], f["code"], f["message"])
        for t in report["targets"]
        for f in t["findings"]
        if f["severity"] == "error"
    }


def test_a_contract_file_given_judges_every_target_that_reads_it(
    era_copy: Path,
) -> None:
    """The protocol's getter renamed in interfaces.py breaks targets defined elsewhere: the
    file given finds them, as the whole-tree check does, with or without a record."""
    _, whole = check("vllm", "--require", "*")
    interfaces = era_copy / INTERFACES
    interfaces.write_text(interfaces.read_text().replace(GETTER, GETTER.replace("aux", "tap")))
    _, broken = check("vllm", "--require", "*")
    caused = errors(broken) - errors(whole)
    assert caused
    _, given = check(str(INTERFACES), "--require", "*")
    assert caused <= errors(given)
    assert archs(given) == archs(broken)  # every target reads the protocol
    assert {tuple(t["reads_changed"]) for t in given["targets"]} == {(str(interfaces),)}
    _, cold = check(str(INTERFACES), "--require", "*", "--no-cache")
    assert cold == given
    text = CliRunner().invoke(app, ["check", str(INTERFACES), "--require", "*"]).stdout
    assert f"which reads {INTERFACES} (changed)" in text


def test_a_model_file_given_judges_only_its_readers(era_copy: Path) -> None:
    check("vllm")  # the record
    no_tap = era_copy / MODELS / "no_tap.py"
    no_tap.write_text(no_tap.read_text() + "\nx = 1\n")
    _, given = check(str(MODELS / "no_tap.py"))
    assert archs(given) == {"NoTapForCausalLM"}
    assert given == check(str(MODELS / "no_tap.py"), "--no-cache")[1]
    assert "reads_changed" not in check("vllm")[1]["targets"][0]


def edits(tree: Path, seed: int, count: int) -> list[tuple[Path, str]]:
    """`count` random edits of the tree's Python files, each the file's new text: a line
    deleted, duplicated or commented out, or two lines swapped (whatever the result parses to,
    or fails to parse to)."""
    rng = random.Random(seed)
    files = sorted(tree.rglob("*.py"))
    found = []
    for _ in range(count):
        path = rng.choice(files)
        lines = path.read_text().splitlines(keepends=True)
        if not lines:
            continue
        at = rng.randrange(len(lines))
        kind = rng.choice(("delete", "duplicate", "comment", "swap"))
        if kind == "delete":
            del lines[at]
        elif kind == "duplicate":
            lines.insert(at, lines[at])
        elif kind == "comment":
            lines[at] = "# " + lines[at]
        else:
            other = rng.randrange(len(lines))
            lines[at], lines[other] = lines[other], lines[at]
        found.append((path, "".join(lines)))
    return found


def judged_both_ways(tree: Path, seed: int, count: int) -> None:
    """Each edit (undone before the next) judged incrementally, with the dependency record and
    the run cache of the runs before it, and cold, without them (the summaries, cached by
    content, kept: `test_cache_and_jobs` holds them to a run without any cache): the same
    JSON, for the file given and for the whole tree."""
    check(str(tree))
    for path, text in edits(tree, seed, count):
        before = path.read_text()
        path.write_text(text)
        try:
            for args in ((str(path),), (str(tree),)):
                warm = CliRunner().invoke(app, ["check", *args, "--format", "json"])
                saved = forget()
                cold = CliRunner().invoke(app, ["check", *args, "--format", "json"])
                restore(saved)
                assert (warm.exit_code, warm.stdout) == (cold.exit_code, cold.stdout), (path, args)
        finally:
            path.write_text(before)


FORGOTTEN = ("runs", "summaries/deps")
"""What a run learns about earlier runs: whole-run results, and the dependency record with the
verdicts kept beside it."""


def forget() -> Path:
    """Move the run cache and the dependency records aside (to `restore` them)."""
    cache = default_cache_dir()
    aside = Path(tempfile.mkdtemp(dir=cache))
    for name in FORGOTTEN:
        if (cache / name).exists():
            (aside / name).parent.mkdir(parents=True, exist_ok=True)
            (cache / name).rename(aside / name)
    return aside


def restore(aside: Path) -> None:
    cache = default_cache_dir()
    for name in FORGOTTEN:
        shutil.rmtree(cache / name, ignore_errors=True)
        if (aside / name).exists():
            (aside / name).rename(cache / name)
    shutil.rmtree(aside)


def test_random_edits_of_a_fixture_tree_judged_incrementally_and_cold(
    era_copy: Path,
) -> None:
    judged_both_ways(era_copy / "vllm", seed=3, count=12)


@pytest.mark.parametrize("count", [6, pytest.param(50, marks=pytest.mark.slow)])
def test_random_edits_of_a_release_judged_incrementally_and_cold(
    vllm_release: Any, tmp_path: Path, count: int
) -> None:
    """Issue 32's property: seeded random edits of vLLM 0.33.0, judged incrementally and cold,
    give identical JSON (6 in the release tier, 50 in the slow one)."""
    tree = tmp_path / "vllm"
    shutil.copytree(vllm_release("0.33.0"), tree)
    judged_both_ways(tree, seed=32, count=count)


def whole_tree_judged_both_ways(
    tree: Path, seed: int, count: int, monkeypatch: pytest.MonkeyPatch
) -> int:
    """The edits made one after another (each kept), the whole tree checked after each with
    the kept verdicts, dependency record and run cache of the runs before it, and without
    them: the same JSON. Returns how many targets' verdicts the warm runs took. The cache is
    the test's own, beside the tree: `forget` moves folders of it aside, which another test
    may be using."""
    from eagle3lint.checkrun.verdicts import Verdicts

    monkeypatch.setenv("EAGLE3LINT_CACHE_DIR", str(tree.parent / "cache"))

    taken: list[int] = []
    real = Verdicts.take

    def counted(self: Verdicts, *args: Any) -> Any:
        found = real(self, *args)
        taken.append(len(found or ()))
        return found

    monkeypatch.setattr(Verdicts, "take", counted)
    CliRunner().invoke(app, ["check", str(tree), "--format", "json"])
    # Model files: an edit elsewhere that no target reads is answered by the run cache.
    for path, text in edits(tree.parent / MODELS, seed, count):
        path.write_text(text)
        warm = CliRunner().invoke(app, ["check", str(tree), "--format", "json"])
        saved = forget()
        cold = CliRunner().invoke(app, ["check", str(tree), "--format", "json"])
        restore(saved)
        assert (warm.exit_code, warm.stdout) == (cold.exit_code, cold.stdout), path
    return sum(taken)


def test_random_edits_of_a_fixture_tree_judged_whole_warm_and_cold(
    era_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 53: a warm whole-tree run judges only the targets whose reads an edit touched,
    and takes the others' verdicts, with the same report as a cold run."""
    assert whole_tree_judged_both_ways(
        era_copy / "vllm", seed=53, count=12, monkeypatch=monkeypatch
    )


@pytest.mark.parametrize("count", [4, pytest.param(30, marks=pytest.mark.slow)])
def test_random_edits_of_a_release_judged_whole_warm_and_cold(
    vllm_release: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, count: int
) -> None:
    """Issue 53's property on vLLM 0.33.0: seeded edits kept one after another, the whole tree
    checked warm (verdicts kept) and cold after each, give identical JSON (4 in the release
    tier, 30 in the slow one)."""
    tree = tmp_path / "vllm"
    shutil.copytree(vllm_release("0.33.0"), tree)
    assert whole_tree_judged_both_ways(tree, seed=53, count=count, monkeypatch=monkeypatch)


def test_a_warm_whole_tree_run_judges_only_the_readers_of_an_edited_file(
    era_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After an edit of one model file, a whole-tree run judges the targets that read it and
    takes every other one's verdict (its repairs and their flags too) from the last run, with
    the report of a cold run."""
    import eagle3lint.engine as engine

    monkeypatch.setenv("EAGLE3LINT_CACHE_DIR", str(era_copy.parent / "cache"))
    check("vllm")
    judged: list[str] = []
    real = engine._judged
    monkeypatch.setattr(
        engine,
        "_judged",
        lambda rules, target, *a: judged.append(target.arch) or real(rules, target, *a),
    )
    no_tap = era_copy / MODELS / "no_tap.py"
    no_tap.write_text(no_tap.read_text() + "\nx = 1\n")
    _, warm = check("vllm")
    assert judged == ["NoTapForCausalLM"]
    saved = forget()
    assert warm == check("vllm")[1]
    restore(saved)


@pytest.mark.parametrize("forgery", ["wrong types", "writable by others", "another tree's"])
def test_kept_verdicts_that_are_broken_or_not_the_users_are_no_verdicts(
    era_copy: Path, forgery: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A verdicts file is read as the summaries are (`checkrun.verdicts`): one whose fields do
    not rebuild, one another user could have written, one keyed for another tree: the targets
    are judged, as a cold run judges them."""
    monkeypatch.setenv("EAGLE3LINT_CACHE_DIR", str(era_copy.parent / "cache"))
    check("vllm")
    (verdicts,) = (default_cache_dir() / "summaries" / "deps").glob("*.verdicts.json")
    data = json.loads(verdicts.read_text())
    for entry in data["verdicts"].values():
        for target in entry["targets"]:
            for finding in target["findings"]:
                finding["message"] = "all clear"
                finding["line"] = "1" if forgery == "wrong types" else finding["line"]
    if forgery == "another tree's":
        data["key"] = "0" * 32
    verdicts.write_text(json.dumps(data))
    verdicts.chmod(0o666 if forgery == "writable by others" else 0o600)
    edited = era_copy / MODELS / "no_tap.py"
    edited.write_text(edited.read_text() + "\nx = 1\n")  # a run, not a replay
    warm = check("vllm")
    saved = forget()
    assert warm == check("vllm")
    restore(saved)
    assert "all clear" not in json.dumps(warm)


def test_the_repair_plan_is_kept_and_followed_by_what_it_read(
    era_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The plan a check makes of its fixable findings (libcst, a second of a run on a release)
    is kept in the summary cache: a run over unchanged repairs finds it there, and what it
    reports and what `fix --diff` prints are the planner's; an edited file it edits plans again."""
    import eagle3lint.codemod.plan as planner

    monkeypatch.setenv("EAGLE3LINT_CACHE_DIR", str(era_copy.parent / "cache"))
    calls: list[int] = []
    real = planner.plan
    monkeypatch.setattr(planner, "plan", lambda *a, **k: calls.append(1) or real(*a, **k))
    check("vllm")
    other = era_copy / MODELS / "rank_local.py"
    other.write_text(other.read_text() + "\nx = 1\n")  # a run, not a replay
    _, warm = check("vllm")
    diff = CliRunner().invoke(app, ["fix", "vllm", "--diff"]).stdout
    assert calls == [1]
    monkeypatch.setenv("EAGLE3LINT_CACHE_DIR", str(era_copy.parent / "fresh"))
    assert check("vllm")[1] == warm
    assert CliRunner().invoke(app, ["fix", "vllm", "--diff"]).stdout == diff
    no_tap = era_copy / MODELS / "no_tap.py"
    no_tap.write_text(no_tap.read_text() + "\nx = 1\n")
    check("vllm")
    assert len(calls) == 3


def test_fix_with_files_repairs_the_targets_check_with_them_reports(era_copy: Path) -> None:
    """`fix FILE...` repairs what `check FILE...` reports: the targets that read one of the
    files. A model file's readers alone; `interfaces.py`, which every target reads, all of
    them, as the whole tree's fix does."""

    def changed(*paths: str) -> list[str]:
        out = CliRunner().invoke(app, ["fix", *paths, "--diff"]).stdout
        return [line for line in out.splitlines() if line.startswith("+++ ")]

    assert changed(str(MODELS / "no_tap.py")) == [f"+++ b/{MODELS / 'no_tap.py'}"]
    assert changed(str(INTERFACES)) == changed("vllm")
    assert len(changed("vllm")) > 1
