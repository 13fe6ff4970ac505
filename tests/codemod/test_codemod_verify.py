"""Tests for `render_checked`."""

from __future__ import annotations

import libcst as cst
import pytest

from eagle3lint.codemod import CodemodRefused, render_checked


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
