"""The matrix as Markdown (docs, pull requests) and as CSV (spreadsheets).

The Markdown is a page of its own (docs/compatibility.md) as well as a file another site includes
into one of its pages (vLLM's docs: `--8<--` of pymdownx.snippets, examples/mkdocs/): it opens
with no title of its own (the page around it has one), its sections are `##` headings, and its
links are absolute URLs, right wherever the file ends up.
"""

from __future__ import annotations

import csv
import io
from urllib.parse import quote

from eagle3lint.matrix.glyphs import (
    SYMBOL,
    cell_text,
    contract_text,
    error_lines,
    gate_text,
    legend,
    ready_text,
    relay_text,
    release_relay_text,
)
from eagle3lint.matrix.links import rule_pages
from eagle3lint.matrix.model import Cell, Matrix
from eagle3lint.matrix.verdicts import ABSENT, BLOCKED, ERROR, UNVERIFIED
from eagle3lint.report.escape import csv_cell, markdown_code_block, markdown_text


def title(matrix: Matrix) -> str:
    return f"EAGLE-3 compatibility of {matrix.engine_label}'s architectures"


def render_markdown(matrix: Matrix) -> str:
    """The page, or the file to include; every name and message in it goes through
    `markdown_text`."""
    md = markdown_text
    labels = [md(r.label) for r in matrix.releases]
    # A `#` title would be a second one on the page that includes this file.
    if matrix.command:
        out = [f"{title(matrix)}, generated on {md(matrix.generated)} by", ""]
        out += [markdown_code_block(matrix.command, "bash"), ""]
        out += [
            "The same matrix as one HTML page (search, filters, the findings of each blocked "
            "cell): the same command with `--format html -o eagle3-matrix.html`.",
            "",
        ]
    else:
        out = [f"{title(matrix)}.", ""]
    out += [
        f"Each cell is what `eagle3lint check --{matrix.engine} <release> --require '*' "
        "--format json` "
        "(for a column that is a tree: `eagle3lint check <tree> --require '*' --format json`) "
        "says about the architecture on that release: every architecture asked about, so a "
        "model whose code claims no EAGLE-3 support shows its blockers."
        + (
            f" A verdict is the one of the model runner {matrix.engine_label} runs by default "
            "(per release below; V1 and V2 differ where `ready_by_runner` says so), and holds "
            'for every speculative method under "methods gated": they all need the target\'s '
            "aux hidden states."
            if matrix.runner_facts
            else ""
        ),
        "",
        legend(matrix) + ".",
        "",
        "## Per release",
        "",
    ]
    if matrix.runner_facts:
        out += [
            "| release | contract | targets ready (+ unverified) | not targets "
            "| model_types the gate accepts | PP aux relay | default model runner "
            "| methods gated |",
            "|---|---|---|---|---|---|---|---|",
        ]
    else:
        out += ["| release | contract | targets ready | not targets |", "|---|---|---|---|"]
    for r in matrix.releases:
        counts = f"{ready_text(r)} | {r.others}"
        line = f"| {md(r.label)} | {md(contract_text(r))} | {counts} |"
        if matrix.runner_facts:
            pp = release_relay_text(r)
            line += f" {md(gate_text(r))} | {pp} | {md(r.runner)} | {md(', '.join(r.methods))} |"
        out.append(line)
    if matrix.failed:
        out += ["", "## ! Releases with errors", ""]
        out += [f"- {md(line)}" for line in error_lines(matrix)]
    regressions = [(row, r) for row in matrix.rows for r in row.regressions]
    if regressions:
        pages = rule_pages()
        out += ["", "## ⚠ Regressions", ""]
        out += [
            f"- **{md(row.arch)}**: ready in {md(r.ready_in)}, **blocked in {md(r.blocked_in)}** "
            "by " + ", ".join(_code_link(c, pages) for c in r.codes)
            for row, r in regressions
        ]
    out += ["", "## Architectures", ""]
    out.append(
        "| family | architecture | role | first ready | PP relay | " + " | ".join(labels) + " |"
    )
    out.append("|---" * (5 + len(labels)) + "|")
    for row in matrix.rows:
        arch = f"**{md(row.arch)}** ⚠" if row.regressions else md(row.arch)
        cells = [_markdown_cell(c) for c in row.cells.values()]
        out.append(
            f"| {md(row.family)} | {arch} | {md(row.role)} | {md(row.first_ready or '—')} "
            f"| {relay_text(row.pp_aux_relay)} | " + " | ".join(cells) + " |"
        )
    variants = [row for row in matrix.rows if row.variant_releases]
    if variants:
        out += ["", "## Platform variants that disagree with CUDA", ""]
        for row in variants:
            releases = ", ".join(row.variant_releases)
            message = row.cells[row.variant_releases[-1]].variants[0]
            out.append(f"- **{md(row.arch)}** ({md(releases)}): {md(message)}")
    return "\n".join(out) + "\n"


def _markdown_cell(cell: Cell) -> str:
    if cell.status == ABSENT:
        return ""
    if cell.status in (BLOCKED, UNVERIFIED):
        return SYMBOL[cell.status] + " " + markdown_text(" ".join(cell.codes))
    if cell.status == ERROR:
        return SYMBOL[ERROR] + " error"
    return SYMBOL[cell.status]


def _code_link(code: str, pages: dict[str, str]) -> str:
    """The code, linked to its page if it has one (a plugin's code has none here)."""
    url = pages.get(code)
    return f"[{markdown_text(code)}]({quote(url, safe=':/')})" if url else markdown_text(code)


def render_csv(matrix: Matrix) -> str:
    """One row per architecture, one column per release (`blocked EAG101 EAG301`)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    labels = [r.label for r in matrix.releases]
    head = ["family", "architecture", "role", "first_ready", "regressions", "pp_aux_relay"]
    writer.writerow([*head, *map(csv_cell, labels)])
    for row in matrix.rows:
        regressions = "; ".join(f"{r.ready_in}->{r.blocked_in}" for r in row.regressions)
        cells = [
            row.family,
            row.arch,
            row.role,
            row.first_ready or "",
            regressions,
            relay_text(row.pp_aux_relay),
            *(cell_text(c) for c in row.cells.values()),
        ]
        writer.writerow(map(csv_cell, cells))
    return buffer.getvalue()
