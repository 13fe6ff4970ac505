"""Issue 11's cases of wrong generated code, read statically from what `fix` would write on real
releases (no vLLM code runs here; `tests/runtime/test_fixed_models.py` runs it).

`fix` plans every repair of a whole release (`--require '*'`, no `--arch`) in memory; each test
reads one model's rewritten forward with `ast`. A model `fix` refuses passes: refusing is right
where the tap cannot be placed safely.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pytest
from planning import plan_edits

from eagle3lint.engine import CheckOptions, run_check

MODELS = "model_executor/models"
TAP_LIST = "aux_hidden_state_layers"
MIXIN_TAP = "_maybe_add_hidden_state"


@cache
def _planned(version: str, release: Path) -> dict[str, str]:
    """Path in the release (`model_executor/models/phimoe.py`) → the source `fix` would write,
    for every file it changes."""
    run = run_check(CheckOptions(paths=[release], require=["*"]))
    edits, _ = plan_edits(run.report, release / MODELS)
    return {
        e.path.relative_to(release).as_posix(): e.new.decode()
        for e in edits
        if e.changed and e.new is not None
    }


def _forward(source: str, cls: str) -> ast.FunctionDef:
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "forward":
                    return item
    raise AssertionError(f"{cls}.forward not found")


def _taps(function: ast.FunctionDef) -> list[ast.AST]:
    """The statements that capture an aux state: an `if idx in self.aux_hidden_state_layers:`
    block or a `_maybe_add_hidden_state(...)` call."""
    return [node for node in ast.walk(function) if _is_tap(node)]


def _is_tap(node: ast.AST) -> bool:
    if isinstance(node, ast.If):
        return TAP_LIST in ast.unparse(node.test)
    return isinstance(node, ast.Call) and ast.unparse(node.func).endswith(MIXIN_TAP)


def _tapped_loops(function: ast.FunctionDef) -> list[ast.For]:
    return [
        node
        for node in ast.walk(function)
        if isinstance(node, ast.For) and any(_taps(ast.Module([node], [])))  # type: ignore[arg-type]
    ]


def _captured(tap: ast.AST) -> ast.expr:
    """The value a tap captures."""
    if isinstance(tap, ast.Call):
        return tap.args[2] if len(tap.args) > 3 else tap
    for node in ast.walk(tap):
        if isinstance(node, ast.Call) and ast.unparse(node.func).endswith(".append"):
            return node.args[0]
    raise AssertionError(ast.unparse(tap))


def _adds_residual(tap: ast.AST) -> bool:
    if isinstance(tap, ast.Call):  # the mixin adds `hidden_states + residual` itself
        return len(tap.args) > 3 and ast.unparse(tap.args[3]) != "None"
    return any(
        isinstance(node, ast.BinOp) and "residual" in ast.unparse(node)
        for node in ast.walk(_captured(tap))
    )


@pytest.fixture
def planned(vllm_release: Callable[[str], Path]) -> Callable[[str], dict[str, str]]:
    return lambda version: _planned(version, vllm_release(version))


def _fixed_forward(
    planned: Callable[[str], dict[str, str]], version: str, file: str, cls: str
) -> ast.FunctionDef | None:
    """`cls.forward` as `fix` would write it, or None where fix leaves the file alone."""
    source = planned(version).get(f"{MODELS}/{file}")
    return None if source is None else _forward(source, cls)


# -- the residual stream is captured once ---------------------------------------------------

FULL_STREAM = [
    ("0.16.0", "phimoe.py", "PhiMoEModel"),
    ("0.16.0", "exaone4.py", "Exaone4Model"),
    ("0.16.0", "commandr.py", "CohereModel"),
    ("0.16.0", "stablelm.py", "StableLMEpochModel"),
    ("0.16.0", "chameleon.py", "ChameleonModel"),
    ("0.18.0", "phimoe.py", "PhiMoEModel"),
    ("0.18.0", "stablelm.py", "StableLMEpochModel"),
]
"""Decoders whose layers return the full residual stream (issue 11's list; Chameleon with
`swin_norm`, GraniteMoeHybrid and Cohere2 where the release's fix reaches them)."""


@pytest.mark.parametrize(("version", "file", "cls"), FULL_STREAM)
def test_full_stream_decoders_are_not_double_counted(
    planned: Callable[[str], dict[str, str]], version: str, file: str, cls: str
) -> None:
    forward = _fixed_forward(planned, version, file, cls)
    if forward is None:
        return  # refused: nothing is double-counted
    taps = _taps(forward)
    assert taps, f"{file} changed without a tap in {cls}.forward"
    assert not any(_adds_residual(tap) for tap in taps), [ast.unparse(t) for t in taps]


# -- a tap reads only names bound on every path -----------------------------------------------


def _bound_before(statements: list[ast.stmt], target: ast.AST, bound: set[str]) -> set[str] | None:
    """Names certainly bound when `target` runs (None when `target` is not in `statements`):
    a loop may run zero times and one branch of an `if` proves nothing for the other."""
    for statement in statements:
        if statement is target or any(node is target for node in ast.walk(statement)):
            if isinstance(statement, ast.For) and statement is not target:
                inner = bound | _assigned(statement.target)
                return _bound_before(statement.body, target, inner)
            if isinstance(statement, ast.If) and statement is not target:
                for branch in (statement.body, statement.orelse):
                    found = _bound_before(branch, target, set(bound))
                    if found is not None:
                        return found
            return bound
        bound = bound | _certainly_assigned(statement)
    return None


def _certainly_assigned(statement: ast.stmt) -> set[str]:
    if isinstance(statement, ast.Assign | ast.AnnAssign | ast.AugAssign):
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        return {name for target in targets for name in _assigned(target)}
    if isinstance(statement, ast.If):
        return _block_assigned(statement.body) & _block_assigned(statement.orelse)
    return set()


def _block_assigned(block: list[ast.stmt]) -> set[str]:
    found: set[str] = set()
    for statement in block:
        found |= _certainly_assigned(statement)
    return found


def _assigned(target: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}


UNBOUND = [
    ("0.16.0", "stablelm.py", "StableLMEpochModel"),
    ("0.18.0", "stablelm.py", "StableLMEpochModel"),
]


@pytest.mark.parametrize(("version", "file", "cls"), UNBOUND)
def test_taps_read_only_bound_names(
    planned: Callable[[str], dict[str, str]], version: str, file: str, cls: str
) -> None:
    forward = _fixed_forward(planned, version, file, cls)
    if forward is None:
        return  # refused: nothing reads an unbound name
    params = {a.arg for a in [*forward.args.args, *forward.args.kwonlyargs]}
    for tap in _taps(forward):
        bound = _bound_before(forward.body, tap, params)
        assert bound is not None
        read = {n.id for n in ast.walk(_captured(tap)) if isinstance(n, ast.Name)}
        if isinstance(tap, ast.Call):
            read = {n.id for a in tap.args[2:] for n in ast.walk(a) if isinstance(n, ast.Name)}
        assert read <= bound, f"{cls}: the tap reads {sorted(read - bound)} unbound"


# -- every tapped loop counts layers globally, with a real index ------------------------------


def _loop_problems(sources: dict[str, str], release: Path) -> list[str]:
    """Problems of the tapped loops `fix` wrote (loops it left as the release wrote them are
    the release's own)."""
    problems = []
    for file, source in sorted(sources.items()):
        original = ast.parse((release / file).read_text(encoding="utf-8"))
        kept = {ast.unparse(n) for n in ast.walk(original) if isinstance(n, ast.For)}
        for cls in ast.walk(ast.parse(source)):
            if not isinstance(cls, ast.ClassDef):
                continue
            for function in cls.body:
                if not isinstance(function, ast.FunctionDef):
                    continue
                for loop in _tapped_loops(function):
                    if ast.unparse(loop) in kept:
                        continue
                    where = f"{file} {cls.name}.{function.name}"
                    header = ast.unparse(loop.iter)
                    index = (
                        loop.target.elts[0] if isinstance(loop.target, ast.Tuple) else loop.target
                    )
                    if isinstance(index, ast.Name) and index.id == "_":
                        problems.append(f"{where}: taps with `_` as its index")
                    # Enumerating a slice from start_layer counts from 0 on every rank.
                    sliced = header.startswith("enumerate(") and "self.start_layer" in header
                    if sliced and "start=" not in header:
                        problems.append(f"{where}: `{header}` has no start=self.start_layer")
    return problems


@pytest.mark.parametrize("version", ["0.16.0", "0.18.0"])
def test_tapped_loops_enumerate_from_start_layer(
    planned: Callable[[str], dict[str, str]], vllm_release: Callable[[str], Path], version: str
) -> None:
    problems = _loop_problems(planned(version), vllm_release(version))
    assert not problems, "\n".join(problems)


# -- a tap sees the layer's final input ---------------------------------------------------------


def test_solar_tap_follows_the_pre_layer_blending(
    planned: Callable[[str], dict[str, str]],
) -> None:
    source = planned("0.16.0").get(f"{MODELS}/solar.py")
    if source is None:
        return
    (loop,) = _tapped_loops(_forward(source, "SolarModel"))
    tap_at = next(i for i, s in enumerate(loop.body) if _taps(ast.Module([s], [])))  # type: ignore[arg-type]
    rebinds = [
        i
        for i, statement in enumerate(loop.body)
        if any(
            isinstance(node, ast.Assign)
            and _assigned(node.targets[0]) & {"hidden_states", "residual"}
            for node in ast.walk(statement)
        )
        and "layer(" not in ast.unparse(statement)
    ]
    assert all(i < tap_at for i in rebinds), (tap_at, rebinds)


def _class_names(source: str, cls: str) -> set[str]:
    """The methods and class-level names `cls` defines in `source`."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef) and node.name == cls:
            names = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
            for item in node.body:
                if isinstance(item, ast.Assign):
                    names.update(t.id for t in item.targets if isinstance(t, ast.Name))
            return names
    raise AssertionError(f"{cls} not found")


def _delegated(source: str, cls: str, method: str) -> set[str]:
    """The names `cls.method` calls on `self.language_model`."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == method:
                    return {
                        call.func.attr
                        for call in ast.walk(item)
                        if isinstance(call, ast.Call)
                        and isinstance(call.func, ast.Attribute)
                        and ast.unparse(call.func.value) == "self.language_model"
                    }
    raise AssertionError(f"{cls}.{method} not found")


def _protocol_defaults(release: Path) -> set[str]:
    """The methods `SupportsEagle3` of the release implements (a body that is not `...`): what
    every language model the runner accepts has."""
    source = (release / MODELS / "interfaces.py").read_text(encoding="utf-8")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef) and node.name == "SupportsEagle3":
            return {
                item.name
                for item in node.body
                if isinstance(item, ast.FunctionDef)
                and not all(
                    isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) for s in item.body
                )
            }
    raise AssertionError("SupportsEagle3 not found")


def test_the_seed_command_on_0_18_0_breaks_no_caller(
    vllm_release: Callable[[str], Path],
) -> None:
    """Issue 24: on 0.18.0, where Kimi-K2.5 already runs, fixing it renamed DeepseekV2's getter
    to the name the runner calls while Kimi-K2.5's own getter still called the old name on its
    language model: AttributeError after the weights load. Both names now stay defined, and
    Kimi-K2.5's getter (now the one the runner calls) delegates by the name the runner calls."""
    release = vllm_release("0.18.0")
    kimi_config = Path(__file__).resolve().parent.parent / "examples" / "kimi-k2.5" / "config.json"
    run = run_check(
        CheckOptions(
            paths=[release],
            archs=["KimiK25ForConditionalGeneration"],
            hf_config=kimi_config,
        )
    )
    edits, skipped = plan_edits(run.report, release / MODELS)
    planned = {
        e.path.relative_to(release).as_posix(): e.new.decode()
        for e in edits
        if e.changed and e.new is not None
    }
    assert not skipped, skipped
    kimi = planned[f"{MODELS}/kimi_k25.py"]
    deepseek = planned[f"{MODELS}/deepseek_v2.py"]
    getter = "get_eagle3_default_aux_hidden_state_layers"
    assert getter in _class_names(kimi, "KimiK25ForConditionalGeneration")
    assert _delegated(kimi, "KimiK25ForConditionalGeneration", getter) == {getter}
    # The language model defines the name the runner calls, and keeps the old one for others.
    assert {"get_eagle3_aux_hidden_state_layers", getter} <= _class_names(
        deepseek, "DeepseekV2ForCausalLM"
    )


def test_a_renamed_getter_delegates_by_a_name_every_language_model_has(
    vllm_release: Callable[[str], Path],
) -> None:
    """Issue 24: on 0.33.0, Pixtral's getter had the old name (so the runner used the protocol's
    default); `fix` renamed it to the name the runner calls, and its body still called the old
    name on the language model, which a Mistral checkpoint builds as MistralForCausalLM, whose
    only getter is the protocol's default under the new name: AttributeError when the runner
    calls it. The renamed getter delegates by a name the release's protocol implements."""
    release = vllm_release("0.33.0")
    pixtral = _planned("0.33.0", release)[f"{MODELS}/pixtral.py"]
    getter = "get_eagle3_default_aux_hidden_state_layers"
    called = _delegated(pixtral, "PixtralForConditionalGeneration", getter)
    assert called, "the renamed getter no longer delegates"
    assert called <= _protocol_defaults(release), called


@pytest.mark.parametrize("path", ["aria.py", "phi4mm.py"])
def test_a_wrapper_whose_language_model_is_a_bare_decoder_is_left_alone(
    path: str, vllm_release: Callable[[str], Path]
) -> None:
    """Aria's language model is AriaTextModel, and Phi-4-multimodal's the LlamaModel it builds
    under `_mark_language_model`: decoders without `.model`, on which the EAGLE proposer fails
    before the runner calls any aux-layer method (EAG411), so the methods issue 24 gave them
    would not make them run. `fix` no longer touches their files."""
    release = vllm_release("0.25.0")
    assert f"{MODELS}/{path}" not in _planned("0.25.0", release)
