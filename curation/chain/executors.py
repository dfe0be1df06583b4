"""Where the chain runs: on this machine, or with its per-file work on a Ray cluster.

An executor runs the declared steps (``curation.chain.chain``) in order and owns their per-file
work: every step hands its jobs to ``run.map``, a module-level function of one job and the
jobs in order. ``LocalExecutor`` maps them over worker processes on this machine's cores;
``RayExecutor`` (extra ``pericurate[ray]``) maps them as Ray tasks, a chunk of jobs per task,
over every node of the cluster. Ray tasks rather than Ray Data: the jobs are the steps' own
functions of a path (or a pair of paths), results come back in order to the step that
caches and decides, and a task lost with its node is retried by Ray. The files are read by
path on the node, so every node must see the source folder at the same path (shared
storage, or one machine). The steps do not know which executor runs them: both give the
same records.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from types import ModuleType
from typing import TypeVar

from curation.chain.chain import Executor, Step
from curation.chain.run import Products, Run, StepTime
from curation.core.errors import PericurateError
from curation.core.parallel import LocalMap, Mapper
from curation.core.vocabulary import ExecutorName

Job = TypeVar("Job")
Result = TypeVar("Result")


class LocalExecutor:
    """Every step in this process; per-file work over ``workers`` local processes (0: one
    per core)."""

    def __init__(self, workers: int = 0) -> None:
        self.workers = workers
        self.times: list[StepTime] = []

    def run(self, steps: Sequence[Step], run: Run) -> Products:
        with self.mapping() as map:
            return self._run(steps, dataclasses.replace(run, map=map, workers=self.workers))

    def _run(self, steps: Sequence[Step], run: Run) -> Products:
        products: Products = {}
        for step in steps:
            wall, cpu = time.perf_counter(), _cpu_seconds()
            products = step.apply(run, products)
            self.times.append(StepTime(step.name, time.perf_counter() - wall, _cpu_seconds() - cpu))
        return products

    @contextmanager
    def mapping(self) -> Iterator[Mapper]:
        """Where per-file work runs while this is open: ``workers`` local processes."""
        yield LocalMap(self.workers)


def _cpu_seconds() -> float:
    """CPU seconds of this process and of its joined children: a step's worker pools are
    shut down inside the step, so their time is counted in the step that started them."""
    spent = os.times()
    return spent.user + spent.system + spent.children_user + spent.children_system


def run_chunk(function: Callable[[Job], Result], chunk: Sequence[Job]) -> tuple[str, list[Result]]:
    """One Ray task: ``function`` over a chunk of jobs, with the id of the node that ran it."""
    import ray

    return ray.get_runtime_context().get_node_id(), [function(job) for job in chunk]


class RayMap:
    """The ``Mapper`` of a Ray cluster: a task per chunk of jobs, results in job order, and
    how many jobs each node ran (``jobs_by_node``: what the cluster test reads)."""

    def __init__(self, ray: ModuleType) -> None:
        self.ray = ray
        self.task = ray.remote(run_chunk)
        self.jobs_by_node: Counter[str] = Counter()

    def __call__(
        self, function: Callable[[Job], Result], jobs: Sequence[Job], chunksize: int = 16
    ) -> Iterator[Result]:
        chunks = [jobs[start : start + chunksize] for start in range(0, len(jobs), chunksize)]
        pending = [self.task.remote(function, chunk) for chunk in chunks]
        for done in pending:
            node, results = self.ray.get(done)
            self.jobs_by_node[node] += len(results)
            yield from results


class RayExecutor(LocalExecutor):
    """The same steps, their per-file work as Ray tasks. Connects to the cluster that
    ``RAY_ADDRESS`` names, else starts a local one (and stops what it started)."""

    def __init__(self, workers: int = 0) -> None:
        super().__init__(workers)
        self.map: RayMap | None = None

    @contextmanager
    def mapping(self) -> Iterator[Mapper]:
        """Ray tasks while this is open, on the cluster ``RAY_ADDRESS`` names or a local one
        started here (and stopped on leaving)."""
        ray = _import_ray()
        started = not ray.is_initialized()
        if started:
            quiet_ray_init(ray)
        try:
            self.map = RayMap(ray)
            yield self.map
        finally:
            if started:
                ray.shutdown()


def quiet_ray_init(ray: ModuleType) -> None:
    """``ray.init`` with Ray's own messages kept out of the terminal: workers' output stays
    in the session's log folder, which one line names; the steps' own progress bars are the
    ones shown. Errors still reach the terminal."""
    import logging
    import sys

    context = ray.init(log_to_driver=False, logging_level=logging.ERROR)
    print(f"Ray's logs: {context.address_info['session_dir']}/logs", file=sys.stderr)


def executor_for(name: ExecutorName, workers: int = 0) -> Executor:
    return RayExecutor(workers) if name is ExecutorName.ray else LocalExecutor(workers)


def _import_ray() -> ModuleType:
    # Under `uv run`, Ray would start every worker through `uv run` again; the environment is
    # already complete, so workers use this interpreter unless the user says otherwise.
    os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
    try:
        import ray
    except ImportError:
        raise PericurateError(
            "--executor ray needs Ray, which is not installed: install pericurate[ray]."
        ) from None
    return ray
