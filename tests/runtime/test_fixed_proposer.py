"""Ready means vLLM will not raise (issue 24, item 3): after `fix --require '*'` on a copy of an
installed release, the fixed proposer's multimodal branch runs with the real config class of
every multimodal target eagle3lint calls ready, and none raises.

"Ready" here is what the proposer depends on: a multimodal target with no error left and no
unverified image-token attribute (on releases with the model_type allow-list no target is
ready without --hf-config, so the gate's own unverified remark is left out). The copy has the
release venv's transformers beside its `vllm` folder, as an installed vLLM has: eagle3lint reads
the config classes vLLM runs with (`index.libraries`). Those it cannot read or decide stay
unverified, never ready, and are not run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fixed import _module_of
from runtime import installed_tree
from venvs import RELEASES, copy_python_files, install

from eagle3lint.engine import CheckOptions, run_check

PROOF = Path(__file__).resolve().parent / "proposer_proof.py"
PROOF_TIMEOUT = 900
IMAGE_TOKEN_CODES = ("EAG401", "EAG402", "EAG403")
UNREAD_EMBEDDING = "EAG413"
"""A Transformers-backend target whose transformers class was not read: what the proposer
takes from it is undecided, so it is not ready (a copy of `vllm/` alone has no transformers)."""


def _fixed_copy(version: str, workdir: Path) -> tuple[Path, dict[str, str]]:
    """A copy of the installed release with its transformers beside it, fixed as a user would;
    the changed modules with their fixed files."""
    installed = installed_tree(version)
    tree = workdir / f"proposer-{version}"
    copy_python_files(installed, tree / "vllm")
    for item in installed.parent.glob("transformers*"):
        (tree / item.name).symlink_to(item)
    done = subprocess.run(
        [sys.executable, "-m", "eagle3lint", "fix", str(tree / "vllm"), "--require", "*"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode in (0, 1), done.stdout[-2000:] + done.stderr[-2000:]
    changed = {}
    for path in sorted((tree / "vllm").rglob("*.py")):
        if (installed / path.relative_to(tree / "vllm")).read_bytes() != path.read_bytes():
            changed[_module_of(tree, path)] = str(path)
    return tree, changed


def _ready_multimodal(tree: Path) -> tuple[str | None, list[list[str]]]:
    """The proposer's module, and the multimodal targets the check calls ready under model
    runner V1 (whose proposer alone reads the image token) as far as the proposer is concerned;
    no module when the release has no such proposer (0.34.0: V2 alone)."""
    run = run_check(CheckOptions(paths=[tree / "vllm"], require=["*"], use_cache=False))
    tokens = run.report.contract.image_tokens
    if tokens is None:
        found = [f for f in run.report.findings if f.code in IMAGE_TOKEN_CODES]
        assert not found, f"no proposer reads an image token, yet: {found[:3]}"
        return None, []
    path = Path(tokens.path)
    proposer = _module_of(tree, path if path.is_absolute() else tree / "vllm" / path)
    results = {t.arch: t for t in run.report.targets}
    ready = []
    for target in run.targets:
        result = results.get(target.arch)
        if result is None or not result.is_target or not target.is_multimodal:
            continue
        undecided = [
            f for f in result.unverified if f.code in (*IMAGE_TOKEN_CODES, UNREAD_EMBEDDING)
        ]
        # Where V2 runs the target by default, V1's image-token read is a warning and the
        # report's verdict for V1 is in `ready_by_runner`.
        under_v1 = (result.ready_by_runner or {}).get("v1", not result.has_errors)
        if not result.has_errors and not undecided and under_v1 is True:
            ready.append([target.arch, target.ref.file.module, target.ref.name])
    return proposer, ready


def _prove(version: str, overlay: dict[str, str], proposer: str, targets: list[list[str]]) -> list:
    request = {"overlay": overlay, "proposer": proposer, "targets": targets}
    done = subprocess.run(
        [str(install(version)), str(PROOF)],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        timeout=PROOF_TIMEOUT,
        check=False,
        env=dict(os.environ, PYTHONHASHSEED="0"),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def _given_a_branch(version: str, proposer: str, changed: dict[str, str], ready: list) -> list:
    """The ready targets `fix` gave a proposer branch of their own (their class name is in the
    fixed proposer and not in the installed one)."""
    if proposer not in changed:
        return []
    fixed = Path(changed[proposer]).read_text()
    installed = installed_tree(version)
    original = (installed.parent / Path(*proposer.split("."))).with_suffix(".py").read_text()
    return [t for t in ready if f'"{t[2]}"' in fixed and f'"{t[2]}"' not in original]


@pytest.mark.parametrize("version", RELEASES)
def test_proposer_branch_runs_for_every_ready_multimodal_target(
    version: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    tree, changed = _fixed_copy(version, tmp_path_factory.mktemp("proposer"))
    proposer, ready = _ready_multimodal(tree)
    if proposer is None:
        return  # no image-token read to prove: `_ready_multimodal` asserted no finding says one
    assert ready, "no multimodal target is ready: nothing is proved"
    # The harness can fail: the targets fix gave a branch raise with the installed proposer.
    added = _given_a_branch(version, proposer, changed, ready)
    unfixed = {m: f for m, f in changed.items() if m != proposer}
    for record in _prove(version, unfixed, proposer, added):
        assert record["status"] == "raised" and "AttributeError" in record["why"], record
    records: list[dict[str, Any]] = _prove(version, changed, proposer, ready)
    print(f"vLLM {version}: {len(ready)} ready multimodal targets, {len(added)} given a branch")
    for record in records:
        why = record.get("why", "")
        mark = " (stand-in class)" if record.get("stand_in") else ""
        print(f"  {record['status']:9} {record['arch']}{mark} {record['configs']} {why}")
    assert {r["arch"] for r in records} == {arch for arch, _, _ in ready}
    problems = [
        f"{r['arch']}: {r['status']} {r.get('why', '')}" for r in records if r["status"] != "ok"
    ]
    assert not problems, "\n".join(problems)
