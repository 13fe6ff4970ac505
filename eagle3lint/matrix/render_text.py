"""The matrix on a terminal: a table as wide as the terminal allows.

With few releases each gets a column holding its verdict and codes; with more than fit, each
row gets a timeline (one character per release, oldest first) and the codes of its newest
release, so a 35-release matrix still reads on an 80-column terminal.
"""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from eagle3lint.matrix.glyphs import (
    STYLE,
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
from eagle3lint.matrix.model import Matrix, Row
from eagle3lint.matrix.verdicts import BLOCKED, UNVERIFIED
from eagle3lint.report.escape import printable, rich_text

RELEASE_COLUMN = 16
"""Width a release column needs for `blocked` and two codes."""
NOW_WIDTH = 12
FAMILY_WIDTH = 18


def render_text(matrix: Matrix, console: Console) -> None:
    labels = [r.label for r in matrix.releases]
    arch_width = max((len(printable(r.arch)) for r in matrix.rows), default=10)
    wide = arch_width + 36 + RELEASE_COLUMN * len(labels) <= console.width
    table = _per_release(matrix) if wide else _timeline(matrix, console.width)
    console.print(table)
    console.print(Text(legend(matrix), style="dim"))
    console.print(_releases(matrix))
    errors = error_lines(matrix, limit=3)
    if errors:
        console.print(Text(f"! {len(matrix.failed)} release(s) with errors:", style="bold magenta"))
        for line in errors:
            console.print(rich_text(f"  {line}"))
    regressions = [(row, r) for row in matrix.rows for r in row.regressions]
    if regressions:
        console.print(Text(f"⚠ {len(regressions)} regression(s):", style="bold red"))
        for row, r in regressions:
            codes = " ".join(r.codes)
            line = f"  {row.arch}: ready in {r.ready_in}, blocked in {r.blocked_in} by {codes}"
            console.print(rich_text(line))


def _per_release(matrix: Matrix) -> Table:
    table = Table(
        title=rich_text(f"EAGLE-3 readiness by {matrix.engine_label} release"),
        title_justify="left",
    )
    table.add_column("family", style="cyan", no_wrap=True)
    table.add_column("architecture", no_wrap=True)
    table.add_column("role", style="dim")
    for release in matrix.releases:
        table.add_column(rich_text(release.label), min_width=7)
    table.add_column("first ready")
    table.add_column("PP relay")
    for row, family in _grouped(matrix):
        cells = [rich_text(cell_text(c), style=STYLE[c.status]) for c in row.cells.values()]
        table.add_row(
            rich_text(family),
            rich_text(row.arch, style="bold red" if row.regressions else ""),
            rich_text(row.role),
            *cells,
            rich_text(row.first_ready or "never"),
            relay_text(row.pp_aux_relay),
        )
    return table


def _timeline(matrix: Matrix, width: int) -> Table:
    first, newest = matrix.releases[0].label, matrix.releases[-1].label
    table = Table(
        title=rich_text(
            f"EAGLE-3 readiness, {len(matrix.releases)} {matrix.engine_label} releases "
            f"{first} … {newest} "
            "(timeline: one character per release, oldest first)"
        ),
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    # The timeline is never cut; the other columns give way, the optional ones first.
    releases = len(matrix.releases)
    arch_width = max((len(printable(r.arch)) for r in matrix.rows), default=10)
    room = width - (releases + 2) - (len("first ready") + 2) - (NOW_WIDTH + 2)
    with_pp = room - 4 >= min(arch_width, 24)
    room -= 4 if with_pp else 0
    with_family = room - (FAMILY_WIDTH + 2) >= arch_width
    room -= FAMILY_WIDTH + 2 if with_family else 0
    if with_family:
        table.add_column("family", style="cyan", no_wrap=True, max_width=FAMILY_WIDTH)
    table.add_column("architecture", no_wrap=True, max_width=max(16, min(arch_width, room)))
    table.add_column("timeline", no_wrap=True, min_width=releases)
    table.add_column("first ready", no_wrap=True)
    if with_pp:
        table.add_column("PP", no_wrap=True)
    table.add_column("now", min_width=NOW_WIDTH)
    for row, family in _grouped(matrix):
        timeline = Text()
        for cell in row.cells.values():
            timeline.append(SYMBOL[cell.status], style=STYLE[cell.status])
        now = row.current()
        blocked = now.status in (BLOCKED, UNVERIFIED)
        notes = rich_text(" ".join(now.codes) if blocked and now.codes else cell_text(now))
        notes.stylize(STYLE[now.status])
        if row.regressions:
            notes.append(
                printable(f"  ⚠ regressed in {row.regressions[-1].blocked_in}"), style="bold red"
            )
        if row.variant_releases:
            notes.append("  ≠ platforms", style="yellow")
        cells = [rich_text(row.arch), timeline, rich_text(row.first_ready or "never")]
        cells += [relay_text(row.pp_aux_relay)] if with_pp else []
        table.add_row(*([rich_text(family)] if with_family else []), *cells, notes)
    return table


def _grouped(matrix: Matrix) -> list[tuple[Row, str]]:
    """Rows (sorted by family) with their family's name on the first row of each family."""
    rows = matrix.rows
    return [
        (row, row.family if i == 0 or rows[i - 1].family != row.family else "")
        for i, row in enumerate(rows)
    ]


def _releases(matrix: Matrix) -> Table:
    table = Table(title="Per release", title_justify="left")
    names = ["release", "contract", "targets ready"]
    if matrix.runner_facts:
        names += ["model_type gate", "PP aux relay", "runner"]
    for name in names:
        table.add_column(name)
    for release in matrix.releases:
        cells = [rich_text(release.label), rich_text(contract_text(release)), ready_text(release)]
        if matrix.runner_facts:
            cells += [
                rich_text(gate_text(release, limit=4)),
                release_relay_text(release),
                rich_text(release.runner),
            ]
        table.add_row(*cells)
    return table
