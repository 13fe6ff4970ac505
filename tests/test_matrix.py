"""`eagle3lint matrix`: columns from the command line, cells equal to `check --format json`."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from eagle3lint import cli
from eagle3lint.errors import UsageError
from eagle3lint.matrix.columns import Column, expand_specs
from eagle3lint.matrix.model import build_matrix
from eagle3lint.matrix.render_text import render_text
from eagle3lint.matrix.verdicts import blocking_findings
from eagle3lint.sources.release_index import final_releases

REPO = Path(__file__).resolve().parent.parent
ERAS = REPO / "fixtures" / "eras"
ERA_TREES = [ERAS / name for name in ("e5_platforms", "e2_stub", "e4_nogate", "e3_mixin")]
KIMI = "KimiK25ForConditionalGeneration"
KIMI_CONFIG = REPO / "examples" / "kimi-k2.5" / "config.json"
INDEX = ["0.11.0", "0.11.1", "0.12.0", "0.13.0", "0.14.0", "0.14.1", "0.15.0"]


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli.app, list(args))
    return result.exit_code, result.output


def matrix_json(*args: str) -> dict[str, Any]:
    code, output = invoke("matrix", *args, "--format", "json")
    assert code == 0, output
    return json.loads(output)


def check_json(*args: str) -> dict[str, Any]:
    """`check --require '*'`: the matrix asks about every architecture, claimed or not."""
    code, output = invoke("check", *args, "--format", "json", "--exit-zero", "--require", "*")
    assert code == 0, output
    return json.loads(output)


def assert_cells_equal_check(matrix: dict[str, Any], checks: dict[str, dict[str, Any]]) -> None:
    """Every cell says what `check --format json` says on that release, and nothing more."""
    rows = {row["arch"]: row for row in matrix["rows"]}
    for label, report in checks.items():
        targets = {t["arch"]: t for t in report["targets"]}
        for arch, row in rows.items():
            cell = row["cells"][label]
            if arch not in targets:
                assert cell == {"status": "absent", "codes": []}, (label, arch)
                continue
            target = targets[arch]
            status = {True: "ready", False: "blocked", None: "not a target"}
            expected = status[target["eagle3_ready"]]
            if target["role"] == "target" and target["eagle3_ready"] is None:
                expected = "unverified"
            assert cell["status"] == expected, (label, arch)
            blocking = [f["code"] for f in blocking_findings(target)]
            assert cell["codes"] == list(dict.fromkeys(blocking)), (label, arch)
        assert set(targets) <= set(rows), label


# -- columns ------------------------------------------------------------------------------------
def test_specs_expand_versions_ranges_and_latest_in_order_without_repeats() -> None:
    specs = ["0.13.0", "0.11.1..0.13.0", "latest", "0.15.0"]
    assert expand_specs(specs, INDEX) == ["0.13.0", "0.11.1", "0.12.0", "0.15.0"]
    assert expand_specs(["0.14.0..latest"], INDEX) == ["0.14.0", "0.14.1", "0.15.0"]


@pytest.mark.parametrize("spec", ["v0.16.0", "0.16.0..x", "0.14.0..0.12.0", "0.9.0..0.10.0", "new"])
def test_bad_specs_are_usage_errors(spec: str) -> None:
    with pytest.raises(UsageError, match="--vllm"):
        expand_specs([spec], INDEX)


def test_only_final_releases_count_in_order() -> None:
    listed = ["0.12.0", "0.11.0", "0.12.0rc1", "0.13.0.dev4", "0.10.1.1", "0.8.5.post1"]
    assert final_releases(listed) == ["0.8.5.post1", "0.10.1.1", "0.11.0", "0.12.0"]


# -- cells, first ready, regressions -----------------------------------------------------------
def report(version: str, *targets: dict[str, Any]) -> dict[str, Any]:
    return {"vllm": {"version": version, "root": "/r", "details": {}}, "targets": list(targets)}


def target(arch: str, ready: bool | None, *codes: str, role: str | None = None) -> dict[str, Any]:
    found = [
        {"code": c, "severity": "error", "message": c, "path": "/r/x.py", "line": 1} for c in codes
    ]
    data: dict[str, Any] = {"arch": arch, "path": "/r/model_executor/models/x.py"}
    data.update({"eagle3_ready": ready, "findings": found})
    if role:
        data["role"] = role
    return data


def test_first_ready_and_a_regression_with_its_codes() -> None:
    results = [
        (Column(version="0.3.0"), report("0.3.0", target("A", False, "EAG201"))),
        (Column(version="0.1.0"), report("0.1.0", target("A", False, "EAG101"))),
        (Column(version="0.2.0"), report("0.2.0", target("A", True))),
        (Column(version="0.4.0"), report("0.4.0")),
        (
            Column(version="0.5.0"),
            report("0.5.0", target("A", True), target("B", None, role="draft")),
        ),
    ]
    matrix = build_matrix(results)
    assert [r.label for r in matrix.releases] == ["0.1.0", "0.2.0", "0.3.0", "0.4.0", "0.5.0"]
    a, b = matrix.rows
    statuses = [c.status for c in a.cells.values()]
    assert statuses == ["blocked", "ready", "blocked", "absent", "ready"]
    assert a.first_ready == "0.2.0" and a.family == "x"
    assert [(r.ready_in, r.blocked_in, r.codes) for r in a.regressions] == [
        ("0.2.0", "0.3.0", ["EAG201"])
    ]
    assert b.role == "draft" and b.cells["0.5.0"].status == "not a target" and not b.first_ready
    assert matrix.releases[-1].targets == 1 and matrix.releases[-1].others == 1


def test_an_unverified_target_is_neither_ready_nor_blocked() -> None:
    """`eagle3_ready: null` on a target with `unverified`: its cell names what decides it."""
    gate = {"code": "EAG502", "severity": "info", "message": "m", "path": "/r/x.py", "line": 1}
    unverified = target("A", None)
    unverified.update(role="target", findings=[gate], unverified=[{"code": "EAG502"}])
    matrix = build_matrix([(Column(version="0.1.0"), report("0.1.0", unverified))])
    [row] = matrix.rows
    cell = row.cells["0.1.0"]
    assert (cell.status, cell.codes) == ("unverified", ["EAG502"]) and not row.first_ready
    release = matrix.releases[0].to_json()["summary"]
    assert (release["targets"], release["ready"], release["unverified"], release["blocked"]) == (
        1,
        0,
        1,
        0,
    )


# -- the command, on the era fixtures and on real releases ------------------------------------
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_fixture_matrix_cells_equal_check_json(jobs: str) -> None:
    matrix = matrix_json(*map(str, ERA_TREES), "--jobs", jobs)
    checks = {check_json(str(tree))["vllm"]["version"]: check_json(str(tree)) for tree in ERA_TREES}
    assert [r["label"] for r in matrix["releases"]] == ["0.16.0", "0.18.0", "0.22.0", "0.33.0"]
    assert_cells_equal_check(matrix, checks)
    rows = {row["arch"]: row for row in matrix["rows"]}
    assert rows["NoMixinForCausalLM"]["cells"]["0.16.0"]["status"] == "absent"
    # Ready on 0.18.0 but for the model_type its allow-list tests, which no --hf-config decides.
    custom = rows["CustomTapForCausalLM"]
    cell = custom["cells"]["0.18.0"]
    assert (cell["status"], cell["codes"]) == ("unverified", ["EAG502"])
    assert custom["first_ready"] == "0.22.0"
    assert rows["FastLMForCausalLM"]["platform_variants_disagree"] == ["0.33.0"]
    gates = [r["contract"]["gate_model_types"] for r in matrix["releases"]]
    assert gates[0] and gates[1] and gates[2] is None and gates[3] is None
    relay = [r["contract"]["pp_aux_relay"] for r in matrix["releases"]]
    assert relay == [False, False, False, True]


def test_repeated_versions_are_told_apart_by_path() -> None:
    matrix = matrix_json(str(ERAS / "e2_stub"), str(ERAS / "e2_stub" / "vllm"), "--jobs", "1")
    assert [r["label"] for r in matrix["releases"]] == [
        str(ERAS / "e2_stub"),
        str(ERAS / "e2_stub" / "vllm"),
    ]


def test_arch_selection_leaves_other_releases_absent() -> None:
    matrix = matrix_json(*map(str, ERA_TREES), "--arch", "NoMixinForCausalLM")
    (row,) = matrix["rows"]
    assert [c["status"] for c in row["cells"].values()] == [
        "absent",
        "blocked",
        "blocked",
        "blocked",
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--arch", "NoSuchForCausalLM"], "not registered in any"),
        ([str(ERAS / "out_of_tree")], "not a vLLM or SGLang tree"),
        ([str(ERAS / "missing")], "no such file"),
        (["--vllm", "v0.16"], "not a vLLM version"),
        ([], "no releases"),
    ],
)
def test_bad_input_exits_2_with_a_message(args: list[str], message: str) -> None:
    extra = [str(ERAS / "e2_stub")] if args[:1] == ["--arch"] else []
    code, output = invoke("matrix", *extra, *args)
    assert code == 2 and message in output and "Traceback" not in output


def test_output_into_a_folder_is_refused_and_leaves_nothing(tmp_path: Path) -> None:
    code, output = invoke("matrix", str(ERAS / "e2_stub"), "-o", str(tmp_path), "--jobs", "1")
    assert code == 2 and "--output" in output
    assert not (tmp_path.parent / f".{tmp_path.name}.tmp").exists()


def test_kimi_acceptance_on_real_releases(vllm_release: Callable[[str], Path]) -> None:
    versions = ["0.16.0", "0.17.0", "0.18.0"]
    args = [f"--vllm={v}" for v in versions] + ["--arch", KIMI, "--hf-config", str(KIMI_CONFIG)]
    matrix = matrix_json(*args)
    (row,) = matrix["rows"]
    assert [c["status"] for c in row["cells"].values()] == ["blocked", "blocked", "ready"]
    assert row["first_ready"] == "0.18.0" and not row["regressions"]
    assert {"EAG102", "EAG301", "EAG501"} <= set(row["cells"]["0.16.0"]["codes"])
    checks = {
        v: check_json("--vllm", v, "--arch", KIMI, "--hf-config", str(KIMI_CONFIG))
        for v in versions
    }
    assert_cells_equal_check(matrix, checks)
    code, text = invoke("matrix", *args)
    assert code == 0 and "first ready" in text and "EAG501" in text and "ready" in text


def test_real_release_matrix_equals_check_on_every_arch(
    vllm_release: Callable[[str], Path],
) -> None:
    versions = ["0.17.0", "0.18.0"]
    matrix = matrix_json(*(f"--vllm={v}" for v in versions))
    assert_cells_equal_check(matrix, {v: check_json("--vllm", v) for v in versions})
    assert len(matrix["rows"]) > 200


# -- outputs -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def fixture_outputs() -> dict[str, str]:
    outputs = {}
    for fmt in ("text", "markdown", "csv", "html"):
        code, output = invoke("matrix", *map(str, ERA_TREES), "--format", fmt, "--jobs", "1")
        assert code == 0, output
        outputs[fmt] = output
    return outputs


def test_markdown_has_the_command_a_release_table_and_a_row_per_arch(
    fixture_outputs: dict[str, str],
) -> None:
    page = fixture_outputs["markdown"]
    assert "eagle3lint matrix" in page and "| release | contract |" in page
    releases = "| 0.16.0 | 0.18.0 | 0.22.0 | 0.33.0 |"
    assert "| family | architecture | role | first ready | PP relay " + releases in page
    assert "| half_impl | HalfImplForCausalLM | target | — | yes | ✗ EAG101 |" in page
    assert "FastLMForCausalLM** (0.33.0)" in page  # platform variants disagree


def test_csv_is_one_row_per_arch_and_one_column_per_release(
    fixture_outputs: dict[str, str],
) -> None:
    rows = list(csv.DictReader(io.StringIO(fixture_outputs["csv"])))
    by_arch = {row["architecture"]: row for row in rows}
    assert by_arch["NoTapForCausalLM"]["0.22.0"] == "blocked EAG301"
    assert by_arch["GoodLlamaForCausalLM"]["0.16.0"] == "unverified EAG502"
    assert by_arch["GoodLlamaForCausalLM"]["first_ready"] == "0.22.0"
    assert by_arch["NoMixinForCausalLM"]["0.16.0"] == ""


def test_html_needs_no_network(fixture_outputs: dict[str, str]) -> None:
    page = fixture_outputs["html"]
    assert page.startswith("<!doctype html>") and "<style>" in page and "<script>" in page
    for external in ("<link", "src=", "@import", "url("):
        assert external not in page


def test_text_shows_a_timeline_when_releases_do_not_fit(fixture_outputs: dict[str, str]) -> None:
    from rich.console import Console

    matrix = build_matrix([(Column(path=tree), check_json(str(tree))) for tree in ERA_TREES])
    narrow = Console(file=io.StringIO(), width=100)
    render_text(matrix, narrow)
    text = narrow.file.getvalue()  # type: ignore[attr-defined]
    assert "timeline" in text and "✗✗✗✗" in text  # HalfImpl, blocked in every release
    assert "0.16.0" in fixture_outputs["text"] and "blocked EAG301" in fixture_outputs["text"]
