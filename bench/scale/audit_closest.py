"""The audit's searches between splits by average hash and what it reads from them
(``curation.leaks.leakage``: ``split_searches``, then ``closest_pairs`` and
``nearest_to_train``) alone, on films of random 512-bit codes split 8:1:1: CPU seconds of
this process and the peak of Python's traced memory (tracemalloc: the pairs, not faiss's
buffers).

``python -m bench.scale.audit_closest --films 200000`` prints the figures as JSON.
"""

from __future__ import annotations

import argparse
import json
import time
import tracemalloc

import numpy as np

from curation.leaks.leakage import closest_pairs, nearest_to_train, order_splits, split_searches
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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.scale.audit_closest", description=__doc__
    )
    parser.add_argument("--films", type=int, default=200_000)
    films = random_films(parser.parse_args(argv).films)
    splits = order_splits({f.split for f in films})
    tracemalloc.start()
    started = time.process_time()
    searches = split_searches(films, splits)
    found = closest_pairs(films, splits, searches)
    nearest = nearest_to_train(searches)
    cpu_s = time.process_time() - started
    peak = tracemalloc.get_traced_memory()[1]
    figures = {
        "films": len(films),
        "cpu_s": round(cpu_s, 2),
        "traced_peak_mib": round(peak / 2**20, 1),
        "closest": [[p.distance, p.a, p.b] for p in found[:3]],
        "nearest_to_train_min": {split: distances[0] for split, distances in nearest.items()},
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
