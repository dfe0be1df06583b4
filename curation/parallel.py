"""Per-file work over local worker processes, results in job order.

The index, hash and pixel-comparison steps each have a pure function of one file (or one
pair of files); this is the one place that decides how such work runs on this machine. The
Ray executor (``curation.executors``) is the other way to run the hash step.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import TypeVar

Job = TypeVar("Job")
Result = TypeVar("Result")


def ordered_map(
    function: Callable[[Job], Result], jobs: Sequence[Job], workers: int = 0, chunksize: int = 16
) -> Iterator[Result]:
    """``map(function, jobs)`` over ``workers`` processes (0: one per core), in job order; in
    this process when there is at most one job or ``workers == 1``."""
    if workers == 1 or len(jobs) <= 1:
        yield from map(function, jobs)
        return
    with ProcessPoolExecutor(max_workers=workers or None) as pool:
        yield from pool.map(function, jobs, chunksize=chunksize)
