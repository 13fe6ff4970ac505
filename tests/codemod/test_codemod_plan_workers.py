"""The repair plan made in worker processes is the plan made here."""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from eagle3lint.codemod.plan import plan
from eagle3lint.engine import CheckOptions, run_check
from eagle3lint.plans import Chain

ERAS = Path(__file__).resolve().parents[2] / "fixtures" / "eras"


@pytest.mark.parametrize("era", ["e2_stub", "e5_platforms", "s1_bare"])
def test_workers_plan_what_one_process_plans(era: str) -> None:
    """Six or seven files rewritten side by side, or one (rewritten here)."""
    run = run_check(CheckOptions(paths=[ERAS / era], require=["*"], jobs=1, use_cache=False))
    chains = [Chain(t.arch, t.findings) for t in run.report.targets if t.is_target]
    alone = plan(chains)
    with ProcessPoolExecutor(2) as workers:
        spread = plan(chains, workers=workers)
    assert spread.edits == alone.edits
    assert spread.refused == alone.refused
    assert any(e.changed for e in alone.edits)
