"""Text files a check reads besides module summaries, as optional inputs of the run."""

from __future__ import annotations

from pathlib import Path

from eagle3lint.index.project import ProjectIndex
from eagle3lint.sources.files import SourceNotFound, UnreadableSource, decode_text


def outside_text(index: ProjectIndex, path: Path) -> str | None:
    """The text of the file at `path`, noted among the run's inputs (`read_outside`); None when
    it is not there or cannot be read."""
    try:
        return decode_text(index.read_outside(path))
    except (SourceNotFound, UnreadableSource):
        return None
