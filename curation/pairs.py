"""Exact Hamming range search over 512-bit codes (faiss ``IndexBinaryFlat``).

faiss compares every query with every indexed code (exact, no approximation) and returns
those strictly closer than the radius, so "distance <= d" is a search at radius ``d + 1``.
Queries go in blocks so that the result buffers stay bounded on large archives.
"""

from __future__ import annotations

from collections.abc import Iterator

import faiss
import numpy as np

from curation.hashing import HASH_BYTES

QUERY_BLOCK = 16_384


def as_codes(hashes: list[bytes]) -> np.ndarray:
    """Stack 64-byte hashes into the ``uint8`` matrix faiss expects."""
    if not hashes:
        return np.zeros((0, HASH_BYTES), dtype=np.uint8)
    return np.frombuffer(b"".join(hashes), dtype=np.uint8).reshape(len(hashes), HASH_BYTES)


def range_pairs(
    indexed: np.ndarray, queries: np.ndarray, max_distance: int
) -> Iterator[np.ndarray]:
    """Yield blocks of rows ``[query_row, indexed_row, distance]`` for every pair at distance
    <= ``max_distance`` (an ``int64`` array of shape ``(n, 3)`` per query block)."""
    index = faiss.IndexBinaryFlat(indexed.shape[1] * 8)
    if len(indexed):
        index.add(indexed)
    for start in range(0, len(queries), QUERY_BLOCK):
        block = queries[start : start + QUERY_BLOCK]
        limits, distances, labels = index.range_search(block, max_distance + 1)
        rows = np.repeat(np.arange(start, start + len(block)), np.diff(limits.astype(np.int64)))
        yield np.stack([rows, labels.astype(np.int64), distances.astype(np.int64)], axis=1)


def self_pairs(codes: np.ndarray, max_distance: int) -> np.ndarray:
    """Unordered pairs ``[i, j, distance]`` with ``i < j`` within one set of codes, sorted.

    Each query block is searched against the codes from its own first row on, never the
    ones before it (those pairs were found from the other side), which halves the work."""
    blocks = []
    for start in range(0, len(codes), QUERY_BLOCK):
        tail = codes[start:]
        for block in range_pairs(tail, tail[:QUERY_BLOCK], max_distance):
            blocks.append(block[block[:, 0] < block[:, 1]] + np.array([start, start, 0]))
    pairs = np.concatenate(blocks) if blocks else np.zeros((0, 3), dtype=np.int64)
    return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]
