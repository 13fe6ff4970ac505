"""The output formats of `eagle3lint matrix` (light: the command line imports it at start)."""

from __future__ import annotations

from enum import StrEnum


class MatrixFormat(StrEnum):
    text = "text"
    markdown = "markdown"
    json = "json"
    csv = "csv"
    html = "html"
