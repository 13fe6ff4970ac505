"""The matrix as one self-contained HTML page: inline CSS, JS and data, no network needed.

The table is built in the browser from the embedded JSON (strings stored once, so a
35-release matrix stays small); the chart of ready targets per release is SVG made here.
"""

from __future__ import annotations

import json
from importlib import resources

from eagle3lint.codes import all_codes
from eagle3lint.matrix.links import rule_page
from eagle3lint.matrix.model import Cell, Matrix, Release
from eagle3lint.matrix.verdicts import ABSENT, BLOCKED, ERROR, READY, UNVERIFIED
from eagle3lint.report.escape import html_text, script_json

STATUS_KEY = {READY: "r", BLOCKED: "b", UNVERIFIED: "u", ERROR: "e"}
"""Cell statuses as the page's script reads them; anything else present is `n` (not a
target)."""

PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>EAGLE-3 readiness of {engine} architectures</title>
<style>{css}</style>
</head>
<body>
<header>
<div>
<h1>EAGLE-3 readiness of {engine} architectures</h1>
<p>{subtitle}</p>
<p>Generated {generated} by <code>{command}</code></p>
</div>
<figure class="chart">{chart}<figcaption>targets ready (green) of all targets, per release
</figcaption></figure>
</header>
<div class="controls">
<input id="search" type="search" placeholder="Search architecture, family or code…"
 aria-label="search" autofocus>
<label>role <select id="role"><option value="">all</option></select></label>
<label>status <select id="status"><option value="">any</option><option>ready</option>
<option>blocked</option><option>unverified</option><option>not a target</option>
<option>absent</option><option>regressed</option><option>never ready</option></select></label>
<label>in <select id="in"><option value="newest">newest release that has it</option></select>
</label>
<label>family <select id="family"><option value="">all</option></select></label>
<span class="legend"><span class="ready">✓ ready</span><span class="blocked">✗ blocked</span><span
 class="unverified">? unverified (--hf-config decides)</span><span
 class="other">○ not a target</span></span>
<span id="count"></span>
</div>
<div class="wrap">
<table id="matrix">
<thead>
<tr id="head"><th class="arch">architecture</th><th>family</th><th>role</th><th>first ready</th>
<th title="The decoder relays aux hidden states across pipeline-parallel ranks (newest
release that has it; vLLM has the relay from 0.30)">PP relay</th></tr>
<tr id="summary" class="summary"><th class="arch">targets ready</th>
<th></th><th></th><th></th><th></th></tr>
</thead>
<tbody id="body"></tbody>
</table>
</div>
<div id="popover" role="dialog"></div>
<footer>Each cell is what <code>eagle3lint check --{flag} RELEASE --require '*' --format json</code>
(a tree's column: <code>eagle3lint check TREE --require '*' --format json</code>) says about the
architecture: click a blocked cell for its findings. Hover a release for its contract.
</footer>
<script type="application/json" id="matrix-data">{data}</script>
<script>{js}</script>
</body>
</html>
"""


def render_html(matrix: Matrix) -> str:
    assets = resources.files("eagle3lint.matrix")
    releases = matrix.releases
    subtitle = (
        f"{len(matrix.rows)} architectures, {len(releases)} {matrix.engine_label} releases"
        + (f" ({releases[0].label} … {releases[-1].label})" if releases else "")
    )
    page = PAGE.format(
        css=assets.joinpath("page.css").read_text(encoding="utf-8"),
        js=assets.joinpath("page.js").read_text(encoding="utf-8"),
        subtitle=html_text(subtitle),
        engine=html_text(matrix.engine_label),
        flag=html_text(matrix.engine),
        generated=html_text(matrix.generated),
        command=html_text(matrix.command),
        chart=ready_chart(releases),
        data=script_json(page_data(matrix)),
    )
    return page


def page_data(matrix: Matrix) -> dict[str, object]:
    """What the page's script reads: releases, rules, rows whose cells are indices into a table
    of distinct cells, and a table of the strings those cells use."""
    strings: dict[str, int] = {}

    def ref(text: object) -> int:
        return strings.setdefault(str(text or ""), len(strings))

    cells: dict[str, int] = {"null": 0}
    """Each distinct cell once (most repeat from release to release); 0 is absent."""

    def cell(c: Cell) -> int:
        if c.status == ABSENT:
            return 0
        findings = [
            [f["code"], f["severity"], ref(f["message"]), ref(f["hint"]), ref(f["location"])]
            for f in c.findings
        ]
        data = [STATUS_KEY.get(c.status, "n"), c.codes, findings, [ref(v) for v in c.variants]]
        return cells.setdefault(json.dumps(data, separators=(",", ":")), len(cells))

    rows = [
        {
            "a": row.arch,
            "f": row.family,
            "r": row.role,
            "fr": row.first_ready,
            "pp": row.pp_aux_relay,
            "rg": [[r.ready_in, r.blocked_in] for r in row.regressions],
            "v": row.variant_releases,
            "c": [cell(c) for c in row.cells.values()],
        }
        for row in matrix.rows
    ]
    return {
        "releases": [_release(r) for r in matrix.releases],
        "rules": _rules(),
        "rows": rows,
        "cells": [json.loads(text) for text in cells],
        "strings": list(strings),
    }


def _release(release: Release) -> dict[str, object]:
    return {
        "label": release.label,
        "era": release.era,
        "getter": release.getter,
        "gate": release.gate,
        "pp": release.pp_aux_relay,
        "ready": release.ready,
        "targets": release.targets,
        "others": release.others,
        "errors": release.errors,
        "checked": release.checked,
    }


def _rules() -> dict[str, list[str | None]]:
    """code → [name, summary, URL of its documentation page (built-in codes only)]."""
    return {
        e.code.code: [e.code.name, e.code.summary, rule_page(e.code.code, e.plugin)]
        for e in all_codes()
    }


def ready_chart(releases: list[Release], bar: int = 14, height: int = 90) -> str:
    """Bars of ready targets (green) over all targets (grey), one per release."""
    if not releases:
        return ""
    top = max((r.targets for r in releases), default=0) or 1
    label_room = 46
    width = len(releases) * (bar + 4) + 70
    parts = [
        f'<svg width="{width}" height="{height + label_room}" role="img" '
        f'aria-label="ready targets per release">',
        f'<text x="0" y="10">{top}</text><text x="0" y="{height}">0</text>',
    ]
    for i, release in enumerate(releases):
        x = 30 + i * (bar + 4)
        all_h = round(height * release.targets / top)
        ready_h = round(height * release.ready / top)
        tip = html_text(f"{release.label}: {release.ready} of {release.targets} targets ready")
        parts.append(
            f"<g><title>{tip}</title>"
            f'<rect class="all" x="{x}" y="{height - all_h}" width="{bar}" height="{all_h}"/>'
            f'<rect class="ready" x="{x}" y="{height - ready_h}" width="{bar}" height="{ready_h}"/>'
            "</g>"
        )
        ly = height + 8
        parts.append(
            f'<text x="{x + bar / 2}" y="{ly}" transform="rotate(55 {x + bar / 2} {ly})">'
            f"{html_text(release.label)}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)
