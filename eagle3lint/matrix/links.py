"""Where the views of the matrix that link to rule pages (HTML, Markdown) find them."""

from __future__ import annotations

from functools import cache
from importlib import metadata

from eagle3lint.codes import TOOL_PLUGIN, all_codes


@cache
def rule_docs_url() -> str | None:
    """The project's `docs/rules/` on its home page, from the installed package's metadata."""
    try:
        urls = metadata.metadata("eagle3lint").get_all("Project-URL") or []
    except metadata.PackageNotFoundError:
        return None
    for entry in urls:
        label, _, url = entry.partition(",")
        if label.strip().lower() == "homepage" and "github.com" in url:
            return url.strip().rstrip("/") + "/blob/main/docs/rules/"
    return None


def rule_page(code: str, plugin: str) -> str | None:
    """The absolute URL of `code`'s page: only built-in codes have one. Never a relative link,
    so that a view copied or included into another site (vLLM's docs) links to the same page."""
    docs = rule_docs_url()
    return f"{docs}{code}.md" if docs and plugin == TOOL_PLUGIN else None


def rule_pages() -> dict[str, str]:
    """code → the absolute URL of its page, for every code that has one."""
    pages = {e.code.code: rule_page(e.code.code, e.plugin) for e in all_codes()}
    return {code: url for code, url in pages.items() if url}
