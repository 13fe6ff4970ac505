"""Every code eagle3lint can report: the rules' codes and the few the tool reports itself.

`eagle3lint rules`, `eagle3lint explain`, the SARIF driver and `docs/rules/` all list codes from
here, so a code documented in one place is documented in all of them.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from eagle3lint.errors import UsageError
from eagle3lint.findings import Severity
from eagle3lint.rule import Code, Explanation, load_rules

TOOL_PLUGIN = "eagle3lint"

INPUTS = "inputs"
"""The rule column of codes about input the tool could not analyse."""

SUPPRESSIONS = "suppressions"
"""The rule column of EAG904."""

SYNTAX_ERROR = Code(
    "EAG901",
    "syntax-error",
    "A file could not be parsed, so nothing in it was checked.",
    Severity.ERROR,
    explain=Explanation(
        runtime="vLLM imports a model's module the first time its architecture is resolved. "
        "A file Python cannot parse fails that import; eagle3lint cannot analyse it either, so "
        "it reports the file under `errors` and exits with 2.",
        error="```text\nSyntaxError: invalid syntax\n```\n(or whatever Python reports for the "
        "file), raised by the import.",
        releases="Not release-specific.",
        example="class MyModelForCausalLM(nn.Module, SupportsEagle3: ...\n",
        fix="class MyModelForCausalLM(nn.Module, SupportsEagle3): ...\n",
    ),
)

UNREADABLE_INPUT = Code(
    "EAG902",
    "unreadable-input",
    "A path does not exist, or a file could not be read or decoded.",
    Severity.ERROR,
    explain=Explanation(
        runtime="Nothing in vLLM: this is about eagle3lint's input. A path given on the command "
        "line that does not exist, or a source file that cannot be read or decoded, is reported "
        "under `errors` and the run exits with 2.",
        error="None from vLLM. eagle3lint prints, for example, "
        "`EAG902 models/my_model.py: no such file or directory`.",
        releases="Not release-specific.",
        example="eagle3lint check models/my_modle.py\n",
        fix="eagle3lint check models/my_model.py\n",
        language="shell",
    ),
)

INCOMPLETE_ANALYSIS = Code(
    "EAG903",
    "incomplete-analysis",
    "A registered architecture points at a module that is not in the tree, or a rule crashed.",
    Severity.ERROR,
    explain=Explanation(
        runtime="vLLM's model registry maps each architecture to a module and class name and "
        "imports the module lazily, when a model of that architecture is loaded. A registry "
        "entry whose module is missing from the tree fails at that moment. EAG903 is also "
        "reported when a rule plugin raised an exception or exited on a target, ran longer than "
        "`rule-timeout`, or yielded something that is not a finding of its own codes (a bug in "
        "the rule; the other rules still ran), and when a plugin was refused at load: a bad "
        "declaration, or a slug or code another rule already has.",
        error="```text\nModuleNotFoundError: No module named '….models.my_model'"
        "\n```\nwhen the architecture is loaded; for a crashed rule, eagle3lint's "
        "`internal error in rule <slug>` message.",
        releases="Not release-specific.",
        example='_TEXT_GENERATION_MODELS = {\n    "MyModelForCausalLM": ("my_model", '
        '"MyModelForCausalLM"),  # no my_model.py\n}\n',
        fix='_TEXT_GENERATION_MODELS = {\n    "MyModelForCausalLM": ("my_model", '
        '"MyModelForCausalLM"),  # model_executor/models/my_model.py\n}\n',
    ),
)

UNUSED_SUPPRESSION = Code(
    "EAG904",
    "unused-suppression",
    "An `# eagle3lint: ignore` comment silenced nothing.",
    Severity.INFO,
    explain=Explanation(
        runtime="Nothing in vLLM. A suppression comment applies to findings on its own line, or "
        "on the next line when the comment stands alone. One that matches no finding (the "
        "code was fixed, or the comment is on the wrong line) is reported so it does not hide "
        "a later regression by accident.",
        error="None.",
        releases="Not release-specific.",
        example="class MyModelForCausalLM(nn.Module, SupportsEagle3):  "
        "# eagle3lint: ignore[EAG101]\n    ...\n",
        fix="class MyModelForCausalLM(nn.Module, SupportsEagle3): ...\n",
    ),
)

ROLES = "roles"
"""The rule column of EAG905."""

NOT_A_TARGET = Code(
    "EAG905",
    "not-a-target",
    "A draft or pooling architecture was asked for: no EAGLE-3 target verdict applies.",
    Severity.INFO,
    explain=Explanation(
        runtime="vLLM runs speculative decoding only on a generative target model. An "
        "architecture listed in the registry's `_SPECULATIVE_DECODING_MODELS` is a drafter "
        "(it is loaded as the draft, never as the target), and a class whose "
        "`is_pooling_model` is true (through `VllmModelForPooling` or a pooling adapter such "
        "as `as_embedding_model`) runs with the pooling runner, which has no drafter. Neither "
        "gets target findings or an `eagle3_ready` verdict (it is `null` in the JSON report); "
        "naming one with `--arch` gets this note instead.",
        error="None: the target contract does not apply.",
        releases="All releases with a speculative-decoding section in the registry.",
        example="eagle3lint check --vllm 0.33.0 --arch Eagle3LlamaForCausalLM\n",
        fix="eagle3lint check --vllm 0.33.0 --arch LlamaForCausalLM\n",
        language="shell",
    ),
)

BASELINES = "baseline"
"""The rule column of EAG906."""

STALE_BASELINE_ENTRY = Code(
    "EAG906",
    "stale-baseline-entry",
    "A baseline entry accepts a finding that no longer occurs.",
    Severity.ERROR,
    explain=Explanation(
        runtime="Nothing in vLLM. A baseline (`--baseline`, `baseline = ...`) accepts findings "
        "that exist today so the hook can guard a tree with known upstream bugs. When such a "
        "finding goes away (the bug was fixed, or the code moved and the finding now shows as "
        "new), its entry is reported, as pytest reports a strict xfail that passes: a stale "
        "entry would otherwise accept the same bug if it came back. Only entries the run "
        "could have matched are judged: of its targets, of the codes it reports, in the files "
        "it reports on. `--write-baseline` with the same paths drops stale entries and keeps "
        "the others, with their `note`.",
        error="None. eagle3lint prints, for example, `eagle3lint-baseline.json:12:1: EAG906 "
        "The baseline accepts EAG301 for LlamaForCausalLM in models/llama.py "
        '("…"), which no longer occurs.`',
        releases="Not release-specific.",
        example="eagle3lint check vllm --baseline eagle3lint-baseline.json  # EAG906: fixed\n",
        fix="eagle3lint check vllm --write-baseline eagle3lint-baseline.json\n",
        language="shell",
    ),
)

TOOL_CODES: dict[str, tuple[Code, ...]] = {
    INPUTS: (SYNTAX_ERROR, UNREADABLE_INPUT, INCOMPLETE_ANALYSIS),
    SUPPRESSIONS: (UNUSED_SUPPRESSION,),
    ROLES: (NOT_A_TARGET,),
    BASELINES: (STALE_BASELINE_ENTRY,),
}
"""Codes the tool reports itself, by the name shown in the rule column."""


@dataclass(frozen=True, slots=True)
class CodeEntry:
    """One code with the rule (or tool part) that reports it and the plugin shipping it."""

    code: Code
    rule: str
    plugin: str
    engines: tuple[str, ...] = ("vllm",)
    """The engines whose targets the rule judges (the tool's own codes: vLLM's wording)."""


def all_codes() -> list[CodeEntry]:
    """The codes of every installed rule, then the tool's own, in a stable order."""
    entries = [
        CodeEntry(code, cls.slug, cls.plugin, tuple(cls.engines))
        for cls in load_rules()
        for code in cls.codes
    ]
    entries += [
        CodeEntry(code, rule, TOOL_PLUGIN) for rule, codes in TOOL_CODES.items() for code in codes
    ]
    return entries


def find_code(code: str) -> CodeEntry:
    """The entry of `code` (any case); UsageError with a did-you-mean message if unknown."""
    entries = {entry.code.code: entry for entry in all_codes()}
    wanted = code.strip().upper()
    if wanted in entries:
        return entries[wanted]
    close = difflib.get_close_matches(wanted, entries, n=3, cutoff=0.6)
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    raise UsageError(f"unknown code {code!r}{hint}; `eagle3lint rules` lists them")


def check_selectors(selectors: list[str], where: str) -> None:
    """UsageError (exit 2) for a selector that selects no known code: `--select EAG999` or a
    lower-case `eag3` would otherwise silently disable the check, as ruff refuses them too."""
    codes = [entry.code.code for entry in all_codes()]
    prefixes = sorted({code[:n] for code in codes for n in range(1, len(code) + 1)})
    unknown = [s for s in selectors if not any(code.startswith(s) for code in codes)]
    if not unknown:
        return
    problems = []
    for selector in unknown:
        close = difflib.get_close_matches(selector.upper(), prefixes, n=3, cutoff=0.6)
        if selector.upper() in prefixes:
            close = [selector.upper()]
        hint = f" (closest known: {', '.join(close)})" if close else ""
        problems.append(f"`{selector}`{hint}")
    raise UsageError(
        f"unknown rule selector {', '.join(problems)} in {where}; "
        "`eagle3lint rules` lists the codes"
    )
