"""Synthetic 512-bit codes for the pair-search benchmark, and the numpy brute-force baseline.

Real hashes of panoramic films are far from uniform: every film shows the same anatomy, so
unrelated films share many bits, and look-alike visits of one patient sit a few bits apart.
The codes copy that shape: one shared anatomy, a few dozen archetypes each 12 % away from it,
and each code an archetype with 10-22 % of its bits flipped, so that unrelated codes sit
about 100-200 bits apart with a thin tail towards the radius; one code in ten belongs to a
look-alike group of 2-4 codes a few to about 30 bits apart.
"""

from __future__ import annotations

import numpy as np

BITS = 512
ARCHETYPES = 32
CHUNK = 50_000


def correlated_codes(n: int, seed: int = 0) -> np.ndarray:
    """``n`` codes as an ``(n, 64)`` ``uint8`` matrix; the same seed gives the same codes."""
    rng = np.random.default_rng(seed)
    anatomy = rng.random(BITS) < 0.5
    archetypes = anatomy ^ (rng.random((ARCHETYPES, BITS)) < 0.12)
    out = np.empty((n, BITS // 8), dtype=np.uint8)
    for start in range(0, n, CHUNK):
        size = min(CHUNK, n - start)
        base = archetypes[rng.integers(0, ARCHETYPES, size)]
        flips = rng.random((size, BITS)) < rng.uniform(0.10, 0.22, (size, 1))
        out[start : start + size] = np.packbits(base ^ flips, axis=1)
    _plant_groups(rng, out)
    return out


def _plant_groups(rng: np.random.Generator, codes: np.ndarray) -> None:
    """Overwrite about a tenth of the codes with look-alike groups around a group leader."""
    n = len(codes)
    members = rng.permutation(n)[: n // 10]
    sizes = rng.integers(2, 5, len(members))
    cursor = 0
    for size in sizes:
        group = members[cursor : cursor + size]
        if len(group) < 2:
            break
        leader = np.unpackbits(codes[group[0]])
        rate = rng.uniform(0.004, 0.03)
        flips = rng.random((len(group) - 1, BITS)) < rate
        codes[group[1:]] = np.packbits(leader ^ flips, axis=1)
        cursor += size


def numpy_pairs(
    codes: np.ndarray, queries: np.ndarray, max_distance: int, block_bytes: int = 1 << 28
) -> np.ndarray:
    """Brute force: XOR and popcount of every query against every code, in bounded blocks.

    Rows ``[query_row, code_row, distance]`` at distance <= ``max_distance``."""
    words = codes.view(np.uint64)
    query_words = queries.view(np.uint64)
    block = max(1, block_bytes // max(1, words.nbytes))
    found = []
    for start in range(0, len(query_words), block):
        xor = query_words[start : start + block, None, :] ^ words[None, :, :]
        distances = np.bitwise_count(xor).sum(axis=2, dtype=np.int64)
        rows, cols = np.nonzero(distances <= max_distance)
        found.append(np.stack([rows + start, cols, distances[rows, cols]], axis=1))
    return np.concatenate(found) if found else np.zeros((0, 3), dtype=np.int64)


def distance_quantiles(codes: np.ndarray, samples: int = 20_000, seed: int = 1) -> dict:
    """Quantiles of the distance between random pairs, to show the shape of the codes."""
    rng = np.random.default_rng(seed)
    a, b = rng.integers(0, len(codes), (2, samples))
    keep = a != b
    distances = np.bitwise_count(codes[a[keep]] ^ codes[b[keep]]).sum(axis=1)
    return {f"p{q}": float(np.percentile(distances, q)) for q in (0.1, 1, 5, 50, 95)}
