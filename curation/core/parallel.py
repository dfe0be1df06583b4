"""Per-file work over local worker processes, results in job order.

The index, hash and pixel-comparison steps each have a pure function of one file (or one
pair of files); this is the one place that decides how such work runs on this machine. The
Ray executor (``curation.chain.executors``) is the other way to run the hash step.

Workers belong to the run that started them:

- A step's maps share one pool (``LocalMap`` given the step's pool by the executor,
  ``curation.chain.executors``), forked at the step's first per-file work and joined when the
  step ends: a pool for each map forked and warmed two workers for every round of the frame
  check and every part of the keeper. One pool for the whole run would fork before the later
  steps load their libraries, and each worker would hold its own copy of them (both
  measured: docs/scale.md, "What the CPU goal beside the peers still needs").
- They ignore SIGINT: a Ctrl-C reaches the whole process group, and the parent alone decides
  what an interrupt means (``curation.cli.app`` ends the run with one line). The parent holds an
  interrupt back while the pool starts (``interrupts_held``), so neither the pool nor a
  worker that has not yet said it ignores SIGINT meets one halfway.
- They exit when their parent dies (``kill -9`` of a build left its workers running for
  good): a daemon thread in each worker watches ``os.getppid()``. Linux's
  ``prctl(PR_SET_PDEATHSIG)`` would need ctypes and fires when the forking *thread* ends, and
  neither the standard library nor a well-kept package offers the guarantee for a
  ``ProcessPoolExecutor``; the watch costs one wake-up per ``PARENT_WATCH_SECONDS``.
- They run the native libraries' OpenMP and BLAS on one thread (``threadpoolctl`` for the
  libraries loaded before the fork, the environment for those a job loads after it). A worker
  is forked: once the parent has run faiss on two OpenMP threads (a k-means, a search), a
  worker's first multi-threaded OpenMP region waits for ever on the parent's threads, which
  a forked process does not have (GNU libgomp is not fork-safe). The workers are the
  parallelism, so one thread each is also what the cores can take.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager
from typing import Generic, Protocol, TypeVar

from threadpoolctl import threadpool_limits

Job = TypeVar("Job")
Result = TypeVar("Result")

PARENT_WATCH_SECONDS = 0.25
EXIT_ORPHANED = 70  # a worker whose parent died (EX_SOFTWARE); nobody reads it
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def ordered_map(
    function: Callable[[Job], Result], jobs: Sequence[Job], workers: int = 0, chunksize: int = 16
) -> Iterator[Result]:
    """``map(function, jobs)`` over ``workers`` processes (0: one per core) of a pool of its
    own, in job order; in this process when there is at most one job or ``workers == 1``."""
    if workers == 1 or len(jobs) <= 1:
        yield from map(function, jobs)
        return
    with cancelling_pool(workers) as pool:
        yield from pooled_map(pool, function, jobs, chunksize)


def pooled_map(
    pool: ProcessPoolExecutor,
    function: Callable[[Job], Result],
    jobs: Sequence[Job],
    chunksize: int = 16,
) -> Iterator[Result]:
    """``map(function, jobs)`` over the workers of ``pool`` (``worker_pool``'s), in job order;
    in this process when there is at most one job. A caller that stops reading lets go of the
    results, and with them the jobs not yet started (``Executor.map`` cancels them)."""
    if len(jobs) <= 1:
        yield from map(function, jobs)
        return
    with interrupts_held():  # the pool forks its workers on its first submission
        results = pool.map(function, jobs, chunksize=chunksize)
    yield from results


class Mapper(Protocol):
    """``map(function, jobs)`` in job order, wherever an executor runs it
    (``curation.chain.executors``): ``function`` is a module-level function of one job, so it
    can run in another process or on another node."""

    def __call__(
        self, function: Callable[[Job], Result], jobs: Sequence[Job], chunksize: int = ...
    ) -> Iterator[Result]: ...


class Tracker(Protocol):
    """A progress bar a step reports its per-file work to (the run's: ``Run.track``)."""

    def total(self, count: int) -> None:
        """Set how many files the work will take."""

    def advance(self, count: int) -> None:
        """Count ``count`` more files done."""


class CountingMap:
    """``map`` with each job's result counted on ``bar`` as it comes, the bar set to ``total``
    when it is known; many maps' work may share one bar, whose total is then set to the jobs
    counted once the work is done (``finish``)."""

    def __init__(self, map: Mapper, bar: Tracker | None, total: int | None = None) -> None:
        self.map, self.bar, self.done = map, bar, 0
        if bar is not None and total is not None:
            bar.total(total)

    def __call__(
        self, function: Callable[[Job], Result], jobs: Sequence[Job], chunksize: int = 16
    ) -> Iterator[Result]:
        for result in self.map(function, jobs, chunksize):
            self.done += 1
            if self.bar is not None:
                self.bar.advance(1)
            yield result

    def finish(self) -> None:
        if self.bar is not None:
            self.bar.total(self.done)


class LocalMap:
    """The ``Mapper`` of this machine: ``workers`` processes, those of ``pool`` when given (a
    step's, shared by all its maps: ``curation.chain.executors``), else a pool of its own for
    each call (``ordered_map``)."""

    def __init__(self, workers: int = 0, pool: ProcessPoolExecutor | None = None) -> None:
        self.workers = workers
        self.pool = pool

    def __call__(
        self, function: Callable[[Job], Result], jobs: Sequence[Job], chunksize: int = 16
    ) -> Iterator[Result]:
        if self.pool is None:
            return ordered_map(function, jobs, self.workers, chunksize)
        return pooled_map(self.pool, function, jobs, chunksize)


@contextmanager
def cancelling_pool(workers: int = 0) -> Iterator[ProcessPoolExecutor]:
    """``worker_pool(workers)`` for the ``with`` block, shut down on leaving it; left by an
    interrupt, an error or a caller that stopped reading, the jobs not yet started are
    cancelled first: what has not started never will."""
    with worker_pool(workers) as pool:
        try:
            yield pool
        except BaseException:
            pool.shutdown(cancel_futures=True)
            raise


def worker_pool(workers: int = 0) -> ProcessPoolExecutor:
    """A process pool (0: one worker per core) whose workers ignore SIGINT and exit with their
    parent; submit to it inside ``interrupts_held()``."""
    return ProcessPoolExecutor(
        max_workers=workers or None, initializer=start_worker, initargs=(os.getpid(),)
    )


@contextmanager
def interrupts_held() -> Iterator[None]:
    """A Ctrl-C that arrives inside is raised on leaving, not inside: a ``KeyboardInterrupt``
    raised within the pool's own start-up breaks the pool (a manager thread created but never
    started cannot be joined) or is swallowed by an at-fork hook (the build then finished
    as if nothing had happened). SIGINT is also blocked in this thread, so a worker forked
    here inherits it blocked until ``start_worker`` has ignored it."""
    if threading.current_thread() is not threading.main_thread():
        yield  # Python runs signal handlers in the main thread only
        return
    held: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda number, frame: held.append(number))
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        signal.signal(signal.SIGINT, previous if previous is not None else signal.SIG_DFL)
    if held:
        raise KeyboardInterrupt


def start_worker(parent: int) -> None:
    """Pool initializer: ignore SIGINT, then let it through again (ignored), run OpenMP and
    BLAS on one thread, and exit as soon as ``parent`` is no longer this process's parent."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    threadpool_limits(limits=1)  # the libraries loaded already
    # and those a job loads here after the fork (faiss, imported where a job needs it): OpenMP
    # and OpenBLAS read their thread count from the environment as they load
    os.environ.update({name: "1" for name in THREAD_VARIABLES})
    watch = threading.Thread(target=_exit_with_parent, args=(parent,), daemon=True)
    watch.start()


def _exit_with_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(PARENT_WATCH_SECONDS)
    os._exit(EXIT_ORPHANED)  # no cleanup: the results have no one to go to


class Beside(Generic[Result]):
    """``function(*args, **kwargs)`` on a daemon thread beside this one. An interrupted run
    never waits for it (an interrupted import can leave such a thread blocked for good); a
    run that goes on asks for its ``result()``."""

    def __init__(self, function: Callable[..., Result], *args: object, **kwargs: object) -> None:
        self._future: Future[Result] = Future()

        def run() -> None:
            try:
                self._future.set_result(function(*args, **kwargs))
            except BaseException as error:  # handed to whoever asks for the result
                self._future.set_exception(error)

        name = f"beside-{getattr(function, '__name__', 'work')}"
        threading.Thread(target=run, daemon=True, name=name).start()

    def result(self) -> Result:
        """Wait for the function; its return value, or its exception raised here."""
        return self._future.result()

    def wait(self) -> None:
        """Wait for the function to end, whatever it gives."""
        self._future.exception()
