"""One escaping layer per output format, for everything eagle3lint did not write itself.

File names, architecture names, release versions, messages that quote them and whatever a
plugin supplies come from the analysed tree or its user. Printed as they are, they could forge
output: a file named `::error file=a.py::…` starts a line that GitHub Actions reads as a
workflow command of its own (its runner reads one from any line whose first non-blank
characters are `::`, and `::stop-commands::` silences the real ones); a line break adds a fake
summary line; ANSI escapes restyle or erase a terminal; bidirectional overrides show another
name than the real one; `|` breaks a Markdown table and `<script>` or `[a](url)` put markup
in it; `=`, `+`, `-` or `@` starting a CSV cell is run by a spreadsheet as a formula.

Each format has its function(s) here, and its renderer uses those and nothing else:

- terminal text (the text and full reports, `matrix`'s table, `pair`'s table, `fix`'s lines,
  messages on stderr): `printable`, or `rich_text` for a rich renderable;
- GitHub workflow commands: `workflow_data` (the message) and `workflow_property` (`file=`,
  `title=`);
- Markdown: `markdown_text` (table cells and inline text) and `markdown_code_block`;
- CSV: `csv_cell`;
- SARIF: `sarif_text` (messages a viewer shows);
- HTML: `html_text` and `script_json` (data embedded in the page);
- JSON (`check --format json`, `matrix --format json`): exact strings, escaped by `json.dumps`,
  whose ASCII-only output carries no control or bidi character.
"""

from __future__ import annotations

import html
import json
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.text import Text

_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_COLON_PAIR = re.compile(r"^:|:(?=:)|:$")
"""The colons that could make `::` on a line: one next to another, or one at either end of the
text (which eagle3lint's own `path:line:` could extend to a pair)."""
_MARKDOWN = re.compile(r"[\\`\[\]|&<>]|^:|:(?=:)|:$")
_MARKDOWN_AS = {"&": "&amp;", "<": "&lt;", ">": "&gt;", ":": "&#58;"}
_FORMULA_START = ("=", "+", "-", "@", "\uff1d", "\uff0b", "\uff0d", "\uff20")
"""What makes a spreadsheet read a cell as a formula (OWASP's list, with the full-width forms
some spreadsheets take too; its tab and carriage return are escaped before this applies)."""


def _controls(text: str) -> str:
    """Every control, line-separator and bidi-override character as its Python escape
    (`\\n`, `\\x1b`, `\\u202e`): one line, shown as it really is."""
    return _UNPRINTABLE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def printable(text: str) -> str:
    """Terminal text: controls escaped as `_controls` does, and every colon that could make
    `::` (wherever a terminal wraps the line) written `\\x3a`."""
    return _COLON_PAIR.sub(r"\\x3a", _controls(text))


def rich_text(text: str, style: str = "") -> Text:
    """`printable(text)` as a rich `Text`: rich reads no markup (`[red]`) or emoji code
    (`:smile:`) in it, as it would in a plain string."""
    from rich.text import Text

    return Text(printable(text), style=style)


def workflow_data(text: str) -> str:
    """The message of a workflow command: one line of it (controls escaped) in the runner's own
    escaping, which it undoes for display."""
    return _controls(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def workflow_lines(lines: list[str]) -> str:
    """A message of several lines: each escaped, joined by the runner's escaped line break."""
    return "%0A".join(map(workflow_data, lines))


def workflow_property(text: str) -> str:
    """A property value of a workflow command: its separators `:` and `,` escaped too."""
    return workflow_data(text).replace(":", "%3A").replace(",", "%2C")


def markdown_text(text: str) -> str:
    """Text in a Markdown table cell or paragraph: controls escaped; backslash, backtick,
    brackets and `|` backslash-escaped (no code span, link or new column); `&`, `<`, `>` as
    entities (no raw HTML); colons that could make `::` as `&#58;`. It renders as `text`."""
    return _MARKDOWN.sub(lambda m: _MARKDOWN_AS.get(m.group()) or "\\" + m.group(), _controls(text))


def markdown_code_block(text: str, language: str = "") -> str:
    """`text` (terminal-escaped: one line) in a fenced block no backtick run in it can close."""
    shown = printable(text)
    longest = max((len(run) for run in re.findall(r"`+", shown)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{shown}\n{fence}"


def csv_cell(text: str) -> str:
    """A CSV cell: controls escaped (a cell is one line), and a cell that a spreadsheet would
    read as a formula, or whose line could begin with `::`, prefixed with `'` as OWASP
    advises. The csv module quotes what needs it."""
    cell = _controls(text)
    start = cell.lstrip()
    if start.startswith(_FORMULA_START) or start.startswith("::"):
        return "'" + cell
    return cell


def sarif_text(text: str) -> str:
    """A SARIF message a viewer shows: controls escaped (JSON escapes the rest)."""
    return _controls(text)


def html_text(text: str) -> str:
    """Text in an HTML element or attribute: controls escaped, then HTML's own escaping."""
    return html.escape(_controls(text))


def script_json(data: object) -> str:
    """`data` as JSON inside a `<script>` element: `<`, `>` and `&` (only ever inside its
    strings) as JSON escapes, so no `</script>` or `<!--` can end the element early."""
    text = json.dumps(data, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
