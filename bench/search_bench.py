"""Exact pair search at scale: faiss (``curation.pairs``) against numpy brute force.

Run as a child (``python -m bench.search_bench ENGINE N QUERIES``) so that its peak RSS is its
own. ``QUERIES`` = 0 searches all pairs. Otherwise faiss runs one of the calls ``self_pairs``
makes (the last code tile searched by the first ``QUERIES`` codes) and numpy searches the
first ``QUERIES`` codes against all ``N``; the result carries the pairs compared and the
rate, from which the report extrapolates the whole search (and says so).
"""

from __future__ import annotations

import json
import sys
import time

import faiss
import numpy as np

from bench.codes import correlated_codes, distance_quantiles, numpy_pairs
from curation.pairs import CODE_TILE, range_pairs, self_pairs

RADIUS = 30
SEED = 11


def _faiss(codes: np.ndarray, queries: int) -> dict:
    start = time.perf_counter()
    if queries:  # one of the calls self_pairs makes: the last code tile, the first queries
        tile = codes[-CODE_TILE:]
        found = sum(len(b) for b in range_pairs(tile, codes[:queries], RADIUS))
        compared = queries * len(tile)
    else:
        found = len(self_pairs(codes, RADIUS))
        compared = len(codes) * (len(codes) + 1) // 2  # the triangle self_pairs searches
    return {"seconds": time.perf_counter() - start, "compared": compared, "found": found}


def _numpy(codes: np.ndarray, queries: int) -> dict:
    subset = codes[: queries or len(codes)]
    start = time.perf_counter()
    found = numpy_pairs(codes, subset, RADIUS)
    seconds = time.perf_counter() - start
    result = {"seconds": seconds, "compared": len(subset) * len(codes), "found": len(found)}
    if not queries:  # the whole matrix: check that faiss finds exactly the same pairs
        upper = found[found[:, 0] < found[:, 1]]
        upper = upper[np.lexsort((upper[:, 1], upper[:, 0]))]
        result["same_pairs_as_faiss"] = bool(np.array_equal(upper, self_pairs(codes, RADIUS)))
    return result


def main(engine: str, n: int, queries: int) -> dict:
    start = time.perf_counter()
    codes = correlated_codes(n, SEED)
    generated = time.perf_counter() - start
    result = (_faiss if engine == "faiss" else _numpy)(codes, queries)
    result["pairs_per_s"] = result["compared"] / result["seconds"]
    return {
        "engine": engine,
        "codes": n,
        "queries": queries or n,
        "generate_s": generated,
        "faiss_threads": faiss.omp_get_max_threads(),
        "distance_quantiles": distance_quantiles(codes),
        **result,
    }


if __name__ == "__main__":
    engine_arg, n_arg, queries_arg = sys.argv[1:4]
    if engine_arg not in ("faiss", "numpy"):
        raise SystemExit(f"engine must be faiss or numpy, got {engine_arg!r}")
    print(json.dumps(main(engine_arg, int(n_arg), int(queries_arg))))
