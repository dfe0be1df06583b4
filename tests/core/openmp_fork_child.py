"""The child of ``tests/core/test_parallel_openmp.py``, in a process of its own so that the
test process's OpenMP stays untouched:

    python -m tests.core.openmp_fork_child

runs faiss on two OpenMP threads here (a k-means), then ``ordered_map`` of a faiss search
that would use two OpenMP threads over two forked workers, and prints the searches'
checksums from the workers and from this process as JSON.
"""

from __future__ import annotations

import json

import faiss
import numpy as np

from curation.core.parallel import ordered_map

SEEDS = [1, 2, 3, 4]


def search_checksum(seed: int) -> int:
    """The sum of a faiss exact search's nearest neighbours, big enough to run in parallel."""
    vectors = np.random.default_rng(seed).random((3000, 128), dtype=np.float32)
    index = faiss.IndexFlatL2(128)
    index.add(vectors)
    return int(index.search(vectors[:2000], 2)[1].sum())


def main() -> None:
    faiss.omp_set_num_threads(2)  # a team of two even on a one-core machine
    training = np.random.default_rng(0).random((20000, 128), dtype=np.float32)
    faiss.Kmeans(128, 64, niter=5, seed=1, verbose=False).train(training)
    forked = list(ordered_map(search_checksum, SEEDS, workers=2, chunksize=1))
    here = [search_checksum(seed) for seed in SEEDS]
    print(json.dumps({"forked": forked, "here": here}))


if __name__ == "__main__":
    main()
