"""Whole-release reports stay what they were, apart from deliberate changes.

`tests/data/reports/<version>.json` is the JSON report of `check --vllm <version>` with the
release root spelled `<root>`. A commit that changes one says why in its message; regenerate
with `python tests/test_saved_reports.py <version>...`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from eagle3lint.cli import app

SAVED = Path(__file__).resolve().parent / "data" / "reports"
runner = CliRunner()


def normalised_report(version: str) -> dict[str, Any]:
    """The report of `check --vllm version`, its root (where the cache lives) as `<root>`, and
    the cache's folder of releases (transformers' sources are read from there) as
    `<releases>`."""
    result = runner.invoke(app, ["check", "--vllm", version, "--format", "json"])
    assert result.exit_code in (0, 1), result.output
    root = json.loads(result.stdout)["vllm"]["root"]
    releases = str(Path(root).parent.parent)
    return json.loads(result.stdout.replace(root, "<root>").replace(releases, "<releases>"))


@pytest.mark.parametrize("version", ["0.16.0", "0.33.0"])
def test_report_matches_saved(version: str, vllm_release: Callable) -> None:
    vllm_release(version)
    saved = json.loads((SAVED / f"{version}.json").read_text())
    report = normalised_report(version)
    for part in ("vllm", "summary", "errors"):
        assert report[part] == saved[part], part
    saved_targets = {(t["arch"], t["variant"]): t for t in saved["targets"]}
    targets = {(t["arch"], t["variant"]): t for t in report["targets"]}
    assert targets.keys() == saved_targets.keys()
    for key, target in targets.items():
        assert target == saved_targets[key], key


if __name__ == "__main__":
    for version in sys.argv[1:]:
        text = json.dumps(normalised_report(version), indent=1, sort_keys=True)
        (SAVED / f"{version}.json").write_text(text + "\n")
