"""The local executor's workers are a step's: every map of one step goes to one pool, forked
once, and the step is counted the CPU its work took in those workers."""

from __future__ import annotations

import os
import time
from pathlib import Path

from curation.chain.chain import Step
from curation.chain.executors import LocalExecutor
from curation.chain.run import Run
from curation.chain.settings import Settings
from tests.child_process import child_json

WORK_SECONDS = 0.2  # CPU each job spends in a worker
JOBS = 4


def busy_worker(_: int) -> int:
    """A job that spends ``WORK_SECONDS`` of CPU, then says which process ran it."""
    until = time.process_time() + WORK_SECONDS
    while time.process_time() < until:
        pass
    return os.getpid()


def two_maps(run: Run) -> dict[str, object]:
    """A step that hands its per-file work to ``run.map`` twice, as the frame check's rounds do."""
    first = set(run.map(busy_worker, list(range(JOBS)), chunksize=1))
    second = set(run.map(busy_worker, list(range(JOBS)), chunksize=1))
    return {"first_workers": first, "second_workers": second}


def _run(tmp_path: Path) -> tuple[dict[str, object], float]:
    step = Step("two-maps", "busy work twice", two_maps, writes=("first_workers", "second_workers"))
    executor = LocalExecutor(workers=2)
    run = Run(None, tmp_path, Settings(), lambda *_: None, None)  # type: ignore[arg-type]
    products = executor.run([step], run)
    return products, executor.times[0].cpu_s


def test_the_maps_of_one_step_share_its_worker_processes(tmp_path):
    products, _ = _run(tmp_path)
    first, second = products["first_workers"], products["second_workers"]
    assert isinstance(first, set) and isinstance(second, set)
    assert os.getpid() not in first | second
    assert len(first | second) <= 2
    assert first & second, "the second map forked workers of its own"


def test_a_step_is_counted_the_cpu_its_work_took_in_its_workers(tmp_path):
    _, cpu = _run(tmp_path)
    assert cpu >= 0.75 * 2 * JOBS * WORK_SECONDS


def test_a_library_a_worker_loads_after_the_fork_runs_on_one_thread():
    # A worker may import faiss only when its first job needs it; its OpenMP would take
    # every core.
    assert child_json("tests.chain.late_openmp_child") == [1, 1, 1, 1]
