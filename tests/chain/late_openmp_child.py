"""The child of ``tests/chain/test_local_pool.py``'s thread test, in a process of its own so
that faiss (and its OpenMP) is not loaded yet when the executor's pool forks its workers:

    python -m tests.chain.late_openmp_child

prints, as JSON, the OpenMP threads faiss has in each worker that loaded it after the fork.
"""

from __future__ import annotations

import json
import sys

from curation.chain.executors import LocalExecutor


def openmp_threads(_: int) -> int:
    """Load faiss here, in the worker, and say how many OpenMP threads it would run."""
    import faiss

    return int(faiss.omp_get_max_threads())


def main() -> None:
    if "faiss" in sys.modules:
        raise SystemExit("faiss was loaded before the pool forked: nothing would be tested")
    with LocalExecutor(workers=2).mapping("late") as map:
        threads = list(map(openmp_threads, [0, 1, 2, 3], chunksize=1))
    print(json.dumps(threads))


if __name__ == "__main__":
    main()
