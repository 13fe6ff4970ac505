"""Fixtures shared by the codemod tests."""

from __future__ import annotations

import shutil
import subprocess
import textwrap
from collections.abc import Callable
from pathlib import Path

import libcst as cst
import pytest

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "codemod"

Transform = Callable[[cst.Module], cst.Module]
RewriteCheck = Callable[..., None]


@pytest.fixture
def release_root(vllm_release: Callable[[str], Path]) -> Callable[[str], Path]:
    """`release_root(version)`: the `vllm/` folder of a real release (see tests/conftest.py)."""
    return vllm_release


@pytest.fixture
def fixture_source() -> Callable[[str], str]:
    """`fixture_source(name)`: the text of a file in fixtures/codemod."""
    return lambda name: (FIXTURES / name).read_text()


@pytest.fixture
def assert_rewrites() -> RewriteCheck:
    """`assert_rewrites(transform, before, after, *, formatted=True)`: a golden test.

    `before` and `after` are dedented. Checks that `transform` turns `before` into exactly
    `after`, that applying it to `after` changes no byte, and, when `formatted` (the snippet
    is in vLLM's ruff style), that ruff-format at vLLM's line length leaves `after` as it is.
    """

    def check(transform: Transform, before: str, after: str, *, formatted: bool = True) -> None:
        before, after = textwrap.dedent(before), textwrap.dedent(after)
        assert transform(cst.parse_module(before)).code == after
        assert transform(cst.parse_module(after)).code == after
        if formatted:
            assert_ruff_formatted(after)

    return check


def assert_ruff_formatted(code: str) -> None:
    """Assert that ruff-format with vLLM's settings would not change `code`."""
    ruff = shutil.which("ruff")
    assert ruff is not None, "ruff (in the test extra) is needed to check the layout"
    result = subprocess.run(
        [ruff, "format", "--isolated", "--line-length", "88", "-"],
        input=code,
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout == code
