"""Exact pair search at scale: ``curation.hashes.pairs`` against brute force, on three kinds of
codes.

Run as a child (``python -m bench.search.engine ENGINE N QUERIES [KIND]``) so that its peak RSS
is its own. Engines:

- ``faiss``: ``self_pairs`` as the chain runs it (the multi-index above
  ``curation.hashes.pairs.INDEX_PAIRS`` compared pairs, faiss brute force below);
- ``flat``: ``self_pairs`` forced to faiss brute force (``IndexBinaryFlat``), the search
  before the multi-index;
- ``numpy``: XOR and popcount brute force (``bench.search.codes.numpy_pairs``);
- ``multihash``: faiss's own multi-index, ``IndexBinaryMultiHash`` with 16 tables of 32 bits
  and one flipped bit (exact up to radius 31), on all pairs: why ``curation.hashes.multi_index``
  files its buckets in faiss IVF lists instead.

``faiss`` and ``flat`` report the sha256 of the pairs they found (rows and order), so two runs
on the same codes show whether both engines found exactly the same pairs.

Kinds of codes: ``synthetic`` (``bench.search.codes.correlated_codes``, the default), ``random``
(uniform bits) and ``films`` (the bench corpus's film hashes, perturbed:
``bench.search.film_codes``). ``QUERIES`` = 0 searches all pairs. Otherwise brute force runs one of
the calls its tiled ``self_pairs`` makes (the last code tile searched by the first ``QUERIES``
codes) and numpy searches the first ``QUERIES`` codes against all ``N``; the result carries
the pairs compared and the rate, from which the report extrapolates brute force's whole search
(and says so). The multi-index is not extrapolated: its cost is not proportional to pairs.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections.abc import Callable

import faiss
import numpy as np

from bench.search.codes import correlated_codes, distance_quantiles, numpy_pairs
from curation.hashes import pairs
from curation.hashes.pairs import CODE_TILE, range_pairs, self_pairs

RADIUS = 30
SEED = 11
BRUTE_FORCE = 10**30  # INDEX_PAIRS above any search: faiss brute force runs


def codes_of(kind: str, n: int) -> np.ndarray:
    """``n`` codes of one kind (see the module docstring); the same call gives the same codes."""
    if kind == "synthetic":
        return correlated_codes(n, SEED)
    if kind == "random":
        return np.random.default_rng(SEED).integers(0, 256, (n, 64), dtype=np.uint8)
    if kind == "films":
        from bench.common.corpus import corpus_zip  # builds the corpus when missing (minutes)
        from bench.search.film_codes import film_codes, perturbed_codes

        return perturbed_codes(film_codes(corpus_zip(4000)), n, SEED)
    raise SystemExit(f"kind must be synthetic, random or films, got {kind!r}")


def _timed(search: Callable[[], int]) -> tuple[float, int]:
    start = time.perf_counter()
    found = search()
    return time.perf_counter() - start, found


def _faiss(codes: np.ndarray, queries: int, brute_force: bool) -> dict:
    if queries:  # one of the calls brute force makes: the last code tile, the first queries
        pairs.INDEX_PAIRS = BRUTE_FORCE
        tile = codes[-CODE_TILE:]
        seconds, found = _timed(
            lambda: sum(len(b) for b in range_pairs(tile, codes[:queries], RADIUS))
        )
        return {"seconds": seconds, "compared": queries * len(tile), "found": found}
    if brute_force:
        pairs.INDEX_PAIRS = BRUTE_FORCE
    start = time.perf_counter()
    found = self_pairs(codes, RADIUS)
    seconds = time.perf_counter() - start
    return {
        "seconds": seconds,
        "compared": len(codes) * (len(codes) + 1) // 2,  # the triangle brute force searches
        "found": len(found),
        "pairs_sha256": hashlib.sha256(np.ascontiguousarray(found, dtype="<i8")).hexdigest(),
    }


def _multihash(codes: np.ndarray) -> dict:
    start = time.perf_counter()
    index = faiss.IndexBinaryMultiHash(codes.shape[1] * 8, 16, 32)
    index.nflip = 1
    index.add(codes)
    limits, _, labels = index.range_search(codes, RADIUS + 1)
    rows = np.repeat(np.arange(len(codes)), np.diff(limits.astype(np.int64)))
    found = int((rows < labels).sum())
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "compared": len(codes) * (len(codes) + 1) // 2, "found": found}


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


def main(engine: str, n: int, queries: int, kind: str = "synthetic") -> dict:
    start = time.perf_counter()
    codes = codes_of(kind, n)
    generated = time.perf_counter() - start
    if engine == "numpy":
        result = _numpy(codes, queries)
    elif engine == "multihash":
        result = _multihash(codes)
    else:
        result = _faiss(codes, queries, brute_force=engine == "flat")
    result["pairs_per_s"] = result["compared"] / result["seconds"]
    return {
        "engine": engine,
        "kind": kind,
        "codes": n,
        "queries": queries or n,
        "generate_s": generated,
        "faiss_threads": faiss.omp_get_max_threads(),
        "distance_quantiles": distance_quantiles(codes),
        **result,
    }


if __name__ == "__main__":
    engine_arg, n_arg, queries_arg = sys.argv[1:4]
    if engine_arg not in ("faiss", "flat", "numpy", "multihash"):
        raise SystemExit(f"engine must be faiss, flat, numpy or multihash, got {engine_arg!r}")
    kind_arg = sys.argv[4] if len(sys.argv) > 4 else "synthetic"
    print(json.dumps(main(engine_arg, int(n_arg), int(queries_arg), kind_arg)))
