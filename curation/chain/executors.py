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
import gc
import itertools
import os
import sys
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from types import ModuleType
from typing import Any, TypeVar

from curation.chain.chain import Executor, Step
from curation.chain.run import Products, Run, StepTime
from curation.core.errors import PericurateError
from curation.core.heap import keep_freed_memory
from curation.core.parallel import LocalMap, Mapper, cancelling_pool
from curation.core.vocabulary import ExecutorName

IN_FLIGHT_PER_CPU = 16  # chunks submitted ahead of the one awaited, per CPU of the cluster
# Chunks dealt before the cluster's nodes are read again: a node that joins while a step runs
# gets its share of the chunks still to deal (a node that joined a few seconds after a
# 1,000,000-row audit's scan began ran none of its 3,907 chunks).
DEAL_ROUND = 64

Job = TypeVar("Job")
Result = TypeVar("Result")


class LocalExecutor:
    """Every step in this process; per-file work over ``workers`` local processes (0: one
    per core), one pool of them for each step (``step_workers``)."""

    def __init__(self, workers: int = 0) -> None:
        self.workers = workers
        self.times: list[StepTime] = []
        self._pool: ProcessPoolExecutor | None = None

    def run(self, steps: Sequence[Step], run: Run) -> Products:
        """Run ``steps`` in order in one session, recording each step's wall and CPU time."""
        products: Products = {}
        with self.session():
            for step in steps:
                wall, cpu = time.perf_counter(), _cpu_seconds()
                with self.step_workers():
                    on = dataclasses.replace(run, map=self.mapper(step.name))
                    products = step.apply(on, products)
                spent = time.perf_counter() - wall, _cpu_seconds() - cpu
                self.times.append(StepTime(step.name, *spent))
        return products

    @contextmanager
    def mapping(self, work: str) -> Iterator[Mapper]:
        """The map of one named piece of per-file work outside the chain (the audit's)."""
        with self.session(), self.step_workers():
            yield self.mapper(work)

    @contextmanager
    def session(self) -> Iterator[None]:
        """What the executor sets up while steps run: here only that this process and the
        workers it forks keep freed memory for reuse (``curation.core.heap``)."""
        keep_freed_memory()
        yield

    @contextmanager
    def step_workers(self) -> Iterator[None]:
        """One pool of worker processes for every map of one step (``curation.core.parallel``):
        forked at the step's first per-file work, once the step has loaded its libraries, and
        joined when it ends, so that its workers' CPU is counted in it (the jobs not yet
        started are cancelled when it failed)."""
        if self.workers == 1:
            yield
            return
        with cancelling_pool(self.workers) as pool:
            self._pool = pool
            try:
                yield
            finally:
                self._pool = None

    def mapper(self, step: str) -> Mapper:
        """Where ``step`` runs its per-file work: the workers of the step's pool."""
        return LocalMap(self.workers, self._pool)


def _cpu_seconds() -> float:
    """CPU seconds of this process and of its joined children: a step's worker pool is shut
    down inside the step, so its time is counted in the step that started it."""
    spent = os.times()
    return spent.user + spent.system + spent.children_user + spent.children_system


def run_chunk(function: Callable[[Job], Result], chunk: Sequence[Job]) -> tuple[str, list[Result]]:
    """One Ray task: ``function`` over a chunk of jobs, with the id of the node that ran it."""
    import ray

    return ray.get_runtime_context().get_node_id(), [function(job) for job in chunk]


class RayMap:
    """The ``Mapper`` of a Ray cluster for one step: a task per chunk of jobs, results in job
    order; how many jobs each node ran is counted in ``jobs_by_node`` (the executor's ledger
    for this step).

    The chunks are dealt round the nodes' CPUs (``cpu_slots``), each with a soft affinity
    to its node: Ray's own placement hands a step's next chunks to the worker it already
    leased, so a short step never reached a node whose worker was still starting. Soft: a
    chunk whose node is gone runs elsewhere, and a task lost with its node is retried. The
    nodes are read again every ``DEAL_ROUND`` chunks, so a node that joins (or leaves) while a
    step runs is dealt the chunks still to deal.

    At most ``IN_FLIGHT_PER_CPU`` chunks a CPU are submitted ahead of the one awaited, and a
    chunk's reference is dropped once its results are read: what waits in the object store
    and in the driver stays bounded whatever the number of jobs (submitted all at once, the
    64,000-row audit's search held every tile's results to the end, 0.8 GB)."""

    def __init__(self, ray: ModuleType, task: Any, step: str, jobs_by_node: Counter[str]) -> None:
        self.ray = ray
        self.task = task
        self.step = step
        self.jobs_by_node = jobs_by_node

    def __call__(
        self, function: Callable[[Job], Result], jobs: Sequence[Job], chunksize: int = 16
    ) -> Iterator[Result]:
        chunks = [jobs[start : start + chunksize] for start in range(0, len(jobs), chunksize)]
        slots: list[str] = []  # the CPU slots the chunks are dealt round now

        def dealt() -> Iterator[Any]:
            """Each chunk's task as it is submitted, the nodes read every ``DEAL_ROUND``."""
            nonlocal slots
            for n, chunk in enumerate(chunks):
                if n % DEAL_ROUND == 0:
                    slots = cpu_slots(self.ray.nodes())
                yield self._submit(function, chunk, slots, n)

        def ahead() -> int:
            """How many chunks may be submitted and not yet read, for those slots."""
            return IN_FLIGHT_PER_CPU * max(len(slots), 1)

        submitted = dealt()
        pending = deque(itertools.islice(submitted, 1))  # the first reads the nodes
        pending.extend(itertools.islice(submitted, ahead() - 1))
        while pending:
            done = pending.popleft()
            pending.extend(itertools.islice(submitted, max(0, ahead() - len(pending))))
            try:
                node, results = self.ray.get(done)
            except self.ray.exceptions.RayError as error:  # retries spent, or the job failed
                problem = str(error).strip().splitlines()[0]
                raise PericurateError(
                    f"Ray could not finish the {self.step} step's per-file work "
                    f"({type(error).__name__}: {problem}); the step kept none of it, so a "
                    "rerun starts it again."
                ) from None
            self.jobs_by_node[node] += len(results)
            yield from results

    def _submit(
        self, function: Callable[[Job], Result], chunk: Sequence[Job], slots: list[str], n: int
    ) -> Any:
        """The task of the ``n``-th chunk, dealt to the ``n``-th CPU slot round the nodes."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        if not slots:
            return self.task.remote(function, chunk)
        strategy = NodeAffinitySchedulingStrategy(slots[n % len(slots)], soft=True)
        return self.task.options(scheduling_strategy=strategy).remote(function, chunk)


def cpu_slots(nodes: list[dict[str, Any]]) -> list[str]:
    """The alive nodes' ids, each once per CPU, interleaved (``a b a b a``, not
    ``a a a b b``): the order chunks are dealt in."""
    cpus = {n["NodeID"]: int(n["Resources"].get("CPU", 0)) for n in nodes if n["Alive"]}
    return [node for i in range(max(cpus.values(), default=0)) for node in cpus if cpus[node] > i]


class RayExecutor(LocalExecutor):
    """The same steps, their per-file work as Ray tasks. Connects to the cluster that
    ``RAY_ADDRESS`` names, else starts a local one (and stops what it started).
    ``jobs_by_step`` says which node ran how many jobs of which step (what the cluster test
    reads); the run ends with one line saying so."""

    sessions_here = 0  # Ray sessions this process has opened (``leave_process`` reads it)

    def __init__(self, workers: int = 0) -> None:
        super().__init__(workers)
        self.jobs_by_step: dict[str, Counter[str]] = {}
        self._task: Any = None

    @contextmanager
    def session(self) -> Iterator[None]:
        """Ray, connected (or started here, and stopped on leaving); then one line saying
        which node ran how many jobs of which step."""
        ray = _import_ray()
        started = not ray.is_initialized()
        if started:
            quiet_ray_init(ray)
        self._task = ray.remote(run_chunk)
        RayExecutor.sessions_here += 1
        try:
            yield
        finally:
            self._task = None
            gc.collect()  # any Ray object reference left in a cycle goes while Ray is up
            if started:
                ray.shutdown()
        print(nodes_line(self.jobs_by_step), file=sys.stderr)

    @contextmanager
    def step_workers(self) -> Iterator[None]:
        """Nothing: a step's per-file work goes to the cluster's Ray workers."""
        yield

    def mapper(self, step: str) -> Mapper:
        """Where ``step`` runs its per-file work: Ray tasks, counted by the node that ran them."""
        jobs_by_node = self.jobs_by_step.setdefault(step, Counter())
        return RayMap(_import_ray(), self._task, step, jobs_by_node)


def leave_process(status: int) -> None:
    """End this process with ``status`` now, without the interpreter's teardown, if it has
    run a Ray session; otherwise return. Ray's driver library tears its native threads down
    in the C++ destructors that run at exit: once in CI, a build on the two-node cluster that
    had finished (its outputs written and checked, Ray shut down) died there with glibc's
    ``tpp.c`` mutex assertion and SIGABRT. By the time a command calls this, every output is
    a whole file and the summary is printed, so only the output streams are flushed."""
    if not RayExecutor.sessions_here:
        return
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(status)


def nodes_line(jobs_by_step: dict[str, Counter[str]]) -> str:
    """One line: per step that handed Ray jobs, each node (its id's first 8 hex digits) and
    the jobs it ran."""
    nodes = {node for counts in jobs_by_step.values() for node in counts}
    steps = [
        f"{step} " + " + ".join(f"{node[:8]} {n}" for node, n in sorted(counts.items()))
        for step, counts in jobs_by_step.items()
        if counts
    ]
    return f"Ray ran per-file jobs on {len(nodes)} node(s): {'; '.join(steps) or 'none'}."


def quiet_ray_init(ray: ModuleType) -> None:
    """``ray.init`` with Ray's own messages kept out of the terminal: workers' output stays
    in the session's log folder, which one line names; the steps' own progress bars are the
    ones shown. Errors still reach the terminal."""
    import logging

    # "local" unless RAY_ADDRESS names a cluster: without an address, ray.init would join
    # whatever cluster a `ray start` on this machine last recorded.
    address = os.environ.get("RAY_ADDRESS") or "local"
    context = ray.init(address=address, log_to_driver=False, logging_level=logging.ERROR)
    print(f"Ray's logs: {context.address_info['session_dir']}/logs", file=sys.stderr)


def executor_for(name: ExecutorName, workers: int = 0) -> Executor:
    """The executor a run's ``--executor`` option names.

    Args:
        name: ``local`` (processes on this machine) or ``ray`` (a Ray cluster).
        workers: how many workers; 0 for one per available core.

    Returns:
        The executor, not started yet: Ray is imported and joined only when it runs.
    """
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
