"""The aux-layer methods vLLM's model runner calls, made on a fixed copy of a release (issue 24).

Which methods: read from the release's own runners (`runner_methods`). On what: every target of
the fixed tree, each built bare with the model parts its `__init__` builds (`aux_calls.py`, run
by the release's venv with the changed modules loaded from the fixed copy); a wrapper whose
language model the checkpoint chooses is also tried with every text model that runs. What is
held against `fix`: a call that raises on a target whose classes (the wrapper, its language
model, their decoders, along their MROs) include a class `fix` changed, unless the same calls
did not run on the unfixed release either and eagle3lint still reports the target not ready.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fixed import FixedRelease, _ask
from runtime import installed_tree
from venvs import install, overlay

AUX_CALLS = Path(__file__).resolve().parent / "aux_calls.py"
RUNNERS = ("v1", "worker")
AUX_METHOD = "aux_hidden_state_layers"
MODEL_PACKAGES = ("vllm.model_executor.models.", "vllm.models.")
CUDA = "CUDA"


def runner_methods(tree: Path) -> list[str]:
    """The model methods the release's model runners (V1, and V2 where the release has it)
    call to set up EAGLE-3's aux layers: `<model>.<name>(...)` calls under `vllm/v1/worker/`
    with `aux_hidden_state_layers` in the name, less the runners' own functions; the getters
    first, then the setter (which the runner gives what the getter returned)."""
    called: set[str] = set()
    defined: set[str] = set()
    for path in sorted(tree.joinpath(*RUNNERS).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                defined.add(node.name)
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and AUX_METHOD in node.func.attr
            ):
                called.add(node.func.attr)
    names = sorted(called - defined)
    getters = [name for name in names if name.startswith("get_")]
    setters = [name for name in names if not name.startswith("get_")]
    assert getters and len(setters) == 1, f"unexpected runner calls in {tree}: {names}"
    return getters + setters


def changed_classes(release: FixedRelease) -> set[str]:
    """`module.Class` for every top-level class whose code `fix` changed (or added)."""
    installed = installed_tree(release.version)
    found: set[str] = set()
    for module, path in release.changed.items():
        after = _classes(path)
        before = _classes(installed / path.relative_to(release.tree))
        found |= {f"{module}.{name}" for name, code in after.items() if before.get(name) != code}
    return found


def _classes(path: Path) -> dict[str, str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {node.name: ast.dump(node) for node in tree.body if isinstance(node, ast.ClassDef)}


@dataclass
class RunnerCalls:
    """What the runner's aux-layer calls did on one fixed copy."""

    release: FixedRelease
    methods: list[str]
    changed: set[str]
    """`module.Class` for every class `fix` changed."""
    after: list[dict[str, Any]]
    """One record per target (and per language model tried for a wrapper), fixed copy."""
    before: dict[tuple[str, str | None], dict[str, Any]] = field(default_factory=dict)
    """(arch, language model tried) → the same calls on the unfixed release, for the records
    of `after` that did not run (and all of them when asked for)."""

    def in_scope(self, record: dict[str, Any]) -> bool:
        """A target whose classes include one `fix` changed, or one `fix` repaired."""
        return bool(self.changed & set(record.get("classes", ()))) or (
            record["label"] in self.release.repaired
        )

    def scoped(self) -> list[dict[str, Any]]:
        """The records held against `fix`: in scope, and not a wrapper's try without the
        language model the checkpoint chooses (its tries with one are records of their own)."""
        return [
            r
            for r in self.after
            if self.in_scope(r) and not (r.get("needs_candidate") and r["candidate"] is None)
        ]

    def breakages(self) -> list[str]:
        """Scoped records whose calls raise (or cannot be made) where fix is to blame."""
        problems = []
        for record in self.scoped():
            if record["status"] == "ran" or cuda_only(record):
                continue
            before = self.before.get((record["label"], record["candidate"]), {})
            ran_before = before.get("status") == "ran"
            says_ready = record["label"] not in self.release.blocked
            pair = record["candidate"] is not None
            if ran_before or record["status"] == "cannot-construct" or (says_ready and not pair):
                problems.append(
                    f"{_name(record)}: {record['status']}: {record.get('why', '')[:300]} "
                    f"(before fix: {before.get('status', 'not asked')}; eagle3lint says "
                    f"{'ready' if says_ready else 'not ready'})"
                )
        return problems

    def reached(self) -> set[str]:
        """The changed classes some target built (its calls made, whatever they did)."""
        return self.changed & {c for r in self.after for c in r.get("classes", ())}

    def cuda_only(self) -> dict[str, str]:
        """Changed classes of a target whose module cannot be imported without CUDA (vLLM
        0.33.0's Dots3Note has no CPU variant), with the import error: no call can be made."""
        found = {}
        for record in self.after:
            if cuda_only(record):
                module = self.release.targets[record["label"]].ref.file.module
                found |= {c: record["why"] for c in self.changed if c.rpartition(".")[0] == module}
        return found

    def summary(self) -> str:
        scoped = self.scoped()
        ran = [r for r in scoped if r["status"] == "ran"]
        lines = [
            f"vLLM {self.release.version}: runner calls {', '.join(self.methods)}; "
            f"{len(self.changed)} classes changed, {len(self.reached())} reached; "
            f"{len(scoped)} targets and language-model tries touch them, {len(ran)} ran"
        ]
        lines += [f"  {r['status']:16} {_name(r)}  {r.get('why', '')[:200]}" for r in scoped]
        lines += [f"  not importable   {c}: {why[:200]}" for c, why in self.cuda_only().items()]
        return "\n".join(lines)


def cuda_only(record: dict[str, Any]) -> bool:
    """A target vLLM cannot import on a machine without CUDA (listed, no call made)."""
    return record["status"] == "cannot-import" and CUDA in record["why"]


def _name(record: dict[str, Any]) -> str:
    candidate = record.get("candidate")
    return record["label"] + (f" with {candidate}" if candidate else "")


def make_runner_calls(release: FixedRelease, every_before: bool = False) -> RunnerCalls:
    """The runner's aux-layer calls on every target of `release`'s fixed copy, and on the
    unfixed release for those that do not run there (for all targets with `every_before`)."""
    methods = runner_methods(installed_tree(release.version))
    calls = RunnerCalls(release, methods, changed_classes(release), [])
    subjects = [
        [arch, target.ref.file.module, target.ref.name, None]
        for arch, target in sorted(release.targets.items())
    ]
    fixed_files = {module: str(path) for module, path in release.changed.items()}
    calls.after = _run(release.version, methods, subjects, fixed_files, True)
    asked = {
        (r["label"], r["candidate"]) for r in calls.after if every_before or r["status"] != "ran"
    }
    modules = {arch: module for arch, module, _, _ in subjects}
    names = {arch: name for arch, _, name, _ in subjects}
    again = [
        [arch, modules[arch], names[arch], candidate] for arch, candidate in sorted(asked, key=str)
    ]
    for record in _run(release.version, methods, again, None, False):
        calls.before[record["label"], record["candidate"]] = record
    return calls


def _run(
    version: str,
    methods: list[str],
    subjects: list[list[Any]],
    fixed_files: dict[str, str] | None,
    try_candidates: bool,
) -> list[dict[str, Any]]:
    """`aux_calls.py` over `subjects`, one process per set of packages their models need."""
    python = install(version)
    groups: dict[Path | None, list[list[Any]]] = {}
    for subject in subjects:
        groups.setdefault(overlay(version, subject[1]), []).append(subject)
    records: list[dict[str, Any]] = []
    for packages, group in sorted(groups.items(), key=lambda item: str(item[0])):
        request = {
            "overlay": fixed_files,
            "methods": methods,
            "subjects": group,
            "try_candidates": try_candidates,
        }
        records += _ask(python, request, packages, AUX_CALLS)
    return records
