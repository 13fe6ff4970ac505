"""The evidence's vLLM column (docs/end-to-end.md) says what vLLM did, never a message of the
test's own hooks as if vLLM raised it: a run the width check of `tiny_generate` stopped is
described as the test's check (test_e2e_pairing.py then runs it again without the check, at two
token counts, for what vLLM does). These need no vLLM."""

from __future__ import annotations

from runs import Outcome
from tiny_generate import WIDTH_CHECK

MESSAGE = "ReplicatedLinear got inputs of width 256, built for 384"


def test_a_run_the_width_check_stopped_is_the_tests_not_vllms() -> None:
    error = {"type": "RuntimeError", "message": MESSAGE, "where": "", "check": WIDTH_CHECK}
    stopped = Outcome(None, error, "v1")
    assert stopped.checked_out
    assert stopped.describe() == f"the test's width check: {MESSAGE}"
    # The known lists and the CPU build's limits compare `raised()`: unchanged by the mark.
    assert stopped.raised() == f"RuntimeError: {MESSAGE}"


def test_vllms_own_error_is_described_as_vllms() -> None:
    error = {"type": "RuntimeError", "message": "shape '[-1, 384]' is invalid", "where": "f.py:1"}
    raised = Outcome(None, error, "v1")
    assert not raised.checked_out
    assert raised.describe() == "RuntimeError: shape '[-1, 384]' is invalid [f.py:1]"
