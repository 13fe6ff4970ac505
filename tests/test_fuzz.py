"""Property tests: real vLLM files, mutated as half-edited checkouts are, never crash eagle3lint.

Each example takes one file of a writable copy of vLLM 0.16.0 (a model, the registry, the
interfaces, the model_type gate), drops, duplicates or truncates lines, swaps tokens or shifts
indentation, and checks the architecture that reads it. No exception may escape, none may be
swallowed as an internal error, and whatever `fix` would write must compile.
"""

from __future__ import annotations

import ast
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import libcst as cst
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from planning import plan_edits

from eagle3lint.engine import CheckOptions, run_check
from eagle3lint.errors import UsageError
from eagle3lint.index.parsing import parse_job

TARGETS = {
    "model_executor/models/llama.py": "LlamaForCausalLM",
    "model_executor/models/qwen2.py": "Qwen2ForCausalLM",
    "model_executor/models/deepseek_v2.py": "DeepseekV2ForCausalLM",
    "model_executor/models/interfaces.py": "Qwen2ForCausalLM",
    "model_executor/models/registry.py": "LlamaForCausalLM",
    "config/speculative.py": "DeepseekV2ForCausalLM",
}
"""File to mutate → the architecture whose check reads it."""
KINDS = ("drop", "duplicate", "truncate", "swap", "indent", "dedent")
# Lines where a mutation changes what the rules see, rather than a docstring or a weight loader.
INTERESTING = re.compile(r"\s*(class |def |for |if |elif |return|self\.|aux|@|\w+ = )")
TOKEN = re.compile(r"\w+|[^\w\s]")

Mutation = tuple[str, int, int]
mutations = st.lists(
    st.tuples(st.sampled_from(KINDS), st.integers(0, 2**16), st.integers(0, 2**16)),
    min_size=1,
    max_size=4,
)


def mutate(text: str, edits: list[Mutation]) -> str:
    """Apply `edits` in turn: (kind, which place, how much); places wrap around the file."""
    for kind, where, amount in edits:
        if kind == "swap":
            tokens = list(TOKEN.finditer(text))
            if len(tokens) < 2:
                continue
            first, second = sorted((where % len(tokens), amount % len(tokens)))
            if first == second:
                continue
            a, b = tokens[first], tokens[second]
            text = (
                text[: a.start()]
                + b.group()
                + text[a.end() : b.start()]
                + a.group()
                + text[b.end() :]
            )
            continue
        lines = text.splitlines(keepends=True)
        if not lines:
            continue
        picks = [i for i, line in enumerate(lines) if INTERESTING.match(line)]
        i = picks[where % len(picks)] if picks and amount % 4 else where % len(lines)
        line = lines[i]
        if kind == "drop":
            del lines[i]
        elif kind == "duplicate":
            lines.insert(i, line)
        elif kind == "truncate":
            # Cutting the newline too joins the line with the next one.
            lines[i] = line[: amount % (len(line) + 1)]
        elif kind == "indent":
            lines[i] = " " * (1 + amount % 8) + line
        else:
            lines[i] = line[min(len(line) - len(line.lstrip(" ")), 1 + amount % 8) :]
        text = "".join(lines)
    return text


@pytest.fixture(scope="module")
def workspace(
    vllm_release: Callable[[str], Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Path, Path]]:
    """A writable copy of the release and a summary cache of its own, warmed by one check of
    every architecture fuzzed, so each example only parses the file it mutated."""
    root = tmp_path_factory.mktemp("fuzz")
    vllm = root / "vllm"
    shutil.copytree(vllm_release("0.16.0"), vllm)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("EAGLE3LINT_CACHE_DIR", str(root / "cache"))
        run_check(CheckOptions(paths=[vllm], archs=sorted(set(TARGETS.values())), jobs=1))
        yield vllm, root


@settings(
    max_examples=60,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(relpath=st.sampled_from(sorted(TARGETS)), edits=mutations)
def test_mutated_release_files_never_crash_check_or_fix(
    workspace: tuple[Path, Path], relpath: str, edits: list[Mutation]
) -> None:
    vllm, _ = workspace
    path = vllm / relpath
    original = path.read_text(encoding="utf-8")
    source = mutate(original, edits)
    try:
        path.write_text(source, encoding="utf-8")
        # Every class, and the target's alone with the other class bodies left out.
        for wanted in (None, (TARGETS[relpath],)):
            outcome = parse_job((f"vllm/{relpath}", source.encode(), "key", wanted, None))
            assert outcome[4] != "EAG903", outcome[2]
        try:
            run = run_check(CheckOptions(paths=[vllm], archs=[TARGETS[relpath]], jobs=1))
        except UsageError as exc:
            # The mutation removed the architecture from the registry: a message, exit 2.
            assert "unknown architecture" in str(exc)
            return
        report = run.report
        internal = [e for e in report.errors if e.code == "EAG903" and "internal" in e.message]
        internal += [f for f in report.findings if f.message.startswith("internal error")]
        assert not internal
        for edit in plan_edits(report)[0]:
            if edit.changed:
                assert edit.new is not None
                ast.parse(edit.new)
                cst.parse_module(edit.new)
    finally:
        path.write_text(original, encoding="utf-8")
