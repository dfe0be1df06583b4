"""The audit's searches between splits by average hash and what it reads from them
(``curation.leaks.nearest.split_searches``, then ``closest_pairs`` and ``nearest_to_train``
of ``curation.leaks.leakage``) alone, on films of random 512-bit codes split 8:1:1, the
searches in ``--workers`` processes: CPU seconds of this process and its workers, wall
seconds, and the peak of this process's traced memory (tracemalloc: the pairs, not faiss's
buffers).

``python -m bench.scale.audit_closest --films 200000`` prints the figures as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

from curation.core.parallel import LocalMap
from curation.leaks.leakage import CLOSEST_PAIRS, closest_pairs, nearest_to_train, order_splits
from curation.leaks.nearest import split_searches
from curation.leaks.target import Film

SEED = 0


def random_films(count: int) -> list[Film]:
    """``count`` films of random codes: 80 % train, 10 % validation, the rest test."""
    codes = np.random.default_rng(SEED).integers(0, 256, (count, 64), dtype=np.uint8)
    train, validation = count * 8 // 10, count // 10
    split = (
        ["train"] * train + ["validation"] * validation + ["test"] * (count - train - validation)
    )
    return [Film(f"f{n:07d}", split[n], 0, n, "", None, codes[n].tobytes()) for n in range(count)]


def _cpu_seconds() -> float:
    """This process's CPU seconds and its finished workers'."""
    spent = os.times()
    return spent.user + spent.system + spent.children_user + spent.children_system


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.scale.audit_closest", description=__doc__
    )
    parser.add_argument("--films", type=int, default=200_000)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    films = random_films(args.films)
    splits = order_splits({f.split for f in films})
    tracemalloc.start()
    started, cpu_started = time.perf_counter(), _cpu_seconds()
    with tempfile.TemporaryDirectory() as folder:  # the splits' codes, for the searching jobs
        map = LocalMap(args.workers)
        searches = split_searches(films, splits, Path(folder), CLOSEST_PAIRS, map)
    found = closest_pairs(films, splits, searches)
    nearest = nearest_to_train(searches)
    cpu_s, wall_s = _cpu_seconds() - cpu_started, time.perf_counter() - started
    peak = tracemalloc.get_traced_memory()[1]
    figures = {
        "films": len(films),
        "workers": args.workers,
        "cpu_s": round(cpu_s, 2),
        "wall_s": round(wall_s, 2),
        "traced_peak_mib": round(peak / 2**20, 1),
        "closest": [[p.distance, p.a, p.b] for p in found[:3]],
        "nearest_to_train_min": {split: distances[0] for split, distances in nearest.items()},
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
