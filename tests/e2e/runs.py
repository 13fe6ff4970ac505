"""Running tiny models through vLLM's CPU build, from the test process (eagle3lint's side).

`tiny.py` does the work inside the CPU build's venv; this module builds its models, runs it in a
subprocess with a time limit, and keeps each outcome in a result cache keyed by everything that
decides it (the release and its venv's marker, the generation code, the models' files), so that
a second test run with the venvs present reads the outcome instead of starting vLLM again.
"""

from __future__ import annotations

import dataclasses
import fcntl
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from venvs import (
    MODEL_OVERLAYS,
    READY_MARKER,
    VLLM_CPU,
    distributions_in,
    install,
    installed_distributions,
    installed_package,
    runtime_root,
    venv_dir,
    version_in,
)
from venvs import overlay as model_overlay

from eagle3lint.engines.vllm.registry import registered_architectures
from eagle3lint.index.project import ProjectIndex

TINY = Path(__file__).with_name("tiny.py")
GENERATION = Path(__file__).with_name("tiny_generate.py")
"""What `tiny.py generate` runs: with the models' files and the overlay, what decides an outcome."""
ACCEPTANCE = Path(__file__).with_name("tiny_acceptance.py")
"""What `tiny.py accept` runs: with the models' files, what decides an acceptance count."""
OVERLAY_SITE = Path(__file__).with_name("overlay")
"""Put on PYTHONPATH for a run with repaired files: its sitecustomize lays them over vLLM."""
RUN_TIMEOUT = 900
"""Seconds one vLLM run may take (seen: about 90 s on 2 busy cores, most of it start-up)."""
BUILD_TIMEOUT = 300

ENVIRONMENT = "environment"
"""The key of a kept outcome's record of the packages its venv had (`kept_outcome`)."""

CANNOT = "cannot run on CPU"
"""The status of a case the CPU build stops before EAGLE-3 is decided."""

# Only model runner v1 runs on a CPU without Triton; vLLM says so when it would have chosen v2.
_RUNNER_V2_REFUSED = re.compile(r"Model Runner V2 requires Triton; using the V1 model runner")


@dataclass(frozen=True)
class Outcome:
    """What one generation did: greedy tokens per prompt, or the error vLLM raised."""

    tokens: list[list[int]] | None
    error: dict[str, str] | None
    runner: str
    """Which model runner ran: "v1", or "v1 (v2 needs Triton)" where vLLM would have chosen v2."""
    drafts: int | None = None
    overlaid: list[str] | None = None
    """The modules imported from repaired files, for a run with an overlay."""
    aux: dict[str, Any] | None = None
    """What the EAGLE proposer was first handed (`tiny_generate._capture_aux_states`): the
    prefill's `tokens`, `positions` and aux hidden `states`, for a run with a head."""

    @property
    def ran(self) -> bool:
        return self.tokens is not None

    def raised(self) -> str | None:
        """`Type: first line` of the error, None when the run went through."""
        return f"{self.error['type']}: {self.error['message']}" if self.error else None

    @property
    def checked_out(self) -> bool:
        """Whether the test's own check stopped the run (`tiny_generate.WIDTH_CHECK`), not
        vLLM: what vLLM does then is for a run without it to say (`generate(checked=False)`)."""
        return self.error is not None and "check" in self.error

    def describe(self) -> str:
        if self.error is None:
            return f"ran ({self.runner})"
        if self.checked_out:
            return f"the test's {self.error['check']}: {self.error['message']}"
        return f"{self.error['type']}: {self.error['message']} [{self.error['where']}]"


def results_dir() -> Path:
    """Where outcomes are kept between runs (beside the venvs)."""
    return runtime_root() / "e2e-results"


class Workbench:
    """Tiny models and their runs for one CPU build of vLLM."""

    def __init__(self, version: str, scratch: Path) -> None:
        self.version = version
        self.python = install(version, VLLM_CPU)
        self.scratch = scratch
        marker = venv_dir(version, VLLM_CPU) / READY_MARKER
        self._marker = marker.read_text()
        self._installed_at = marker.stat().st_mtime
        installed = installed_distributions(version, VLLM_CPU)
        self._environment = hashlib.sha256("\n".join(installed).encode()).hexdigest()[:16]
        self._transformers = version_in(installed, "transformers")
        self._packages: dict[Path, Path] = {}
        """Per target folder, the packages its model needs in front of the venv's."""
        self._hidden: dict[Path, list[list[list[list[float]]]]] = {}

    def target(self, arch: str, layers: int = 8) -> Path:
        """A tiny random `arch` target (built once per recipe in the scratch folder)."""
        packages = self._model_packages(arch)
        # Other packages build another config: the folder is theirs.
        front = f"-{packages.name}" if packages else ""
        folder = self.scratch / f"target-{arch}-{layers}{front}"
        if packages is not None:
            self._packages[folder] = packages
        if not (folder / "config.json").is_file():
            args = ["target", arch, str(folder), "--layers", str(layers)]
            self._tiny(args, BUILD_TIMEOUT, _in_front(packages))
        return folder

    def hidden_states(self, target: Path) -> list[list[list[list[float]]]]:
        """transformers' `hidden_states` of `target` (a recipe's, with weights) for each prompt,
        in the CPU build's venv (`tiny.py hidden`): per prompt, per entry, per position. Kept for
        the workbench's life (about 10 s to compute, and the same for every head)."""
        if target not in self._hidden:
            result, _ = self._tiny(
                ["hidden", str(target)], BUILD_TIMEOUT, _in_front(self._packages.get(target))
            )
            self._hidden[target] = result["states"]
        return self._hidden[target]

    def _model_packages(self, arch: str) -> Path | None:
        """The packages `arch`'s model module needs in front of the venv's
        (`venvs.MODEL_OVERLAYS`: vLLM 0.16.0's Jais 2 imports transformers 5.0's config, which
        its users install over the transformers<5 it pins). Unlike the oracle, which imports
        them for those models only, the whole run uses them, as a user's server would."""
        if not MODEL_OVERLAYS.get(self.version):
            return None
        return model_overlay(self.version, self._modules.get(arch, ""), VLLM_CPU)

    def transformers(self, arch: str) -> str | None:
        """The transformers version `arch`'s target is built and run with: the one in front of
        the venv's where its model needs newer packages, else the venv's."""
        packages = self._model_packages(arch)
        if packages is not None:
            return version_in(distributions_in(packages), "transformers")
        return self._transformers

    @functools.cached_property
    def _modules(self) -> dict[str, str]:
        """The module of each registered architecture, from the CPU build's registry."""
        index = ProjectIndex([installed_package(self.version, VLLM_CPU).parent])
        return {entry.arch: entry.module for entry in registered_architectures(index)}

    def head(
        self,
        target: Path,
        layer_ids: list[int] | None = None,
        draft_vocab: int | None = None,
        config: dict[str, Any] | None = None,
        d2t_shift: int = 0,
    ) -> Path:
        """A tiny random EAGLE-3 head for `target`, its config changed by `config` (merged over
        the top level; null removes a key) with the weights left as the recipe makes them; a
        reduced vocabulary maps draft id i to target id i + `d2t_shift`."""
        changes = json.dumps(config or {}, sort_keys=True)
        name = "-".join(map(str, layer_ids)) if layer_ids is not None else "default"
        recipe = hashlib.sha256(changes.encode()).hexdigest()[:8] if config else "plain"
        vocab = f"{draft_vocab}+{d2t_shift}" if d2t_shift else str(draft_vocab or "full")
        folder = self.scratch / f"head-{target.name}-{name}-{vocab}-{recipe}"
        if not (folder / "config.json").is_file():
            args = ["head", str(target), str(folder), "--config", changes]
            if layer_ids is not None:
                args += ["--layer-ids", *map(str, layer_ids)]
            if draft_vocab is not None:
                args += ["--draft-vocab", str(draft_vocab)]
            if d2t_shift:
                args += ["--d2t-shift", str(d2t_shift)]
            self._tiny(args, BUILD_TIMEOUT)
        return folder

    def generate(
        self,
        target: Path,
        head: Path | None = None,
        overlay: Path | None = None,
        method: str | None = "eagle3",
        checked: bool = True,
        shorter: int = 0,
    ) -> Outcome:
        """Greedy generation of `target` (with speculation from `head`, by `method`, None for
        vLLM's own choice; with the installed `vllm` package's modules replaced by those under
        `overlay`, laid out as `vllm/...`; without the width check when not `checked`; with
        `shorter` tokens cut from the last prompt), from the cache when the same run was made
        before."""
        key = self._key(target, head, overlay, method, f"\0checked={checked}\0shorter={shorter}")
        cached = results_dir() / f"{key}.json"
        kept = kept_outcome(cached, self._environment, self._installed_at)
        if kept is not None:
            return _placeless(kept)
        args = ["generate", str(target)] + (["--head", str(head)] if head else [])
        if method is None:
            args.append("--no-method")
        if not checked:
            args.append("--unchecked")
        if shorter:
            args += ["--shorter", str(shorter)]
        packages = self._packages.get(target)
        env = _in_front(packages)
        if overlay is not None:
            env = {
                "PYTHONPATH": os.pathsep.join([*env.values(), str(OVERLAY_SITE)]),
                "EAGLE3LINT_E2E_OVERLAY": str(overlay),
                # vLLM caches what it learnt of a model class by the installed file's hash.
                "VLLM_CACHE_ROOT": str(self.scratch / f"vllm-cache-{key}"),
            }
        result, log = self._tiny(args, RUN_TIMEOUT, env)
        runner = "v1 (v2 needs Triton)" if _RUNNER_V2_REFUSED.search(log) else "v1"
        outcome = Outcome(
            result.get("tokens"),
            result.get("error"),
            runner,
            result.get("drafts"),
            result.get("overlaid"),
            result.get("aux"),
        )
        cached.parent.mkdir(parents=True, exist_ok=True)
        partial = cached.with_suffix(".partial")
        partial.write_text(json.dumps({**outcome.__dict__, ENVIRONMENT: self._environment}))
        partial.replace(cached)
        return _placeless(outcome)

    def acceptance(self, target: Path, head: Path, prompt_length: int) -> dict[str, Any]:
        """The spec-decode counters of a run after a prompt of `prompt_length` tokens with
        `target` and `head` made to agree (`tiny_acceptance`), from the cache when the same run
        was made before with the same packages."""
        code = hashlib.sha256(ACCEPTANCE.read_bytes()).hexdigest()
        key = self._key(target, head, None, "eagle3", f"\0accept={prompt_length}\0{code}")
        cached = results_dir() / f"accept-{key}.json"
        if cached.is_file():
            kept = json.loads(cached.read_text())
            if kept.pop(ENVIRONMENT, None) == self._environment:
                return kept
        args = ["accept", str(target), str(head), "--prompt-length", str(prompt_length)]
        result, _ = self._tiny(args, RUN_TIMEOUT)
        cached.parent.mkdir(parents=True, exist_ok=True)
        partial = cached.with_suffix(".partial")
        partial.write_text(json.dumps({**result, ENVIRONMENT: self._environment}))
        partial.replace(cached)
        return result

    def _key(
        self,
        target: Path,
        head: Path | None,
        overlay: Path | None,
        method: str | None,
        options: str = "",
    ) -> str:
        digest = hashlib.sha256()
        # The head's folder name is part of the run: vLLM chooses an unset method from it.
        chosen = f"method={method}\0{head.name if method is None and head else ''}{options}"
        packages = self._packages.get(target)
        front = f"\0packages={','.join(distributions_in(packages))}" if packages else ""
        for part in (self.version, self._marker, GENERATION.read_bytes(), chosen + front):
            digest.update(part if isinstance(part, bytes) else part.encode())
        for folder in (target, head):
            if folder is not None:
                for path in sorted(folder.glob("*.json")) + sorted(folder.glob("*.safetensors")):
                    digest.update(path.name.encode() + path.read_bytes())
        if overlay is not None:
            digest.update((OVERLAY_SITE / "sitecustomize.py").read_bytes())
            for path in sorted(overlay.rglob("*.py")):
                digest.update(str(path.relative_to(overlay)).encode() + path.read_bytes())
        return digest.hexdigest()[:24]

    def _tiny(
        self, args: list[str], timeout: float, extra: dict[str, str] | None = None
    ) -> tuple[dict[str, Any], str]:
        env = dict(
            os.environ,
            **(extra or {}),
            VLLM_CPU_KVCACHE_SPACE="1",  # GiB
            VLLM_ENABLE_V1_MULTIPROCESSING="0",
            TOKENIZERS_PARALLELISM="false",
        )
        start = time.monotonic()
        try:
            done = subprocess.run(
                [str(self.python), str(TINY), *args],
                capture_output=True,
                text=True,
                timeout=timeout,
                env=env,
                cwd=self.scratch,
            )
        except subprocess.TimeoutExpired as expired:
            raise AssertionError(f"tiny.py {args[0]} took over {timeout} s: {args}") from expired
        log = done.stdout + done.stderr
        for line in reversed(done.stdout.splitlines()):
            if line.startswith(_result_prefix()):
                return json.loads(line[len(_result_prefix()) :]), log
        raise AssertionError(no_result(args, done.returncode, time.monotonic() - start, log))


def _in_front(packages: Path | None) -> dict[str, str]:
    """The environment that puts `packages` before the venv's own."""
    return {"PYTHONPATH": str(packages)} if packages else {}


def kept_outcome(cached: Path, environment: str, installed_at: float) -> Outcome | None:
    """The outcome kept at `cached` when the venv's packages (`environment`, a digest of them)
    are still those it ran with. The cache key holds the venv's constraints, not the versions
    they resolved to: a venv installed again under the same constraints may hold another
    transformers. An outcome kept before the packages were recorded counts when it is newer
    than the venv's marker (`installed_at`: written at each install and change of constraints)."""
    if not cached.is_file():
        return None
    data = json.loads(cached.read_text())
    recorded = data.pop(ENVIRONMENT, None)
    if recorded is None:
        return Outcome(**data) if cached.stat().st_mtime > installed_at else None
    return Outcome(**data) if recorded == environment else None


def no_result(args: list[str], returncode: int, seconds: float, log: str) -> str:
    """What a `tiny.py` run that printed no result raises (the sweep reads it: `sweep.KILLED`)."""
    return (
        f"tiny.py {' '.join(args)} gave no result (exit {returncode}, {seconds:.0f} s):\n"
        + (log[-4000:])
    )


_MODEL_FOLDER = re.compile(r"/[^'\"\s]*/(target|head)-[^'\"\s/]*")


def _placeless(outcome: Outcome) -> Outcome:
    """`outcome` with the models' folders in vLLM's message named `<target>` or `<head>`: the
    same run is kept once for every scratch folder its models were written to."""
    if outcome.error is None:
        return outcome
    message = _MODEL_FOLDER.sub(lambda m: f"<{m.group(1)}>", outcome.error["message"])
    return dataclasses.replace(outcome, error={**outcome.error, "message": message})


def _result_prefix() -> str:
    """tiny.py's result marker, read from its source (it runs in another interpreter)."""
    match = re.search(r'^RESULT_PREFIX = "(.*)"$', TINY.read_text(), re.MULTILINE)
    assert match, "tiny.py defines RESULT_PREFIX"
    return match.group(1)


def evidence_dir(version: str) -> Path:
    """Where the cases of `version` decided by the last run are kept (`record`)."""
    return results_dir() / "evidence" / version


def clear_evidence(version: str, run: str) -> None:
    """Empty the evidence of `version` once per test `run`: what this run decides replaces what
    an earlier one did, and a second xdist worker starting the same release (same `run`) keeps
    what the first recorded."""
    folder = evidence_dir(version)
    folder.mkdir(parents=True, exist_ok=True)
    with (folder.parent / f".{folder.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        stamp = folder / ".run"
        if stamp.is_file() and stamp.read_text() == run:
            return
        shutil.rmtree(folder)
        folder.mkdir()
        stamp.write_text(run)


def record(version: str, kind: str, name: str, status: str, eagle3lint: str, vllm: str) -> None:
    """Keep what one end-to-end case decided, for `evidence.py` to render: its `status`
    ("agree", "known disagreement", "cannot run on CPU"), and what each side said."""
    folder = evidence_dir(version)
    folder.mkdir(parents=True, exist_ok=True)
    entry = {"kind": kind, "name": name, "status": status, "eagle3lint": eagle3lint, "vllm": vllm}
    partial = folder / f".{kind}-{name}.partial"
    partial.write_text(json.dumps(entry))
    partial.replace(folder / f"{kind}-{name}.json")
