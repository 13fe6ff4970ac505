"""The matrix's HTML page in a real browser: headless Chromium over the DevTools protocol.

The page is generated for the era fixtures (four small release trees); the test loads it from
disk with networking off, and checks what a reader does with it: the table renders, the search
box hides rows that do not match, a blocked cell shows its findings with links to the rule
pages. Screenshots are left in the test's tmp folder.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from cdp import Browser
from typer.testing import CliRunner

from eagle3lint import cli

ERAS = Path(__file__).resolve().parent.parent / "fixtures" / "eras"
TREES = [ERAS / name for name in ("e2_stub", "e3_mixin", "e4_nogate", "e5_platforms")]
ROWS = "#body tr[data-row]"
VISIBLE_ROWS = "#body tr[data-row]:not(.hidden)"


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Browser, Path]]:
    folder = tmp_path_factory.mktemp("matrix-html")
    html = folder / "matrix.html"
    result = CliRunner().invoke(
        cli.app, ["matrix", *map(str, TREES), "--format", "html", "-o", str(html), "--jobs", "1"]
    )
    assert result.exit_code == 0, result.output
    browser = Browser(folder / "profile")
    try:
        browser.open(html)
        browser.wait_for(f"document.querySelectorAll({ROWS!r}).length > 0")
        yield browser, folder
    finally:
        browser.close()


def count(browser: Browser, selector: str) -> int:
    return int(browser.evaluate(f"document.querySelectorAll({selector!r}).length"))


def set_control(browser: Browser, control: str, value: str) -> None:
    """Set a search box or select as a reader would, firing its input event."""
    browser.evaluate(
        f"(() => {{ const e = document.getElementById({control!r}); e.value = {value!r};"
        " e.dispatchEvent(new Event('input')); })()"
    )


def apply_steps(browser: Browser, steps: list[tuple[str, str, int]]) -> None:
    """Set each control in turn and check how many rows stay visible."""
    for control, value, visible in steps:
        set_control(browser, control, value)
        assert count(browser, VISIBLE_ROWS) == visible, (control, value)


def test_table_renders_every_arch_and_release(page: tuple[Browser, Path]) -> None:
    browser, folder = page
    browser.screenshot(folder / "matrix.png")
    assert count(browser, ROWS) == 22
    heads = browser.evaluate(
        "[...document.querySelectorAll('#head th.release')].map(e => e.textContent)"
    )
    assert heads == ["0.16.0", "0.18.0", "0.22.0", "0.33.0"]
    # 0.16.0's allow-list leaves every target without an error unverified (no --hf-config).
    assert browser.evaluate("document.querySelector('#summary th.release').textContent") == "0/15"
    assert count(browser, "td.s-ready") > 0 and count(browser, "td.s-blocked") > 0
    assert count(browser, "td.s-unverified") > 0
    assert count(browser, ".chart svg rect.ready") == 4
    assert "22 of 22" in browser.evaluate("document.getElementById('count').textContent")


def test_search_hides_rows_that_do_not_match(page: tuple[Browser, Path]) -> None:
    browser, folder = page
    browser.type_into("#search", "nomixin")
    browser.wait_for(f"document.querySelectorAll({VISIBLE_ROWS!r}).length === 2")
    names = "r => r.cells[0].firstChild.textContent"
    shown = browser.evaluate(f"[...document.querySelectorAll({VISIBLE_ROWS!r})].map({names})")
    assert sorted(shown) == ["NoMixinForCausalLM", "NoMixinVLForConditionalGeneration"]
    # A family or a code is searchable as well.
    browser.screenshot(folder / "search.png")
    apply_steps(browser, [("search", "EAG303", 1), ("search", "mm_wrapper", 5), ("search", "", 22)])


def test_status_role_and_family_filters(page: tuple[Browser, Path]) -> None:
    browser, _ = page
    steps = [
        ("in", "0", 22),
        ("status", "unverified", 5),  # no error on 0.16.0, its model_type not given
        ("role", "target", 5),
        ("status", "ready", 0),
        ("status", "", 22),
        ("family", "half_impl", 1),
        ("family", "", 22),
    ]
    apply_steps(browser, steps)


def test_a_blocked_cell_reveals_its_findings(page: tuple[Browser, Path]) -> None:
    browser, folder = page
    selector = "tr[data-row] td.s-blocked[title*='EAG303']"
    browser.click(selector)
    browser.wait_for("getComputedStyle(document.getElementById('popover')).display === 'block'")
    text = browser.evaluate("document.getElementById('popover').innerText")
    assert "NoReturnForCausalLM" in text and "EAG303" in text
    links = browser.evaluate(
        "[...document.querySelectorAll('#popover a')].map(a => a.getAttribute('href'))"
    )
    assert links and all(link.endswith("docs/rules/EAG303.md") for link in links)
    browser.screenshot(folder / "blocked-cell.png")
    browser.send("Input.dispatchKeyEvent", session=True, type="keyDown", key="Escape")
    browser.wait_for("getComputedStyle(document.getElementById('popover')).display === 'none'")


def test_a_release_that_could_not_be_checked_shows_error_cells(tmp_path: Path) -> None:
    import os

    from vllm_tree import write_vllm_tree

    broken = tmp_path / "broken"
    interfaces = write_vllm_tree(broken) / "model_executor" / "models" / "interfaces.py"
    interfaces.unlink()
    os.mkfifo(interfaces)  # the contract cannot be read
    html = tmp_path / "matrix.html"
    args = [str(TREES[0]), str(broken), "--format", "html", "-o", str(html), "--jobs", "1"]
    result = CliRunner().invoke(cli.app, ["matrix", *args])
    assert result.exit_code == 2, result.output
    browser = Browser(tmp_path / "profile")
    try:
        browser.open(html)
        browser.wait_for(f"document.querySelectorAll({ROWS!r}).length > 0")
        rows = count(browser, ROWS)
        assert count(browser, "td.s-error") == rows  # the broken release's whole column
        title = browser.evaluate("document.querySelector('td.s-error').getAttribute('title')")
        assert title.startswith("could not be checked: EAG902 is a FIFO")
        assert browser.evaluate("document.querySelector('td.s-error').textContent") == "!"
        browser.screenshot(tmp_path / "error-column.png")
    finally:
        browser.close()


def test_a_narrow_window_opens_on_the_newest_release(
    page: tuple[Browser, Path], tmp_path: Path
) -> None:
    """Issue 31: the newest releases were off-screen at 1400 px with 24 release columns; the
    table now opens scrolled to its newest column, the architecture column still in view."""
    html = page[1] / "matrix.html"
    narrow = Browser(tmp_path / "profile", width=520, height=700)
    try:
        narrow.open(html)
        narrow.wait_for(f"document.querySelectorAll({ROWS!r}).length > 0")
        seen = narrow.evaluate(
            "(() => { const wrap = document.querySelector('.wrap').getBoundingClientRect();"
            " const heads = document.querySelectorAll('#head th.release');"
            " const last = heads[heads.length - 1].getBoundingClientRect();"
            " const arch = document.querySelector('#head th.arch').getBoundingClientRect();"
            " return [document.querySelector('.wrap').scrollLeft > 0,"
            " last.right <= wrap.right + 1, arch.left >= wrap.left - 1]; })()"
        )
        narrow.screenshot(tmp_path / "narrow.png")
    finally:
        narrow.close()
    assert seen == [True, True, True], seen
