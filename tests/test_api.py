"""`eagle3lint.api` is the rule authors' whole surface: the built-in rules use nothing else, and
importing it (as every run does, to load the rules) never imports libcst."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import eagle3lint.api as api

RULES = sorted((Path(__file__).resolve().parent.parent / "rules").glob("*.py"))


def test_every_name_the_api_lists_is_there() -> None:
    assert all(hasattr(api, name) for name in api.__all__)


def test_built_in_rules_import_only_the_api_and_never_the_index() -> None:
    for path in RULES:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("eagle3lint"):
                assert node.module == "eagle3lint.api", f"{path.name}:{node.lineno}"
            if isinstance(node, ast.Import):
                assert not any(a.name.startswith("eagle3lint") for a in node.names), path.name
            if isinstance(node, ast.Attribute):
                assert node.attr != "index", f"{path.name}:{node.lineno} reaches into the index"


def test_loading_the_rules_does_not_import_libcst() -> None:
    code = (
        "import sys; from eagle3lint.rule import load_plugins; load_plugins(); "
        "print('libcst' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.strip() == "False", result.stderr
