"""The era fixtures: one small fake vLLM tree per EAGLE-3 contract era (and two SGLang trees:
0.5.8's unguarded and bare capture calls, 0.5.23's gate), checked end to end.

`fixtures/eras/<era>/vllm` is shaped like one release (0.16.0 stub protocol, 0.18.0 mixin and
default bodies, 0.22.0 without the model-type gate, 0.33.0 with per-platform model families).
`fixtures/eras/expected.json` (explained in `EXPECTED.md`) lists, per architecture, the rule
codes `eagle3lint check` should report and what vLLM's `supports_eagle3()` would answer.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

import pytest

cli = pytest.importorskip("eagle3lint.cli")
from typer.testing import CliRunner  # noqa: E402 - only once the CLI is importable

ERAS_DIR = Path(__file__).resolve().parent.parent / "fixtures" / "eras"
EXPECTED: dict[str, Any] = json.loads((ERAS_DIR / "expected.json").read_text())
ERAS = sorted(EXPECTED["eras"])

TARGET_KEYS = {"arch", "class", "path", "line", "implements_eagle3", "eagle3_ready", "findings"}
FINDING_KEYS = {"code", "rule", "severity", "path", "line", "column", "message", "fixable"}


@functools.cache
def run_check(*args: str) -> dict[str, Any]:
    """`eagle3lint check ARGS --format json --exit-zero`, parsed (cached per argument list)."""
    argv = ["check", *args, "--format", "json", "--exit-zero", "--no-cache"]
    result = CliRunner().invoke(cli.app, argv)
    assert result.exit_code == 0, f"eagle3lint {' '.join(argv)} exited {result.exit_code}:\n" + (
        result.output
    )
    try:
        return json.loads(result.stdout)
    except json.JSONDecodeError as exc:  # pragma: no cover - a broken report
        pytest.fail(f"eagle3lint {' '.join(argv)} printed no JSON ({exc}):\n{result.output}")


def era_report(era: str) -> dict[str, Any]:
    """Every architecture as asked (`--require *`): the full verdicts the expectations list."""
    return run_check(str(ERAS_DIR / era), "--require", "*")


def targets_by_arch(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["arch"]: t for t in report["targets"]}


def codes(target: dict[str, Any]) -> list[str]:
    return sorted({f["code"] for f in target["findings"]})


def describe(target: dict[str, Any]) -> str:
    return "\n".join(
        f"    {f['code']} {f['severity']} {Path(f['path']).name}:{f['line']} {f['message']}"
        for f in target["findings"]
    )


@pytest.mark.parametrize("era", ERAS)
def test_report_shape(era: str) -> None:
    report = era_report(era)
    engine = "vllm" if (ERAS_DIR / era / "vllm").is_dir() else "sglang"
    assert {"eagle3lint", engine, "targets", "errors"} <= report.keys()
    assert {"root", "version", "contract"} <= report[engine].keys()
    version_file = (ERAS_DIR / era / engine / "_version.py").read_text()
    version = re.search(r"__version__ = version = ['\"]([^'\"]+)", version_file)
    assert version is not None
    assert report[engine]["version"] == version.group(1)
    assert report["errors"] == [], report["errors"]
    for target in report["targets"]:
        assert target.keys() >= TARGET_KEYS, target.keys()
        for finding in target["findings"]:
            assert finding.keys() >= FINDING_KEYS, finding.keys()


@pytest.mark.parametrize("era", ERAS)
def test_every_registered_arch_is_reported(era: str) -> None:
    reported = set(targets_by_arch(era_report(era)))
    expected = set(EXPECTED["eras"][era]["targets"])
    assert reported == expected, (
        f"missing: {sorted(expected - reported)}, unexpected: {sorted(reported - expected)}"
    )


CASES = [
    pytest.param(era, arch, id=f"{era}-{arch}")
    for era in ERAS
    for arch in sorted(EXPECTED["eras"][era]["targets"])
]


@pytest.mark.parametrize(("era", "arch"), CASES)
def test_arch_verdict(era: str, arch: str) -> None:
    want = EXPECTED["eras"][era]["targets"][arch]
    target = targets_by_arch(era_report(era)).get(arch)
    assert target is not None, f"{arch} not reported for {era}"
    problems = []
    if codes(target) != want["codes"]:
        problems.append(f"codes: expected {want['codes']}, got {codes(target)}")
    if target["implements_eagle3"] is not want["implements_eagle3"]:
        problems.append(
            f"implements_eagle3: expected {want['implements_eagle3']}, "
            f"got {target['implements_eagle3']}"
        )
    has_error = any(f["severity"] == "error" for f in target["findings"])
    if target["eagle3_ready"] is has_error:
        problems.append(f"eagle3_ready is {target['eagle3_ready']} with error findings={has_error}")
    assert not problems, (
        f"{era} {arch} ({want['why']})\n  " + "\n  ".join(problems) + "\n" + describe(target)
    )


HF = EXPECTED["hf_config"]


@pytest.mark.parametrize("era", sorted(HF["expect"]))
def test_gate_with_hf_config(era: str) -> None:
    report = run_check(str(ERAS_DIR / era), "--hf-config", str(ERAS_DIR / HF["path"]))
    by_arch = targets_by_arch(report)
    problems = []
    for arch, want in HF["expect"][era].items():
        if arch not in by_arch:
            if want.get("includes"):
                problems.append(f"{arch} not reported with --hf-config")
            continue  # leaving out an architecture the config.json does not name is fine
        got = set(codes(by_arch[arch]))
        missing = set(want.get("includes", ())) - got
        unwanted = set(want.get("excludes", ())) & got
        if missing or unwanted:
            problems.append(
                f"{arch}: missing {sorted(missing)}, unexpected {sorted(unwanted)}\n"
                + describe(by_arch[arch])
            )
    assert not problems, f"{era} --hf-config {HF['path']}:\n" + "\n".join(problems)


def test_out_of_tree_model() -> None:
    oot = EXPECTED["out_of_tree"]
    report = run_check(str(ERAS_DIR / oot["against"]), str(ERAS_DIR / oot["path"]))
    by_arch = targets_by_arch(report)
    for arch, want in oot["targets"].items():
        assert arch in by_arch, f"{arch} not reported; got {sorted(by_arch)}"
        target = by_arch[arch]
        assert Path(target["path"]).parent.name == oot["path"], target["path"]
        assert codes(target) == want["codes"], describe(target)
        assert target["implements_eagle3"] is want["implements_eagle3"]
