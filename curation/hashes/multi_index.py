"""Exact Hamming range search over many codes: pigeonhole multi-index hashing on faiss lists.

Why: brute force (``IndexBinaryFlat``) compares every code with every other, minutes for the
pairs of 1,000,000 codes on two cores (bench/RESULTS.md, "Search"). Multi-index hashing
(Norouzi, Punjani and Fleet, "Fast exact search in Hamming space with multi-index hashing",
TPAMI 2014) compares a code only with codes that share most of one substring with it, and stays
exact by pigeonhole: split the bits into ``m = r // 2 + 1`` disjoint substrings; two codes at
most ``r`` bits apart cannot differ in two or more bits of every substring (that would be
``2m > r`` bits), so in at least one substring they differ in at most one bit. Each code is
filed, in each of ``m`` tables, under its substring; a query looks up its own substring and its
``b`` one-bit variants in each table; every code met is a candidate and its full distance decides.
That holds whichever bits make up the substrings, and bits left out of every substring still
count in the distance.

Which bits: hashes of panoramic films are correlated (the dark corners are the same bits in
nearly every film, neighbouring cells move together), so substrings of consecutive bits put
most films in a few buckets. The ``m * b`` bits with the most entropy among the indexed codes
are dealt to the tables in turn, back and forth, so that every table gets its share of the
informative bits.

What faiss does and what is ours: the buckets are the inverted lists of a faiss
``IndexBinaryIVF``, filled with ``add_core`` (list numbers given, no quantizer) and searched
with ``range_search_preassigned`` (each query's lists given), so the full distances run in
faiss's compiled loop over all cores. faiss's own multi-index (``IndexBinaryMultiHash``) keeps
each query's candidates in a hash set and its buckets in hash maps, and is slower on film
codes (``python -m bench.search.engine multihash 100000 0 films``; docs/margins.md, "Search").
Ours: the choice of bits, the lookup of a substring's list (``KeyRanks``), the queries sorted by
substring so that neighbouring queries read the same lists from cache, and each pair kept only
from the first table that can find it.
"""

from __future__ import annotations

import faiss
import numpy as np

KEY_BITS = 26  # longest substring: its table's ``KeyRanks`` hold 2**26 bits and 2**20 counts
MIN_KEY_BITS = 16  # shorter substrings fill their buckets too much to beat brute force
BLOCK = 65_536  # codes per chunk of bit unpacking and per faiss call
# Codes unpacked at a time to count each bit's share (2 MiB): the driver draws the tables of a
# search on the executor, and a block unpacked at once was 32 MiB there.
COUNTED_AT_ONCE = 4_096


def substrings(indexed: np.ndarray, max_distance: int) -> np.ndarray | None:
    """The bit positions of each table's substring, ``(m, b)``, or None when the radius
    leaves substrings shorter than ``MIN_KEY_BITS`` (or is negative) and brute force wins."""
    bits = indexed.shape[1] * 8
    if max_distance < 0:
        return None
    tables = max_distance // 2 + 1
    width = min(KEY_BITS, bits // tables)
    if width < MIN_KEY_BITS:
        return None
    ones = np.zeros(bits)
    for start in range(0, len(indexed), COUNTED_AT_ONCE):
        ones += np.unpackbits(indexed[start : start + COUNTED_AT_ONCE], axis=1).sum(axis=0)
    share = np.clip(ones / max(1, len(indexed)), 1e-12, 1 - 1e-12)
    entropy = -(share * np.log2(share) + (1 - share) * np.log2(1 - share))
    dealt = np.argsort(-entropy, kind="stable")[: tables * width].reshape(width, tables)
    dealt[1::2] = dealt[1::2, ::-1].copy()  # back and forth: no table gets every best bit
    return np.ascontiguousarray(dealt.T)


def _keys(codes: np.ndarray, tables: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
    """The substring of each code (of ``codes[rows]``, without copying them out) in each of
    ``tables`` (rows of bit positions), as ``uint32`` (table bit k is key bit k): only the bits
    a table names are read, so the keys of one table cost a fraction of unpacking every bit.
    ``BLOCK`` keys at a time, their bits a byte each: the candidates of a table late in a
    search are checked against every earlier table's key, and with the bits widened to
    ``int64`` a job at 64,000 codes held 13 MiB more for each earlier table."""
    byte_at = tables >> 3  # bit p: byte p // 8, most significant first
    shift = (7 - (tables & 7)).astype(np.uint8)
    count = len(codes) if rows is None else len(rows)
    keys = np.empty((count, len(tables)), dtype=np.uint32)
    step = max(1, BLOCK // max(1, len(tables)))
    for start in range(0, count, step):
        block = codes[start : start + step] if rows is None else codes[rows[start : start + step]]
        bits = np.zeros((len(block), len(tables), 32), dtype=np.uint8)
        bits[..., : tables.shape[1]] = (block[:, byte_at] >> shift) & 1
        packed = np.packbits(bits, axis=-1, bitorder="little")
        keys[start : start + step] = np.ascontiguousarray(packed).view("<u4")[..., 0]
    return keys


class KeyRanks:
    """A table's list number for any substring: the rank of its key among the keys present
    (list ``i`` is the ``i``-th present key), or -1 when no indexed code has it.

    Why a rank over a bitmap: a lookup array of ``2**b`` list numbers took 256 MiB at ``b`` = 26
    in every job that built a table, whatever its number of codes; a sorted array of the keys
    (``np.searchsorted``) holds as little but made the search a tenth slower at a million codes.
    The bitmap (``2**b`` bits) and each 64-bit word's count of the bits before it take 16 MiB
    at ``b`` = 26 and answer in a few vector operations. Hand-written: no declared library
    ranks a batch of keys (pyroaring ranks one value a call)."""

    def __init__(self, present: np.ndarray, width: int) -> None:
        """``present``: the keys present, sorted and unique; ``width``: bits a key."""
        self.words = np.zeros(max(1, (1 << width) >> 6), dtype=np.uint64)
        np.bitwise_or.at(self.words, present >> 6, np.left_shift(1, present & 63, dtype=np.uint64))
        self.before = np.zeros(len(self.words), dtype=np.int64)
        np.cumsum(np.bitwise_count(self.words[:-1]), dtype=np.int64, out=self.before[1:])

    def lists(self, keys: np.ndarray) -> np.ndarray:
        """The list number of each of ``keys`` (any shape, ``uint32``), ``int64``, -1 where none."""
        at = keys >> 6
        word = self.words[at]
        bit = np.left_shift(1, keys & 63, dtype=np.uint64)
        ranks = self.before[at] + np.bitwise_count(word & (bit - np.uint64(1)))
        return np.where(word & bit, ranks, -1)


def _table(
    indexed: np.ndarray, keys: np.ndarray, probes: int
) -> tuple[faiss.IndexBinaryIVF, np.ndarray]:
    """One table: a faiss IVF whose lists are the buckets of ``keys`` in key order, and the
    keys present, sorted (a ``KeyRanks`` of them names each key's list). Codes are added in
    key order, so that one bucket's codes sit together in memory."""
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    starts = np.diff(ordered, prepend=~ordered[:1]) != 0  # a bucket's first code
    present = ordered[starts]
    bits = indexed.shape[1] * 8
    # nlist >= nprobe: faiss reads each query's lists with a stride of min(nlist, nprobe)
    index = faiss.IndexBinaryIVF(faiss.IndexBinaryFlat(bits), bits, max(len(present), probes))
    index.is_trained = True  # the lists are given: the quantizer is never consulted
    index.nprobe = probes
    codes = np.ascontiguousarray(indexed[order])
    ids = order.astype(np.int64)
    lists = np.cumsum(starts, dtype=np.int64) - 1
    # add_core is public on IndexBinaryIVF (faiss/swigfaiss.py) but missing from the stub
    # faiss ships (faiss/__init__.pyi, 1.15), hence the one ignore.
    index.add_core(  # type: ignore[attr-defined]
        len(codes), faiss.swig_ptr(codes), faiss.swig_ptr(ids), faiss.swig_ptr(lists)
    )
    return index, present


def multi_index_pairs(
    indexed: np.ndarray,
    queries: np.ndarray,
    max_distance: int,
    tables: np.ndarray,
    *,
    same_codes: bool = False,
) -> np.ndarray:
    """Every ``[query_row, indexed_row, distance]`` at distance <= ``max_distance``, sorted by
    query row, then indexed row; ``tables`` from ``substrings``. ``same_codes`` (the queries
    are the indexed codes) keeps only pairs with ``query_row < indexed_row``."""
    found = [
        table_pairs(indexed, [(queries, same_codes)], max_distance, tables, table)[0]
        for table in range(len(tables))
    ]
    return sorted_rows(found)


def table_pairs(
    indexed: np.ndarray,
    query_sets: list[tuple[np.ndarray, bool]],
    max_distance: int,
    tables: np.ndarray,
    table: int,
) -> list[np.ndarray]:
    """The rows ``[query_row, indexed_row, distance]`` of each query set (its codes, and
    whether they are the indexed codes, as ``multi_index_pairs``'s ``same_codes``) that table
    ``table`` finds and no earlier table can: every table's rows together are the search's.
    One table a call, its index built once for every query set, so that the tables of one
    search can run as separate jobs."""
    width = tables.shape[1]
    variants = np.concatenate([[0], 1 << np.arange(width)]).astype(np.uint32)
    keys = _keys(indexed, tables[table : table + 1])[:, 0]
    index, present = _table(indexed, keys, len(variants))
    ranks = KeyRanks(present, width)
    found = []
    for queries, same_codes in query_sets:
        query_keys = keys if same_codes else _keys(queries, tables[table : table + 1])[:, 0]
        rows_found = []
        by_key = np.argsort(query_keys, kind="stable")
        for start in range(0, len(by_key), BLOCK):
            rows = by_key[start : start + BLOCK]
            lists = ranks.lists(query_keys[rows, None] ^ variants)
            limits, distances, labels = index.range_search_preassigned(
                np.ascontiguousarray(queries[rows]), max_distance + 1, lists, None
            )
            pairs = np.stack(
                [
                    np.repeat(rows, np.diff(limits.astype(np.int64))),
                    labels,
                    distances.astype(np.int64),  # whole numbers, given as float32
                ],
                axis=1,
            )
            if same_codes:  # each pair once
                pairs = pairs[pairs[:, 0] < pairs[:, 1]]
            if table:  # a pair within one bit in an earlier table's substring was found there
                earlier = _keys(queries, tables[:table], pairs[:, 0])
                earlier ^= _keys(indexed, tables[:table], pairs[:, 1])
                pairs = pairs[(np.bitwise_count(earlier) > 1).all(axis=1)]
            rows_found.append(pairs)
        found.append(sorted_rows(rows_found))
    return found


def sorted_rows(blocks: list[np.ndarray]) -> np.ndarray:
    """Blocks of ``[query_row, indexed_row, distance]`` rows as one ``int64`` array sorted by
    query row, then indexed row."""
    pairs = np.concatenate(blocks).astype(np.int64) if blocks else np.zeros((0, 3), np.int64)
    return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]
