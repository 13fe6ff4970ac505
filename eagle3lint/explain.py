"""The long form of a code as Markdown: `eagle3lint explain`, `docs/rules/` and SARIF help."""

from __future__ import annotations

from eagle3lint.codes import CodeEntry

DOCS_URL = "https://github.com/eagle3lint/eagle3lint/blob/main/docs/rules"
"""Where the generated pages are published, one `<CODE>.md` each."""


def explanation_markdown(entry: CodeEntry) -> str:
    """One code's page: what it checks, what the engine does, its error, releases, example,
    fix."""
    code = entry.code
    fixable = "yes (`eagle3lint fix`)" if code.fixable else "no"
    lines = [
        f"# {code.code} {code.name}",
        "",
        code.summary,
        "",
        "| rule | severity | fixable | plugin |",
        "| --- | --- | --- | --- |",
        f"| {entry.rule} | {code.severity} | {fixable} | {entry.plugin} |",
    ]
    explain = code.explain
    if explain is None:
        return "\n".join([*lines, "", "No longer explanation is available for this code.", ""])
    sections = [
        (f"What {_engine_label(entry.engines)} does at run time", explain.runtime),
        ("The error", explain.error),
        ("Releases affected", explain.releases),
        ("Example", _fenced(explain.example, explain.language)),
        ("Fix", _fenced(explain.fix, explain.language)),
    ]
    if code.fixable:
        sections.append(("When fix cannot repair it", FIX_REFUSED))
    for title, body in sections:
        lines += ["", f"## {title}", "", body.strip()]
    return "\n".join([*lines, ""])


FIX_REFUSED = """
`check` plans the repair of each target it reports, with the planner `fix` uses, and marks a
finding `[*]` only when that plan succeeds for every file the target needs: `fix` repairs a
target whole or not at all. Otherwise the finding says why (`not fixable:` in
`--output-format full`, `fix_refused` in JSON, `fixRefused` in SARIF's result properties), and
`fix` prints the same reason on its `not fixed:` line: a shape of code the codemod does not
rewrite safely, another blocker of the target with no automatic fix, a file in a cached
release or excluded by the configuration, or a rewrite that would not compile or would leave
a name undefined.
"""


def _engine_label(engines: tuple[str, ...]) -> str:
    from eagle3lint.engines import wing_named

    labels = []
    for name in engines:
        try:
            labels.append(wing_named(name).label)
        except KeyError:  # a plugin's engine that is not installed
            labels.append(name)
    return " and ".join(labels) or "the engine"


def _fenced(code: str, language: str) -> str:
    return f"```{language}\n{code.rstrip()}\n```"
