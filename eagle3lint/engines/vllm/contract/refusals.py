"""How each model runner refuses a target that is not a SupportsEagle3, read from a vLLM tree.

V1 raises in `gpu_model_runner.py` ("Model does not support EAGLE3 interface but
aux_hidden_state_outputs was requested"), after its proposer has loaded the drafter; V2 raises
in `spec_decode/eagle/eagle3_utils.py` ("Model does not support EAGLE3 interface"), before its
speculator loads the drafter. Both the text and the order are read, never assumed: a report
quotes the runner that runs the target.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from eagle3lint.engines.vllm.contract.model import V1, V2, Refusal, Runners
from eagle3lint.engines.vllm.contract.runners import V1_RUNNER, V2_EAGLE3, V2_RUNNER
from eagle3lint.engines.vllm.contract.runners import _function as function_source

_CHECK = re.compile(r"supports_eagle3\(")
_RAISE = re.compile(r"""raise\s+(\w+)\(\s*((?:f?(?:"[^"\n]*"|'[^'\n]*')\s*)+)\)""")
_PIECE = re.compile(r"""f?(?:"([^"\n]*)"|'([^'\n]*)')""")
_NEAR = 400
"""How far after the `supports_eagle3(` test its `raise` may be (0.11's `else:` branch is
the farthest, a few lines)."""
_PROPOSER_LOAD = re.compile(r"self\.(?:drafter|speculator)\.load_model\(")
_DEF = re.compile(r"^\s*def (\w+)\(", re.MULTILINE)

_FILES = {V1: (V1_RUNNER,), V2: (V2_RUNNER, V2_EAGLE3)}
"""Where each runner's check may be: its own file, or (V2) the EAGLE-3 helpers it calls."""
_RUNNER_FILE = {V1: V1_RUNNER, V2: V2_RUNNER}


def read_refusals(
    vllm_dir: Path, runners: Runners | None, read: Callable[[Path], str | None]
) -> tuple[Refusal, ...]:
    """Each present runner's refusal of a target that is not a SupportsEagle3, V1's first;
    a runner whose code has no such check (V2 before 0.17) has none."""
    found: list[Refusal] = []
    for runner in runners.present if runners else ():
        runner_text = read(vllm_dir / _RUNNER_FILE[runner]) or ""
        for rel in _FILES[runner]:
            text = read(vllm_dir / rel) or ""
            refusal = _refusal(runner, str(vllm_dir / rel), text, runner_text)
            if refusal is not None:
                found.append(refusal)
                break
    return tuple(found)


def _refusal(runner: str, path: str, text: str, runner_text: str) -> Refusal | None:
    for check in _CHECK.finditer(text):
        raised = _RAISE.search(text, check.end(), check.end() + _NEAR)
        if raised is None:
            continue
        message = "".join(a or b for a, b in _PIECE.findall(raised.group(2)))
        enclosing = [m.group(1) for m in _DEF.finditer(text, 0, check.start())]
        return Refusal(
            runner,
            path,
            text.count("\n", 0, raised.start()) + 1,
            raised.group(1),
            message,
            _asks_first(runner_text, enclosing[-1] if enclosing else None),
        )
    return None


def _asks_first(runner_text: str, checker: str | None) -> bool:
    """The runner's `load_model` reaches the check (`supports_eagle3(` itself, or a call of
    the function holding it) before its proposer's `load_model`; False when either is not
    found there."""
    body = function_source(runner_text, "load_model")
    load = _PROPOSER_LOAD.search(body)
    asks = [m.start() for m in _CHECK.finditer(body)]
    # The check inside `load_model` itself is found by its own call above.
    if checker not in (None, "load_model"):
        asks += [m.start() for m in re.finditer(rf"(?<!def )\b{checker}\(", body)]
    return load is not None and bool(asks) and min(asks) < load.start()
