"""`# eagle3lint: ignore[...]` comments, in a real model file of vLLM 0.16.0."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from eagle3lint.cli import app
from eagle3lint.suppressions import read_suppressions

MODEL = Path("model_executor/models/deepseek_v2.py")


def test_comments_are_read_with_their_codes_and_the_line_they_apply_to() -> None:
    source = b"""\
class A(Base):  # eagle3lint: ignore[EAG101]
    pass
# eagle3lint: ignore[eag201 , EAG202]
class B(Base):
    text = "# eagle3lint: ignore[EAG999]"
x = 1  # noqa: E501  # eagle3lint: ignore
y = (
    # eagle3lint:ignore[EAG301] -- checked by hand
    2
)
"""
    found = [(s.line, s.applies_to, s.codes) for s in read_suppressions(source)]
    assert found == [
        (1, 1, ("EAG101",)),
        (3, 4, ("EAG201", "EAG202")),
        (6, 6, ()),
        (8, 9, ("EAG301",)),
    ]


def test_a_file_that_does_not_tokenize_has_no_suppressions() -> None:
    assert read_suppressions(b"x = (  # eagle3lint: ignore\n") == []


@pytest.fixture
def tree(release_copy: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch) -> Path:
    """0.16.0 with suppressions in deepseek_v2.py (DeepseekV2's decoder has no tap, and
    neither DeepseekV2ForCausalLM nor DeepseekV3ForCausalLM is a SupportsEagle3)."""
    vllm = release_copy("0.16.0")
    path = vllm / MODEL
    lines = path.read_text().splitlines(keepends=True)

    def edit(starts: str, change: Callable[[str], str]) -> None:
        [index] = [i for i, line in enumerate(lines) if line.lstrip().startswith(starts)]
        lines[index] = change(lines[index])

    def trailing(comment: str) -> Callable[[str], str]:
        return lambda line: f"{line.rstrip()}  {comment}\n"

    edit("class DeepseekV2ForCausalLM(", trailing("# eagle3lint: ignore[EAG101, EAG201, EAG104]"))
    edit("class DeepseekV3ForCausalLM(", trailing("# eagle3lint: ignore"))
    edit("class DeepseekV2Model(", trailing("# eagle3lint: ignore[EAG401]"))
    edit(
        "for layer in islice(self.layers, self.start_layer, self.end_layer):",
        lambda line: "        # eagle3lint: ignore[EAG301]\n" + line,
    )
    path.write_text("".join(lines))
    monkeypatch.chdir(vllm.parent)
    return vllm


def check(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(app, ["check", *args, "--format", "json"])
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


def line_of(path: Path, starts: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if starts in line)


def codes(report: dict[str, Any], arch: str) -> list[str]:
    [target] = [t for t in report["targets"] if t["arch"] == arch]
    return [f["code"] for f in target["findings"]]


def unused(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for t in report["targets"] for f in t["findings"] if f["code"] == "EAG904"]


def test_suppressions_silence_their_lines_and_unused_ones_are_reported(tree: Path) -> None:
    # Every target as asked: Kimi-K2.5 claims no EAGLE-3 support in 0.16.0.
    report = check(str(tree / MODEL), "--require", "*")
    # Trailing the class line: EAG101 and both EAG201 go; EAG502 (not named) stays, and the
    # comment's unused EAG104 is reported under the target it sits on.
    assert codes(report, "DeepseekV2ForCausalLM") == ["EAG502", "EAG904"]
    # Alone above the loop: the missing tap is silenced for every target that shares it.
    assert not [f for t in report["targets"] for f in t["findings"] if f["code"] == "EAG301"]
    # Bare: everything on DeepseekV3ForCausalLM's line, which makes it ready.
    [v3] = [t for t in report["targets"] if t["arch"] == "DeepseekV3ForCausalLM"]
    assert v3["findings"] == [] and v3["eagle3_ready"]
    # The wrapper's own finding on the same line is not named, so it stays.
    assert "EAG103" in codes(report, "KimiK25ForConditionalGeneration")

    path = tree / MODEL
    notes = sorted(unused(report), key=lambda f: f["line"])
    assert [(f["line"], f["severity"], f["rule"]) for f in notes] == [
        (line_of(path, "class DeepseekV2Model("), "info", "suppressions"),
        (line_of(path, "class DeepseekV2ForCausalLM("), "info", "suppressions"),
    ]
    assert "EAG401 is not reported" in notes[0]["message"]
    assert "EAG104 is not reported" in notes[1]["message"]
    line = path.read_text().splitlines()[notes[1]["line"] - 1]
    assert notes[1]["column"] == line.index("#") + 1  # 1-based
    assert all(f["path"] == str(path) for f in notes)


def test_codes_the_run_could_not_report_are_not_called_unused(tree: Path) -> None:
    report = check(str(tree / MODEL), "--select", "EAG1", "--select", "EAG904")
    [note] = unused(report)
    assert "EAG104" in note["message"]  # EAG401 was not selected: no verdict on it
    assert not unused(check(str(tree / MODEL), "--ignore", "EAG904"))
    # With --arch only part of the targets run: nothing can be called unused.
    partial = check(str(tree), "--arch", "DeepseekV2ForCausalLM")
    assert not unused(partial)
    assert codes(partial, "DeepseekV2ForCausalLM") == ["EAG502"]
