"""Exact Hamming range search over codes (512-bit hashes, or any whole number of bytes).

Two exact engines, one answer: faiss brute force (``IndexBinaryFlat``, every query against
every code) for small searches, and pigeonhole multi-index hashing (``curation.hashes.multi_index``)
once a search compares more than ``INDEX_PAIRS`` pairs: on the bench corpus's codes it is
slower below ~20,000 codes and about 30x faster at 1,000,000 (docs/margins.md, "Search").
Both give the same rows in the same order (query row, then indexed row), so which one ran
never shows.

faiss returns pairs strictly closer than the radius, so "distance <= d" is a search at radius
``d + 1``. Queries go in blocks so that the result buffers stay bounded on large archives.
"""

from __future__ import annotations

from collections.abc import Iterator

import faiss
import numpy as np

from curation.hashes.hashing import HASH_BYTES
from curation.hashes.multi_index import multi_index_pairs, substrings

QUERY_BLOCK = 16_384
CODE_TILE = 32_768  # 2 MiB of codes
INDEX_PAIRS = 4 * 10**8  # searches comparing more pairs than this use the multi-index


def as_codes(hashes: list[bytes]) -> np.ndarray:
    """Stack 64-byte hashes into the ``uint8`` matrix faiss expects."""
    if not hashes:
        return np.zeros((0, HASH_BYTES), dtype=np.uint8)
    return np.frombuffer(b"".join(hashes), dtype=np.uint8).reshape(len(hashes), HASH_BYTES)


def _tables(indexed: np.ndarray, queries: np.ndarray, max_distance: int) -> np.ndarray | None:
    """The multi-index's substrings when it should run, else None (brute force)."""
    if len(indexed) * len(queries) <= INDEX_PAIRS:
        return None
    return substrings(indexed, max_distance)


def range_pairs(
    indexed: np.ndarray, queries: np.ndarray, max_distance: int
) -> Iterator[np.ndarray]:
    """Yield blocks of rows ``[query_row, indexed_row, distance]`` for every pair at distance
    <= ``max_distance`` (an ``int64`` array of shape ``(n, 3)`` per block), ordered by query
    row, then indexed row."""
    tables = _tables(indexed, queries, max_distance)
    if tables is not None:
        pairs = multi_index_pairs(indexed, queries, max_distance, tables)
        bounds = np.searchsorted(pairs[:, 0], np.arange(0, len(queries), QUERY_BLOCK))
        yield from np.split(pairs, bounds[1:])
        return
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

    Brute force indexes the codes one tile at a time, and searches each tile only with the
    codes up to its end: pairs with ``i < j`` never need a later query, which halves the work,
    and a tile small enough to stay in cache keeps faiss from streaming a large index from
    memory for every query (about 2-3x faster at a million codes on this machine)."""
    tables = _tables(codes, codes, max_distance)
    if tables is not None:
        return multi_index_pairs(codes, codes, max_distance, tables, same_codes=True)
    blocks = []
    for tile_start in range(0, len(codes), CODE_TILE):
        tile = codes[tile_start : tile_start + CODE_TILE]
        for block in range_pairs(tile, codes[: tile_start + len(tile)], max_distance):
            block[:, 1] += tile_start
            blocks.append(block[block[:, 0] < block[:, 1]])
    pairs = np.concatenate(blocks) if blocks else np.zeros((0, 3), dtype=np.int64)
    return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]
