"""How each status is written, shared by the text, Markdown and CSV views."""

from __future__ import annotations

from eagle3lint.matrix.model import Cell, Release
from eagle3lint.matrix.verdicts import ABSENT, BLOCKED, NOT_A_TARGET, READY

SYMBOL = {READY: "✓", BLOCKED: "✗", NOT_A_TARGET: "○", ABSENT: "·"}
STYLE = {READY: "green", BLOCKED: "red", NOT_A_TARGET: "dim", ABSENT: "dim"}
LEGEND = (
    "✓ ready · ✗ blocked (by the codes shown; `eagle3lint explain CODE`) · "
    "○ not a target (draft or pooling model) · a dot or blank: not registered in that release · "
    "≠ platforms: a platform variant disagrees with CUDA (EAG104)"
)


def cell_text(cell: Cell) -> str:
    """`ready`, `blocked EAG101 EAG301`, `not a target`, or nothing for an absent cell."""
    if cell.status == BLOCKED:
        return " ".join(["blocked", *cell.codes])
    return "" if cell.status == ABSENT else cell.status


def gate_text(release: Release, limit: int | None = None) -> str:
    """The model_types the release's allow-list accepts, or `none` when it has no gate."""
    if release.gate is None:
        return "no gate"
    shown = release.gate if limit is None else release.gate[:limit]
    more = len(release.gate) - len(shown)
    return ", ".join(shown) + (f" (+{more})" if more else "")


def relay_text(relay: bool | None) -> str:
    """PP aux relay of a row: `yes`, `no`, or nothing where the release has no relay."""
    return "" if relay is None else "yes" if relay else "no"
