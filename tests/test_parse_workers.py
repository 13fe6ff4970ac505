"""When a check's cache misses go to worker processes: only when a wave of them is worth a
worker's start (`parsing.WORKER_MIN_BYTES`) or the workers run already; the results are the
same either way."""

from __future__ import annotations

from concurrent.futures import Future

from eagle3lint.index.cache import content_key
from eagle3lint.index.parsing import WORKER_MIN_BYTES, ParseJob, Parses, parse_job


class CountingPool:
    """A stand-in for the process pool: runs each job here, counting them."""

    def __init__(self) -> None:
        self.submitted = 0

    def submit(self, function, job: ParseJob) -> Future:  # type: ignore[no-untyped-def]
        self.submitted += 1
        future: Future = Future()
        future.set_result(function(job))
        return future


def _job(name: str, size: int) -> ParseJob:
    line = b"x = 1\n"
    data = b"class C:\n    pass\n" + line * (size // len(line))
    relpath = f"pkg/{name}.py"
    return relpath, data, content_key(data, relpath), None, None


def _parse(jobs: list[ParseJob], running: bool = False) -> tuple[int, list[str]]:
    pool = CountingPool()
    parses = Parses(lambda: pool, 2, {}, running=running)  # type: ignore[arg-type,return-value]
    for position, job in enumerate(jobs):
        parses.add(job, position)
    keys = [result[2] for result in parses.results(None)]
    return pool.submitted, keys


def test_a_small_wave_is_parsed_here() -> None:
    jobs = [_job(f"m{i}", 2_000) for i in range(10)]
    submitted, keys = _parse(jobs)
    assert submitted == 0
    assert sorted(keys) == sorted(job[2] for job in jobs)


def test_a_wave_worth_the_workers_goes_to_them() -> None:
    jobs = [_job(f"m{i}", WORKER_MIN_BYTES // 4) for i in range(8)]
    submitted, keys = _parse(jobs)
    assert submitted == 8
    assert sorted(keys) == sorted(job[2] for job in jobs)
    # One file alone past the limit starts a worker at once, as a release's interfaces.py does.
    assert _parse([_job("big", WORKER_MIN_BYTES)])[0] == 1


def test_running_workers_take_even_a_small_wave() -> None:
    jobs = [_job(f"m{i}", 2_000) for i in range(10)]
    assert _parse(jobs, running=True)[0] == 10
    assert sorted(_parse(jobs, running=True)[1]) == sorted(_parse(jobs)[1])
    assert _parse(jobs)[1] == [parse_job(job)[2] for job in sorted(jobs, key=lambda j: -len(j[1]))]
