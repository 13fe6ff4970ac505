"""`matrix --format markdown` in vLLM's docs: examples/mkdocs/'s hook, copied as is into a small
mkdocs project laid out like a vLLM checkout (mkdocs.yaml beside `vllm/`, the hook under
docs/mkdocs/hooks/), writes the include file a page pulls in with pymdownx.snippets, and a real
`mkdocs build --strict` renders it: the tables hold what `matrix --format json` says."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
import time
from html.parser import HTMLParser
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from typer.testing import CliRunner

from eagle3lint import cli
from eagle3lint.matrix.columns import Column
from eagle3lint.matrix.glyphs import SYMBOL
from eagle3lint.matrix.model import build_matrix
from eagle3lint.matrix.render_flat import render_markdown
from eagle3lint.matrix.verdicts import ABSENT, BLOCKED, ERROR, UNVERIFIED

REPO = Path(__file__).resolve().parent.parent
HOOK = REPO / "examples" / "mkdocs" / "eagle3_matrix.py"
INCLUDE = "docs/generated/eagle3_matrix.inc.md"

MKDOCS_YAML = """\
site_name: vLLM
theme:
  name: null
  custom_dir: theme
plugins: []
exclude_docs: |
  *.inc.md
hooks:
  - docs/mkdocs/hooks/eagle3_matrix.py
markdown_extensions:
  - attr_list
  - pymdownx.superfences
  - pymdownx.snippets:
      check_paths: true
  - toc:
      permalink: true
nav:
  - index.md
  - features/eagle3_support.md
"""
"""vLLM's mkdocs.yaml, cut down to what bears on an include, and `check_paths` so that a missing
include fails the build. Its theme is mkdocs-material; this one writes the page's content alone
(the Markdown made it, not the theme), so that every table and heading here is the page's."""

THEME = "<!doctype html>\n<title>{{ page.title }}</title>\n{{ page.content }}\n"

PAGE = f"""\
# EAGLE-3 support

Generated from this checkout's sources by eagle3lint.

--8<-- "{INCLUDE}"
"""


class Tables(HTMLParser):
    """The text of every table cell in a page, and its headings, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self.headings: list[tuple[str, str]] = []
        self._cell: list[str] | None = None
        self._heading: tuple[str, list[str]] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag in ("h1", "h2", "h3"):
            self._heading = (tag, [])

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append("".join(self._cell).strip())
            self._cell = None
        elif tag in ("h1", "h2", "h3") and self._heading is not None:
            level, text = self._heading
            # The permalink's ¶ is not part of the title.
            self.headings.append((level, "".join(text).rstrip("¶").strip()))
            self._heading = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
        if self._heading is not None:
            self._heading[1].append(data)


def expected_cell(cell: dict[str, Any]) -> str:
    """A JSON cell as the Markdown writes it: its symbol, and the codes of what decides it."""
    status = cell["status"]
    if status == ABSENT:
        return ""
    if status == ERROR:
        return SYMBOL[ERROR] + " error"
    if status in (BLOCKED, UNVERIFIED):
        return " ".join([SYMBOL[status], *cell["codes"]])
    return SYMBOL[status]


def vllm_checkout(tree: Path) -> None:
    """Make `tree` (a copy of the e2_stub fixture: `vllm/` at its top) a docs project as vLLM
    lays it out, with the example hook copied unchanged."""
    hooks = tree / "docs" / "mkdocs" / "hooks"
    hooks.mkdir(parents=True)
    shutil.copy(HOOK, hooks / HOOK.name)
    (tree / "mkdocs.yaml").write_text(MKDOCS_YAML)
    (tree / "theme").mkdir()
    (tree / "theme" / "main.html").write_text(THEME)
    (tree / "docs" / "index.md").write_text("# vLLM\n")
    (tree / "docs" / "features").mkdir()
    (tree / "docs" / "features" / "eagle3_support.md").write_text(PAGE)


def test_the_hook_writes_an_include_that_mkdocs_renders_as_the_matrix(era_copy: Path) -> None:
    vllm_checkout(era_copy)
    start = time.monotonic()
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict"],
        cwd=era_copy,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert build.returncode == 0, build.stderr
    assert time.monotonic() - start < 60, "a small tree: the build should take seconds"
    assert "eagle3_matrix: eagle3lint matrix vllm --format markdown" in build.stderr

    include = (era_copy / INCLUDE).read_text()
    assert not include.startswith("#"), "a title of its own would be a second one on the page"
    # vLLM publishes only the page that includes it.
    assert not list((era_copy / "site").rglob("eagle3_matrix.inc*"))

    page = (era_copy / "site" / "features" / "eagle3_support" / "index.html").read_text()
    assert "--8<--" not in page
    parsed = Tables()
    parsed.feed(page)
    levels = [level for level, _ in parsed.headings]
    assert levels[0] == "h1" and "h1" not in levels[1:], parsed.headings
    assert parsed.headings[0][1] == "EAGLE-3 support"

    code, output = invoke_json(era_copy)
    assert code == 0, output
    data = json.loads(output)
    labels = [r["label"] for r in data["releases"]]
    assert len(parsed.tables) == 2, parsed.tables
    per_release, archs = parsed.tables

    assert per_release[0][0] == "release"
    assert [row[0] for row in per_release[1:]] == labels
    for row, release in zip(per_release[1:], data["releases"], strict=True):
        summary = release["summary"]
        assert row[2].startswith(f"{summary['ready']} ") and row[2].endswith(
            f"/ {summary['targets']}"
        )
        assert row[3] == str(summary["not_targets"])

    assert archs[0] == ["family", "architecture", "role", "first ready", "PP relay", *labels]
    rendered = {row[1]: row for row in archs[1:]}
    assert len(rendered) == len(archs) - 1
    assert sorted(rendered) == sorted(row["arch"] for row in data["rows"])
    statuses = set()
    for row in data["rows"]:
        cells = rendered[row["arch"]]
        assert cells[0] == row["family"] and cells[2] == row["role"], cells
        assert cells[3] == (row["first_ready"] or "—")
        assert cells[5:] == [expected_cell(row["cells"][label]) for label in labels]
        statuses |= {row["cells"][label]["status"] for label in labels}
    # The fixture holds both kinds of verdict a cell shows with its codes.
    assert {BLOCKED, UNVERIFIED} <= statuses


def invoke_json(tree: Path) -> tuple[int, str]:
    """`eagle3lint matrix vllm --format json` in `tree`, as the hook runs it (the same column)."""
    result = CliRunner().invoke(cli.app, ["matrix", str(tree / "vllm"), "--format", "json"])
    return result.exit_code, result.stdout


def load_hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location("eagle3_matrix_hook", HOOK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_without_eagle3lint_the_hook_stops_the_build_saying_so(
    era_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mkdocs.exceptions import PluginError

    hook = load_hook()
    monkeypatch.setattr(hook.shutil, "which", lambda *args, **kwargs: None)
    with pytest.raises(PluginError, match="eagle3lint is not installed; `pip install eagle3lint`"):
        hook.generate(era_copy)
    assert not (era_copy / INCLUDE).exists()


def test_without_a_vllm_tree_the_hook_stops_the_build_saying_so(tmp_path: Path) -> None:
    from mkdocs.exceptions import PluginError

    with pytest.raises(PluginError, match="no vLLM tree at"):
        load_hook().generate(tmp_path)


def target(arch: str, ready: bool, *codes: str) -> dict[str, Any]:
    found = [
        {"code": c, "severity": "error", "message": c, "path": "/r/x.py", "line": 1} for c in codes
    ]
    return {"arch": arch, "path": "/r/x.py", "eagle3_ready": ready, "findings": found}


def test_rule_links_are_absolute_wherever_the_file_is_included() -> None:
    """A regression links its codes to their pages: absolute URLs, which a relative link from
    vLLM's docs/ would not find; a code with no page of ours (a plugin's) is plain text."""
    results = [
        (Column(version=v), {"vllm": {"version": v}, "targets": [target("A", *verdict)]})
        for v, verdict in [("0.1.0", (True,)), ("0.2.0", (False, "EAG201", "XYZ001"))]
    ]
    page = render_markdown(build_matrix(results))
    assert "## ⚠ Regressions" in page and not page.startswith("#")
    regression = next(line for line in page.splitlines() if line.startswith("- **A**"))
    assert "[EAG201](https://github.com/" in regression and "/docs/rules/EAG201.md)" in regression
    assert regression.endswith(", XYZ001")
