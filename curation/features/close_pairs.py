"""Which descriptors of different films are close: the search under the shortlist's votes
(``curation.features.shortlist``), for one table's keys at a time.

Every ORB descriptor that votes (``voting_rows``: a quarter) is filed under ``HASH_TABLES``
keys, each ``HASH_BYTES`` of its bytes (locality-sensitive hashing: two close descriptors
agree on some key with a high probability). Descriptors of different films under one key,
within ``MAX_HAMMING`` bits of each other, are close. Every pair of descriptors in a key of up
to ``WINDOW`` is compared; in a wider key, the descriptors are taken in the order of their
bytes (then of their rows), and each is compared with the ``NEAREST`` after it: close
descriptors sit next to each other in that order, and the work per descriptor and table stays
below ``WINDOW`` comparisons, whatever the number of films. A key is common, no evidence (a
flat area, a border, a label on every film), when it holds more descriptors than
``COMMON_SHARE`` of the number of films (and more than ``WINDOW``), and is passed over: the
bound grows with the archive, so a key that is evidence among 1,000 films is still evidence
among 100,000 (a fixed bound passes over ever more keys, and the copies they vote for, as
films are added: docs/scale.md).
"""

from __future__ import annotations

import math

import numpy as np

HASH_TABLES = 10  # keys per descriptor: 10 x 3 of its 32 bytes
HASH_BYTES = 3  # 24-bit keys
WINDOW = 24  # keys of up to this many descriptors: every pair of them is compared
NEAREST = 3  # in a wider key, each descriptor is compared with this many after it
# A key with more descriptors than this share of the films is common: 24 up to 4,800 films,
# which keeps the pool the gate's margins were measured on as it was (docs/scale.md).
COMMON_SHARE = 0.005
SAMPLE_MASK = 3  # descriptors whose last byte has these bits clear vote (a quarter)
MAX_HAMMING = 40  # of 256 bits: a vote only for a close descriptor


def voting_rows(descriptors: np.ndarray) -> np.ndarray:
    """Which of a film's descriptors vote: those whose last byte has the ``SAMPLE_MASK``
    bits clear (a quarter; a copy's and its original's matching descriptors mostly agree).
    The voting rows of voting descriptors are all of them."""
    votes: np.ndarray = (descriptors[:, -1] & SAMPLE_MASK) == 0
    return votes


def common_bound(films: int) -> int:
    """Descriptors under one key beyond which the key is common among ``films`` films."""
    return max(WINDOW, math.ceil(COMMON_SHARE * films))


def _neighbours(
    rows: np.ndarray,
    buckets: np.ndarray,
    offsets: range,
    firsts: list[np.ndarray],
    seconds: list[np.ndarray],
) -> None:
    """Append the pairs of ``rows`` ``offset`` places apart within one key, for each of
    ``offsets`` (``buckets``: each row's key; a key's rows are together)."""
    for offset in offsets:
        if offset >= len(rows):
            return
        same = buckets[offset:] == buckets[:-offset]
        if not same.any():
            return
        firsts.append(rows[:-offset][same])
        seconds.append(rows[offset:][same])


def close_pairs(
    descriptors: np.ndarray, owner: np.ndarray, films: int, table: int
) -> tuple[np.ndarray, np.ndarray]:
    """Descriptor rows (p, q), ``p < q``, of different films (``owner``: each row's film,
    rows in film order) that share ``table``'s key, in a key that is not common among
    ``films`` films (any two in a key of up to ``WINDOW``; at most ``NEAREST`` places apart
    in the key's order, descriptor bytes then row, in a wider key), and within
    ``MAX_HAMMING`` bits. ``descriptors`` may be any part of a set that holds all of each
    of its keys' descriptors, in the set's order: the pairs are then the set's."""
    # A descriptor's 32 bytes as four 64-bit words, each word a row: bit counts by
    # ``np.bitwise_count`` a word at a time, 10x faster than over the (pairs x 4) array.
    # Big-endian, so the words in turn order the descriptors as their bytes do.
    words = np.ascontiguousarray(descriptors.view(">u8").T.astype(np.uint64))
    count = len(descriptors)
    row_bits = max(1, (count - 1).bit_length())  # a 24-bit key leaves 40 bits: 10^12 rows
    key = np.zeros(count, np.uint64)
    for column in range(table * HASH_BYTES, (table + 1) * HASH_BYTES):
        key = (key << np.uint64(8)) | descriptors[:, column]
    # Key and row in one word: one plain sort orders by key, then by row, which is a stable
    # argsort's order in two thirds of its time, and puts each key's rows in ascending order.
    packed = np.sort((key << np.uint64(row_bits)) | np.arange(count, dtype=np.uint64))
    order = (packed & np.uint64((1 << row_bits) - 1)).astype(np.intp)
    ordered = packed >> np.uint64(row_bits)
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    sizes = np.diff(np.r_[starts, len(ordered)])
    usable = (sizes >= 2) & (sizes <= common_bound(films))
    rows = np.repeat(usable, sizes)  # rows of ``order`` in a usable key
    bucket = np.repeat(np.arange(len(starts)), sizes)
    kept = order[rows]
    kept_bucket = bucket[rows]
    wide = np.repeat(sizes[usable] > WINDOW, sizes[usable])  # keys whose order matters
    if wide.any():
        # A wide key's rows in the order of their bytes (then rows): they stay in the same
        # places of ``kept``, which holds each key's rows together.
        members = kept[wide]
        by_bytes = np.lexsort((members, *words[::-1, members], kept_bucket[wide]))
        kept[wide] = members[by_bytes]
    firsts: list[np.ndarray] = []
    seconds: list[np.ndarray] = []
    # Every key's nearest ``NEAREST`` rows after each row, then the further ones of the
    # narrow keys alone (removing whole keys keeps each remaining key's rows together).
    _neighbours(kept, kept_bucket, range(1, NEAREST + 1), firsts, seconds)
    narrow = ~wide
    _neighbours(kept[narrow], kept_bucket[narrow], range(NEAREST + 1, WINDOW), firsts, seconds)
    if not firsts:
        empty = np.zeros(0, np.intp)
        return empty, empty
    p, q = np.concatenate(firsts), np.concatenate(seconds)
    p, q = np.minimum(p, q), np.maximum(p, q)
    apart = owner[p] != owner[q]
    p, q = p[apart], q[apart]
    distance = np.zeros(len(p), np.int64)
    for word in words:  # one word of every pair at a time: no (pairs x 4) copies to gather
        distance += np.bitwise_count(word[p] ^ word[q])
    close = distance <= MAX_HAMMING
    return p[close], q[close]
