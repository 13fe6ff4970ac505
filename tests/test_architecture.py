"""The shape of the house, measured: the import graph of `eagle3lint` (and the built-in rules)
has no circles, no import runs from a lower layer up to a higher one, no engine wing imports
another, no source file is over 500 lines, `cli.py` only wires the commands, and
`import eagle3lint.api` (what a rule pack pays) loads none of the check machinery.

The graph is read from the sources (`ast`): every import a module can run, function-local ones
included (a lazy import still ties two modules), except those under `if TYPE_CHECKING:`.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "eagle3lint"
RULES = ROOT / "rules"

LAYERS: tuple[tuple[str, ...], ...] = (
    # Values and leaves every layer may use: no eagle3lint import above them.
    (
        "eagle3lint",
        "eagle3lint.errors",
        "eagle3lint.repairs",
        "eagle3lint.findings",
        "eagle3lint.plans",
        "eagle3lint.storage",
        "eagle3lint.trust",
        "eagle3lint.cachedir",
        "eagle3lint.signals",
        "eagle3lint.sandbox",
        "eagle3lint.report.escape",
        "eagle3lint.layer_ids",
        "eagle3lint.engines",
        "eagle3lint.engines.vllm.names",
    ),
    ("eagle3lint.sources",),
    ("eagle3lint.shapes",),
    ("eagle3lint.index",),
    ("eagle3lint.config_classes", "eagle3lint.hf_config"),
    ("eagle3lint.engines.vllm", "eagle3lint.engines.sglang"),
    ("eagle3lint.rule", "eagle3lint.codes", "eagle3lint.explain"),
    ("eagle3lint.drafts",),
    ("eagle3lint.api", "eagle3lint.rules"),
    (
        "eagle3lint.codemod",
        "eagle3lint.suppressions",
        "eagle3lint.report",
        "eagle3lint.baseline",
        "eagle3lint.config",
    ),
    ("eagle3lint.fixability",),
    ("eagle3lint.checkrun", "eagle3lint.engine"),
    ("eagle3lint.runcache", "eagle3lint.journal", "eagle3lint.fixer", "eagle3lint.matrix"),
    ("eagle3lint.commands", "eagle3lint.server"),
    ("eagle3lint.cli", "eagle3lint.__main__"),
)
"""Lowest first. A module belongs to the layer of the longest prefix that names it."""

MAX_LINES = 500
CLI_MAX_LINES = 150


def module_files() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    for path in sorted(RULES.glob("*.py")):
        name = "eagle3lint.rules" if path.stem == "__init__" else f"eagle3lint.rules.{path.stem}"
        found[name] = path
    return found


@cache
def import_graph() -> dict[str, frozenset[str]]:
    files = module_files()

    def imports(name: str, path: Path) -> frozenset[str]:
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: set[str] = set()

        def visit(node: ast.AST) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                    continue
                if isinstance(child, ast.ImportFrom):
                    if child.level:
                        parts = package.split(".")[: len(package.split(".")) - child.level + 1]
                        base = ".".join([*parts, *([child.module] if child.module else [])])
                    else:
                        base = child.module or ""
                    for alias in child.names:
                        full = f"{base}.{alias.name}"
                        found.add(full if full in files else base)
                elif isinstance(child, ast.Import):
                    found.update(alias.name for alias in child.names)
                visit(child)

        visit(ast.parse(path.read_text(encoding="utf-8")))
        return frozenset(m for m in found if m in files and m != name)

    return {name: imports(name, path) for name, path in files.items()}


def layer_of(module: str) -> int:
    best = (-1, -1)
    for number, layer in enumerate(LAYERS):
        for prefix in layer:
            # The package's own `__init__` is a leaf; its name prefixes every module.
            if module == prefix or (prefix != "eagle3lint" and module.startswith(prefix + ".")):
                best = max(best, (len(prefix), number))
    assert best[1] >= 0, f"{module} is in no layer: add it to LAYERS"
    return best[1]


def cycles(graph: dict[str, frozenset[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        order[node] = low[node] = len(order)
        stack.append(node)
        for other in graph[node]:
            if other not in order:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], order[other])
        if low[node] == order[node]:
            component = []
            while True:
                other = stack.pop()
                component.append(other)
                if other == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in graph:
        if node not in order:
            visit(node)
    return found


def test_the_import_graph_has_no_circles() -> None:
    assert cycles(import_graph()) == []


def test_no_import_runs_up_a_layer() -> None:
    upward = [
        f"{module} (layer {layer_of(module)}) imports {other} (layer {layer_of(other)})"
        for module, imported in sorted(import_graph().items())
        for other in sorted(imported)
        if layer_of(other) > layer_of(module)
    ]
    assert upward == []


def test_every_module_has_a_layer() -> None:
    for module in import_graph():
        layer_of(module)


def test_the_checks_find_what_they_are_for() -> None:
    graph = {"a": frozenset({"b"}), "b": frozenset({"c"}), "c": frozenset({"a"}), "d": frozenset()}
    assert cycles(graph) == [["a", "b", "c"]]
    assert layer_of("eagle3lint.cli") > layer_of("eagle3lint.index.project")
    assert layer_of("eagle3lint.engines.vllm.names") < layer_of("eagle3lint.index")
    assert layer_of("eagle3lint.engines.vllm.wing") > layer_of("eagle3lint.index")


def engine_of(module: str) -> str | None:
    """The engine wing `module` belongs to (`eagle3lint.engines.vllm.wing` → `vllm`), or None."""
    parts = module.split(".")
    return parts[2] if parts[:2] == ["eagle3lint", "engines"] and len(parts) > 2 else None


def test_no_engine_wing_imports_another() -> None:
    """A wing holds one engine whole: what two share lives at `engines/` level or below, so
    that a third engine is a folder of its own (issue 47)."""
    across = [
        f"{module} imports {other}"
        for module, imported in sorted(import_graph().items())
        for other in sorted(imported)
        if engine_of(module) and engine_of(other) and engine_of(module) != engine_of(other)
    ]
    assert across == []
    assert engine_of("eagle3lint.engines.sglang.contract") == "sglang"
    assert engine_of("eagle3lint.engines") is None


def test_no_source_file_is_over_500_lines() -> None:
    long = {
        str(path.relative_to(ROOT)): lines
        for path in module_files().values()
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}


def test_the_cli_only_wires_the_commands() -> None:
    lines = len((PACKAGE / "cli.py").read_text(encoding="utf-8").splitlines())
    assert lines < CLI_MAX_LINES


def test_importing_the_rule_api_loads_no_check_machinery() -> None:
    """What `python -X importtime -c "import eagle3lint.api"` lists: a pack pays for the API
    alone; the engine, index, sources and engine wings load when a check runs."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import eagle3lint.api"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    loaded = {
        line.rsplit("|", 1)[-1].strip()
        for line in result.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    heavy = sorted(
        m
        for m in loaded
        if m == "eagle3lint.engine"
        or m.startswith(("eagle3lint.index", "eagle3lint.sources", "eagle3lint.engines"))
        or m.startswith(("eagle3lint.checkrun", "eagle3lint.engine."))
    )
    assert "eagle3lint.api" in loaded
    assert heavy == []
