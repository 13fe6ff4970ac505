"""How a vLLM tree chooses the speculative method for a draft checkpoint.

`vllm serve T --speculative-config '{"model": D, ...}'` runs EAGLE-3 only if the method comes
out as `eagle3`. Up to 0.33 `SpeculativeConfig.__post_init__` keeps a few configured methods
and otherwise walks an `elif` chain of clues (`"eagle-" in model.lower()`, then `"eagle3"`,
architectures, `model_type`), with `draft_model` as what an unset method becomes (0.25 on) or a
`NotImplementedError` (0.16). From 0.34 every configured method stands, checked against the one
the draft class declares (`speculator_config_class`), and an unset one is the declared method,
else the first `SpeculatorConfig.matches` in `_CHECKPOINT_DETECTION_ORDER`, else
`draft_model`. Both shapes are read from the tree with CPython's parser (nothing runs), never
keyed to a version.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eagle3lint.errors import UnreadableSource
from eagle3lint.sources.files import check_syntax
from eagle3lint.sources.source_text import function_around

SPECULATIVE = "config/speculative.py"
SPECULATOR_CONFIG = "v1/worker/gpu/spec_decode/speculator_config.py"
SPEC_DECODE = "v1/worker/gpu/spec_decode"
PATH = "path"
ARCHITECTURE = "architecture"
MODEL_TYPE = "model_type"


@dataclass(frozen=True, slots=True)
class Clue:
    """One test vLLM makes of the draft: a substring of its `model` string (lower-cased), an
    entry of its `architectures`, or its `model_type`."""

    kind: str
    values: tuple[str, ...]

    def holds(self, draft: DraftSeen) -> bool:
        if self.kind == PATH:
            return any(v in draft.model.lower() for v in self.values)
        if self.kind == ARCHITECTURE:
            return any(v in draft.architectures for v in self.values)
        return draft.model_type in self.values

    def text(self) -> str:
        shown = " or ".join(repr(v) for v in self.values[:4])
        more = f" (or {len(self.values) - 4} more)" if len(self.values) > 4 else ""
        what = {PATH: "the model string contains", ARCHITECTURE: "architectures holds"}
        return f"{what.get(self.kind, 'model_type is')} {shown}{more}"


@dataclass(slots=True)
class Detector:
    """A method and the clues that choose it: any alternative, all clues of it."""

    method: str
    alternatives: list[list[Clue]]
    line: int

    def matched(self, draft: DraftSeen) -> list[Clue] | None:
        for clues in self.alternatives:
            if all(c.holds(draft) for c in clues):
                return clues
        return None


@dataclass(frozen=True, slots=True)
class DraftSeen:
    """What the method choice looks at: `model` as typed, the checkpoint's `architectures`
    and `model_type`, and the registered class its architecture loads (0.34's declaration)."""

    model: str
    architectures: tuple[str, ...]
    model_type: str | None
    draft_class: str | None = None


@dataclass(slots=True)
class Resolution:
    """The method vLLM runs the draft with, and why; `refusal` is vLLM's error instead."""

    method: str | None
    how: str
    refusal: str = ""


@dataclass(slots=True)
class MethodChoice:
    """A tree's way of choosing the method."""

    path: str
    line: int
    kept: tuple[str, ...] | None
    """Configured methods that stand as they are; None: every configured method stands."""
    unset: str | None
    """What an unset method is before the clues are tried (`draft_model`); None: unset."""
    detectors: list[Detector] = field(default_factory=list)
    standing: tuple[str, ...] = ()
    """Methods that stand when no clue matches (`elif self.method == "draft_model": pass`)."""
    declared: dict[str, str] = field(default_factory=dict)
    """Draft class → the method its `speculator_config_class` declares (0.34)."""

    def resolve(self, configured: str | None, draft: DraftSeen) -> Resolution:
        declared = self.declared.get(draft.draft_class or "")
        if self.kept is None:
            if configured is not None:
                if declared is not None and declared != configured:
                    return Resolution(
                        None,
                        "configured",
                        f"speculative_config requested method={configured!r}, but the draft "
                        f"model {draft.model!r} is a {declared!r} checkpoint",
                    )
                return Resolution(configured, "configured")
            if declared is not None:
                return Resolution(declared, f"declared by {draft.draft_class}")
            method = self.unset
        else:
            method = configured if configured is not None else self.unset
            if method in self.kept:
                return Resolution(method, "configured" if configured else "the unset method")
        for detector in self.detectors:
            clues = detector.matched(draft)
            if clues is not None:
                return Resolution(detector.method, " and ".join(c.text() for c in clues))
        if method is not None and (self.kept is None or method in self.standing):
            how = "configured" if configured else "no method set, and no clue in the checkpoint"
            return Resolution(method, how)
        return Resolution(None, "", f"Unsupported speculative method: '{method}'")


def read_method_choice(vllm_dir: Path, read: Any) -> MethodChoice | None:
    """The tree's method choice; None when neither shape is found. `read` returns a file's
    text, or None when it is not there."""
    speculative = read(vllm_dir / SPECULATIVE)
    tree = _parse(speculative, SPECULATIVE) if speculative is not None else None
    constants = _constants(tree)
    registry_style = read(vllm_dir / SPECULATOR_CONFIG)
    if registry_style is not None and ".matches(" in registry_style:
        return _read_detection_order(vllm_dir, registry_style, constants, read)
    if speculative is None or tree is None:
        return None
    return _read_elif_chain(vllm_dir, speculative, tree, constants)


def speculator_config_files(vllm_dir: Path) -> list[Path]:
    """0.34's `SpeculatorConfig` modules: `speculator_config.py` and each speculator's
    `config.py` (none before 0.34)."""
    folder = vllm_dir / SPEC_DECODE
    try:
        return sorted(folder.glob("*config.py")) + sorted(folder.glob("*/config.py"))
    except OSError:
        return []


def _parse(text: str, name: str) -> ast.Module | None:
    try:
        return check_syntax(text, name)
    except UnreadableSource:
        return None


def _constants(tree: ast.Module | None) -> dict[str, tuple[str, ...]]:
    """Module-level names bound to strings, or to `Literal[...]` / tuples of strings (with
    nested aliases expanded): what clues compare against."""
    found: dict[str, tuple[str, ...]] = {}
    for node in tree.body if tree else ():
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if isinstance(target, ast.Name):
            strings = _strings(value, found)
            if strings is not None:
                found[target.id] = strings
    return found


def _strings(node: ast.expr, names: dict[str, tuple[str, ...]]) -> tuple[str, ...] | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return (node.value,)
    if isinstance(node, ast.Name):
        return names.get(node.id)
    if isinstance(node, ast.Subscript) and _name(node.value) == "Literal":
        node = node.slice
    if isinstance(node, ast.Call) and _name(node.func) in ("get_args", "frozenset", "tuple"):
        return _strings(node.args[0], names) if len(node.args) == 1 else None
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        values: list[str] = []
        for element in node.elts:
            part = _strings(element, names)
            if part is None:
                return None
            values += part
        return tuple(values)
    return None


def _name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else ""


def _clues(test: ast.expr, names: dict[str, tuple[str, ...]]) -> list[list[Clue]]:
    """The alternatives a test accepts; a part that is not about the draft (a flag of the
    target) reads as no alternative."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        return [alt for value in test.values for alt in _clues(value, names)]
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        combined: list[Clue] = []
        for value in test.values:
            parts = _clues(value, names)
            if len(parts) != 1:
                return []
            combined += parts[0]
        return [combined]
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return []
    left, op, right = test.left, test.ops[0], test.comparators[0]
    if isinstance(op, ast.In):
        if isinstance(right, ast.Call) and _name(right.func) == "lower":
            values = _strings(left, names)
            return [[Clue(PATH, values)]] if values else []
        if _name(right) == "architectures":
            values = _strings(left, names)
            return [[Clue(ARCHITECTURE, values)]] if values else []
        if _name(left) == MODEL_TYPE:
            values = _strings(right, names)
            return [[Clue(MODEL_TYPE, values)]] if values else []
    if isinstance(op, ast.Eq) and _name(left) == MODEL_TYPE:
        values = _strings(right, names)
        return [[Clue(MODEL_TYPE, values)]] if values else []
    return []


def _is_method(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "method"


def _assigned_method(body: list[ast.stmt]) -> str | None:
    for statement in body:
        for node in ast.walk(statement):
            if (
                isinstance(node, ast.Assign)
                and any(_is_method(t) for t in node.targets)
                and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)
            ):
                return node.value.value
    return None


def _read_elif_chain(
    vllm_dir: Path, text: str, tree: ast.Module, names: dict[str, tuple[str, ...]]
) -> MethodChoice | None:
    """≤ 0.33: `if self.method in (...): pass`, then `elif <clues>: self.method = "m"` ...,
    `elif self.method == "draft_model": pass`, `else: raise NotImplementedError`."""
    found = function_around(text, "draft_model_config.model.lower()")
    if found is None:
        return None
    first_line = found[1]
    function = next(
        (
            node
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef) and node.lineno == first_line
        ),
        None,
    )
    if function is None:
        return None
    chain = next((node for node in ast.walk(function) if _is_kept_test(node)), None)
    if chain is None:
        return None
    assert isinstance(chain, ast.If) and isinstance(chain.test, ast.Compare)
    kept = _strings(chain.test.comparators[0], names) or ()
    choice = MethodChoice(str(vllm_dir / SPECULATIVE), chain.lineno, kept, _unset_becomes(function))
    branch = chain.orelse
    while len(branch) == 1 and isinstance(branch[0], ast.If):
        node = branch[0]
        test = node.test
        if (
            isinstance(test, ast.Compare)
            and _is_method(test.left)
            and all(isinstance(s, ast.Pass) for s in node.body)
        ):
            choice.standing += _strings(test.comparators[0], names) or ()
        else:
            method = _assigned_method(node.body)
            alternatives = _clues(test, names)
            if method is not None and alternatives:
                choice.detectors.append(Detector(method, alternatives, node.lineno))
        branch = node.orelse
    return choice


def _is_kept_test(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.If)
        and isinstance(node.test, ast.Compare)
        and _is_method(node.test.left)
        and len(node.test.ops) == 1
        and isinstance(node.test.ops[0], ast.In)
        and all(isinstance(s, ast.Pass) for s in node.body)
        and bool(node.orelse)
    )


def _unset_becomes(function: ast.FunctionDef) -> str | None:
    """`elif self.method is None: ... self.method = "draft_model"` (0.25 on)."""
    for node in ast.walk(function):
        if not isinstance(node, ast.If):
            continue
        test = node.test
        if (
            isinstance(test, ast.Compare)
            and _is_method(test.left)
            and isinstance(test.ops[0], ast.Is)
            and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value is None
        ):
            assigned = [
                n.value.value
                for s in node.body
                for n in ast.walk(s)
                if isinstance(n, ast.Assign)
                and any(_is_method(t) for t in n.targets)
                and isinstance(n.value, ast.Constant)
                and isinstance(n.value.value, str)
            ]
            if assigned:
                return assigned[-1]
    return None


def _read_detection_order(
    vllm_dir: Path, text: str, names: dict[str, tuple[str, ...]], read: Any
) -> MethodChoice | None:
    """0.34: `for method in ORDER: if CONFIG[method].matches(spec): ...`, each config class's
    `matches`, `method = "draft_model"` when unset, and the classes drafts declare."""
    tree = _parse(text, SPECULATOR_CONFIG)
    if tree is None:
        return None
    module_names = {**names, **_constants(tree)}
    order: tuple[str, ...] = ()
    line = 0
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.For)
            and isinstance(node.iter, ast.Name)
            and any(".matches(" in ast.unparse(s) for s in node.body)
        ):
            order, line = module_names.get(node.iter.id, ()), node.lineno
    places = _config_classes(tree)
    unset = re.search(
        r"if\s+method\s+is\s+None:\s*\n(?:\s*#[^\n]*\n)*\s*method\s*=\s*[\"'](\w+)", text
    )
    choice = MethodChoice(
        str(vllm_dir / SPECULATOR_CONFIG), line, None, unset.group(1) if unset else None
    )
    classes = _spec_decode_classes(vllm_dir, read)
    for method in order:
        place = places.get(method)
        if place is None:
            continue
        matches = _matches_of(place[1], classes)
        if matches is not None:
            alternatives = _clues(matches[0], {**module_names, **matches[1]})
            if alternatives:
                choice.detectors.append(Detector(method, alternatives, matches[2]))
    choice.declared = _declared_methods(vllm_dir, read, classes)
    return choice


def _config_classes(tree: ast.Module) -> dict[str, tuple[str, str]]:
    """`{"eagle3": _builtin("eagle.config", "Eagle3SpeculatorConfig"), ...}`: method →
    (module, class)."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Dict) or len(node.keys) < 3:
            continue
        found: dict[str, tuple[str, str]] = {}
        for key, value in zip(node.keys, node.values, strict=True):
            if not (isinstance(key, ast.Constant) and isinstance(value, ast.Call)):
                continue
            args = [a.value for a in value.args if isinstance(a, ast.Constant)]
            if len(args) >= 2 and all(isinstance(a, str) for a in args):
                found[str(key.value)] = (args[-2], args[-1])
        if len(found) >= 3:
            return found
    return {}


@dataclass(slots=True)
class _ClassSeen:
    node: ast.ClassDef
    names: dict[str, tuple[str, ...]]


def _spec_decode_classes(vllm_dir: Path, read: Any) -> dict[str, _ClassSeen]:
    """Every class of the speculators' config modules, by name."""
    classes: dict[str, _ClassSeen] = {}
    for path in speculator_config_files(vllm_dir):
        text = read(path)
        tree = _parse(text, str(path)) if text is not None else None
        if tree is None:
            continue
        names = _constants(tree)
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                classes.setdefault(node.name, _ClassSeen(node, names))
    return classes


def _matches_of(
    name: str, classes: dict[str, _ClassSeen]
) -> tuple[ast.expr, dict[str, tuple[str, ...]], int] | None:
    """The expression a config class's `matches` returns (its own, else a base's)."""
    for _ in range(8):
        seen = classes.get(name)
        if seen is None:
            return None
        for item in seen.node.body:
            if isinstance(item, ast.FunctionDef) and item.name == "matches":
                returned = [n for n in ast.walk(item) if isinstance(n, ast.Return)]
                if len(returned) == 1 and returned[0].value is not None:
                    return returned[0].value, seen.names, item.lineno
                return None
        bases = [_name(b) for b in seen.node.bases]
        if not bases:
            return None
        name = bases[0]
    return None


def _base_method(name: str, classes: dict[str, _ClassSeen]) -> str | None:
    for _ in range(8):
        seen = classes.get(name)
        if seen is None:
            return None
        for item in seen.node.body:
            target = item.targets[0] if isinstance(item, ast.Assign) else None
            if isinstance(item, ast.AnnAssign):
                target = item.target
            value = getattr(item, "value", None)
            if _name(target) == "base_method" if target is not None else False:
                return value.value if isinstance(value, ast.Constant) else None
        if not seen.node.bases:
            return None
        name = _name(seen.node.bases[0])
    return None


def _declared_methods(vllm_dir: Path, read: Any, classes: dict[str, _ClassSeen]) -> dict[str, str]:
    """Model classes setting `speculator_config_class = XConfig`, mapped to XConfig's
    `base_method`."""
    declared: dict[str, str] = {}
    try:
        files = sorted((vllm_dir / "model_executor" / "models").glob("*.py"))
    except OSError:
        return declared
    for path in files:
        text = read(path)
        tree = _parse(text, str(path)) if text and "speculator_config_class =" in text else None
        for node in tree.body if tree else ():
            if not isinstance(node, ast.ClassDef):
                continue
            for item in node.body:
                if (
                    isinstance(item, ast.Assign)
                    and [_name(t) for t in item.targets] == ["speculator_config_class"]
                    and (method := _base_method(_name(item.value), classes)) is not None
                ):
                    declared[node.name] = method
    return declared
