"""How each status is written, shared by the text, Markdown and CSV views."""

from __future__ import annotations

from eagle3lint.matrix.model import Cell, Matrix, Release
from eagle3lint.matrix.verdicts import ABSENT, BLOCKED, ERROR, NOT_A_TARGET, READY, UNVERIFIED

SYMBOL = {READY: "✓", BLOCKED: "✗", UNVERIFIED: "?", NOT_A_TARGET: "○", ABSENT: "·", ERROR: "!"}
STYLE = {
    READY: "green",
    BLOCKED: "red",
    UNVERIFIED: "yellow",
    NOT_A_TARGET: "dim",
    ABSENT: "dim",
    ERROR: "bold magenta",
}
LEGEND = (
    "✓ ready · ✗ blocked (by the codes shown; `eagle3lint explain CODE`) · "
    "? unverified: no error, but what decides it is in the checkpoint's config "
    "(the model_type, an image-token attribute; `--hf-config` decides it) · "
    "○ not a target (draft or pooling model) · a dot or blank: not registered in that release · "
    "≠ platforms: a platform variant disagrees with CUDA (EAG104)"
)
ERROR_LEGEND = "! error: the release could not be checked (its errors are listed)"
"""Added to the legend when some release could not be checked."""


def cell_text(cell: Cell) -> str:
    """`ready`, `blocked EAG101 EAG301`, `unverified EAG502`, `not a target`, `error`, or
    nothing for an absent cell."""
    if cell.status in (BLOCKED, UNVERIFIED):
        return " ".join([cell.status, *cell.codes])
    return "" if cell.status == ABSENT else cell.status


def contract_text(release: Release) -> str:
    """The release's contract era, or why there is none."""
    return release.era or ("" if release.checked else "not checked")


def legend(matrix: Matrix) -> str:
    """The legend, with the error mark when some release could not be checked."""
    unchecked = any(not r.checked for r in matrix.releases)
    return LEGEND + (" · " + ERROR_LEGEND if unchecked else "")


def error_lines(matrix: Matrix, limit: int | None = None) -> list[str]:
    """`LABEL: CODE message` for the errors of each release (`limit` per release, then how many
    more), unescaped."""
    lines = []
    for release in matrix.failed:
        shown = release.errors if limit is None else release.errors[:limit]
        lines += [f"{release.label}: {error}" for error in shown]
        if len(release.errors) > len(shown):
            lines.append(f"{release.label}: {len(release.errors) - len(shown)} more")
    return lines


def gate_text(release: Release, limit: int | None = None) -> str:
    """The model_types the release's allow-list accepts, `no gate` when it has none, nothing
    when it could not be checked."""
    if not release.checked:
        return ""
    if release.gate is None:
        return "no gate"
    shown = release.gate if limit is None else release.gate[:limit]
    more = len(release.gate) - len(shown)
    return ", ".join(shown) + (f" (+{more})" if more else "")


def relay_text(relay: bool | None) -> str:
    """PP aux relay of a row: `yes`, `no`, or nothing where the release has no relay."""
    return "" if relay is None else "yes" if relay else "no"


def release_relay_text(release: Release) -> str:
    """Whether a release has the PP aux relay: `yes`, `no`, nothing if it was not checked."""
    return relay_text(release.pp_aux_relay if release.checked else None)


def ready_text(release: Release) -> str:
    """`ready / targets`, with the unverified ones (no error; the checkpoint's config decides)."""
    unverified = f" (+{release.unverified} ?)" if release.unverified else ""
    return f"{release.ready}{unverified} / {release.targets}"
