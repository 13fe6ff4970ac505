"""Tests for `render_checked`."""

from __future__ import annotations

import contextlib
from pathlib import Path

import libcst as cst
import pytest

from eagle3lint.codemod import CodemodRefused, render_checked, verify
from eagle3lint.index.cache import SummaryCache


def test_returns_the_new_code() -> None:
    assert render_checked("x = 1\n", cst.parse_module("x = 2\n"), "m.py") == "x = 2\n"


def test_unchanged_module_returns_the_original() -> None:
    original = "x = 1\n"
    assert render_checked(original, cst.parse_module(original), "m.py") is original


def _breaking(module: cst.Module) -> cst.Module:
    # `return` outside a function parses but does not compile.
    return module.with_changes(body=[*module.body, cst.parse_statement("return 1\n")])


def test_refuses_code_that_does_not_compile() -> None:
    with pytest.raises(CodemodRefused, match=r"m.py: .*does not compile.*this is a codemod bug"):
        render_checked("x = 1\n", _breaking(cst.parse_module("x = 1\n")), "m.py")


def test_says_when_the_original_was_already_broken() -> None:
    original = "def f():\n    nonlocal y\n"
    with pytest.raises(CodemodRefused, match="the original does not compile either"):
        render_checked(original, _breaking(cst.parse_module(original)), "m.py")


FORWARD = """\
import torch


class Model:
    def forward(self, hidden_states, layers):
        aux = []
        for idx, layer in enumerate(layers):
{tap}            hidden_states = layer(hidden_states)
        return hidden_states, aux
"""


def _tapped(tap: str) -> tuple[str, cst.Module]:
    original = FORWARD.format(tap="")
    return original, cst.parse_module(FORWARD.format(tap=tap))


def test_refuses_a_tap_reading_a_name_the_forward_never_binds() -> None:
    """StableLM's generated tap read `residual`, which its forward never binds."""
    original, new = _tapped("            aux.append(hidden_states + residual)\n")
    with pytest.raises(CodemodRefused, match=r"Model.forward reads 'residual', which is defined"):
        render_checked(original, new, "m.py")


def test_refuses_a_read_before_the_name_is_bound_on_every_path() -> None:
    tap = (
        "            if idx:\n"
        "                residual = hidden_states\n"
        "            aux.append(hidden_states + residual)\n"
    )
    original, new = _tapped(tap)
    with pytest.raises(CodemodRefused, match=r"'residual', which may be unbound on some path"):
        render_checked(original, new, "m.py")


@pytest.mark.parametrize(
    "tap",
    [
        pytest.param("            residual = None\n            aux.append(residual)\n", id="bound"),
        pytest.param(
            "            if idx:\n"
            "                residual = hidden_states\n"
            "            else:\n"
            "                residual = None\n"
            "            aux.append(residual)\n",
            id="bound-on-both-branches",
        ),
        pytest.param(
            "            if idx is None:\n"
            "                raise ValueError(idx)\n"
            "            else:\n"
            "                residual = None\n"
            "            aux.append(residual, torch, [i for i in aux if residual])\n",
            id="the-other-branch-raises",
        ),
    ],
)
def test_accepts_names_bound_on_every_path(tap: str) -> None:
    original, new = _tapped(tap)
    assert render_checked(original, new, "m.py") == new.code


def test_a_problem_the_original_already_had_is_not_the_rewrite_s() -> None:
    """vLLM's own code may read a name bound only in an earlier loop; a rewrite elsewhere in
    the same function is not refused for it."""
    original = "def f(xs):\n    for x in xs:\n        last = x\n    return last\n"
    new = cst.parse_module(original.replace("return last", "print(xs)\n    return last"))
    assert render_checked(original, new, "m.py") == new.code


def test_only_functions_the_rewrite_touched_are_checked() -> None:
    original = "def f():\n    return undefined_name\n\n\nX = 1\n"
    new = cst.parse_module(original.replace("X = 1", "X = 2"))
    assert render_checked(original, new, "m.py") == new.code


@pytest.mark.parametrize(
    ("original", "rewritten", "removed"),
    [
        # A bare rename: a wrapper's `self.language_model.old()` would raise AttributeError.
        (
            "class M:\n    def old(self):\n        pass\n",
            "class M:\n    def new(self):\n        pass\n",
            "M.old",
        ),
        ("class M:\n    packed = {}\n", "class M:\n    pass\n", "M.packed"),
        ("class M:\n    old: int = 1\n", "class M:\n    other: int = 1\n", "M.old"),
    ],
)
def test_refuses_a_rewrite_that_takes_a_name_from_a_class(
    original: str, rewritten: str, removed: str
) -> None:
    with pytest.raises(CodemodRefused, match=rf"would remove {removed}, which callers may use"):
        render_checked(original, cst.parse_module(rewritten), "m.py")


def test_a_rename_that_keeps_the_old_name_as_an_alias_passes() -> None:
    original = "class M:\n    def old(self):\n        pass\n"
    rewritten = "class M:\n    def new(self):\n        pass\n\n    old = new\n"
    assert render_checked(original, cst.parse_module(rewritten), "m.py") == rewritten


def test_the_scope_analysis_of_a_rewrite_is_kept_in_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`fix --diff` then `fix` (or a run again) analyses no rewrite twice, and a refusal read
    back from the cache says what the analysis said."""
    store = SummaryCache(tmp_path)
    good = _tapped("            aux.append(hidden_states)\n")
    bad = _tapped("            aux.append(residual)\n")
    for original, module in (good, bad):
        with contextlib.suppress(CodemodRefused):
            render_checked(original, module, "m.py", store=store)
    verify._INTRODUCED.clear()

    def no_analysis(*_: object) -> None:
        raise AssertionError("analysed again")

    monkeypatch.setattr(verify, "_introduced", no_analysis)
    assert render_checked(*good, "m.py", store=store) == good[1].code
    with pytest.raises(CodemodRefused, match="reads 'residual', which is defined nowhere"):
        render_checked(*bad, "m.py", store=store)


UNTOUCHED = """\
class Other:
    cls_only = 1

    @decorated(by=torch)
    def method(self, x: Annotated = DEFAULT):
        return undefined_elsewhere


{header}


def f(xs):
    return xs
"""


@pytest.mark.parametrize(
    ("header", "read", "refused"),
    [
        # A class body's names are no function's: reading one is still a read of nothing.
        ("X = 1", "cls_only", True),
        ("X = 1", "X", False),
        # An untouched definition's header may bind a global: then headers are kept, exactly.
        ("def g(x=(bound := 1)):\n    pass", "bound", False),
        ("class G:\n    global bound\n    bound = 1", "bound", False),
        ("def g(x=(bound := 1)):\n    pass", "unbound_name", True),
    ],
)
def test_untouched_definitions_read_as_before(header: str, read: str, refused: bool) -> None:
    """The scope analysis reduces the definitions the rewrite left alone to their names; what
    a touched function reads is judged as in the whole module."""
    original = UNTOUCHED.format(header=header)
    new = cst.parse_module(original.replace("return xs", f"return xs, {read}"))
    if refused:
        with pytest.raises(CodemodRefused, match=f"f reads '{read}', which is defined nowhere"):
            render_checked(original, new, "m.py")
    else:
        assert render_checked(original, new, "m.py") == new.code
