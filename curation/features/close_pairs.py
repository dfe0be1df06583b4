"""Which descriptors of different films are close: the search under the shortlist's votes
(``curation.features.shortlist``), for one table's keys at a time.

Every ORB descriptor that votes (``voting_rows``: a quarter) is filed under ``HASH_TABLES``
keys, each the first ``key_bits`` bits of its bytes from the table's first byte on
(locality-sensitive hashing: two close descriptors agree on some key with a high
probability). Descriptors of different films under one key, within ``MAX_HAMMING`` bits of
each other, are close; every pair of descriptors in a key is compared. A key of more than
``WINDOW`` descriptors is common, no evidence (a flat area, a border, a label on every
film), and is passed over, so a descriptor is compared with fewer than ``WINDOW`` others per
table. The keys widen with the number of voting descriptors in the set (``key_bits``: a
bit for each doubling), so that a key holds at most ``2 ** -KEY_LOAD_BITS`` descriptors on
average whatever the number of films: chance alone never crowds a key past ``WINDOW``
(which would pass over the copies it holds), and the work per descriptor stays the same
(docs/scale.md, "The content checks as the archive grows").
"""

from __future__ import annotations

import numpy as np

HASH_TABLES = 10  # keys per descriptor: from bytes 0, 3, ..., 27 of its 32
HASH_BYTES = 3  # a table's own bytes: its key's first 24 bits
KEY_BITS = 24  # the narrowest key: up to 2 ** (KEY_BITS - KEY_LOAD_BITS) voting descriptors
# A key's average load is at most 2 ** -KEY_LOAD_BITS descriptors: 24-bit keys up to
# 2,097,152 voting descriptors (4,800 films of 436 on average), which keeps the pool the gate's
# margins were measured on (4,680 films, 2,006,881) as it was (docs/scale.md).
KEY_LOAD_BITS = 3
WINDOW = 24  # keys of up to this many descriptors: every pair of them is compared
SAMPLE_MASK = 3  # descriptors whose last byte has these bits clear vote (a quarter)
MAX_HAMMING = 40  # of 256 bits: a vote only for a close descriptor
# Table 9's key starts at byte 27: five bytes to the descriptor's end.
WIDEST_KEY = 8 * (32 - (HASH_TABLES - 1) * HASH_BYTES)


def voting_rows(descriptors: np.ndarray) -> np.ndarray:
    """Which of a film's descriptors vote: those whose last byte has the ``SAMPLE_MASK``
    bits clear (a quarter; a copy's and its original's matching descriptors mostly agree).
    The voting rows of voting descriptors are all of them."""
    votes: np.ndarray = (descriptors[:, -1] & SAMPLE_MASK) == 0
    return votes


def key_bits(rows: int) -> int:
    """The bits of a key among ``rows`` voting descriptors: ``KEY_BITS``, and one more for
    each doubling beyond ``2 ** (KEY_BITS - KEY_LOAD_BITS)``."""
    bits = max(KEY_BITS, (max(1, rows) - 1).bit_length() + KEY_LOAD_BITS)
    if bits > WIDEST_KEY:
        raise ValueError(f"{rows} voting descriptors need {bits}-bit keys: {WIDEST_KEY} at most.")
    return bits


def table_keys(descriptors: np.ndarray, table: int, bits: int) -> np.ndarray:
    """Each descriptor's key in ``table``: its first ``bits`` bits from the table's first
    byte on, as an integer."""
    first = table * HASH_BYTES
    whole = -(-bits // 8)
    key = np.zeros(len(descriptors), np.uint64)
    for column in range(first, first + whole):
        key = (key << np.uint64(8)) | descriptors[:, column]
    return key >> np.uint64(8 * whole - bits)


def _by_key(key: np.ndarray, bits: int) -> np.ndarray:
    """The rows in the order of their keys, then of their rows."""
    count = len(key)
    row_bits = max(1, (count - 1).bit_length())
    if bits + row_bits > 64:
        ordered: np.ndarray = np.argsort(key, kind="stable")
        return ordered
    # Key and row in one word: one plain sort orders by key, then by row, which is a stable
    # argsort's order in two thirds of its time.
    packed = np.sort((key << np.uint64(row_bits)) | np.arange(count, dtype=np.uint64))
    return (packed & np.uint64((1 << row_bits) - 1)).astype(np.intp)


def close_pairs(
    descriptors: np.ndarray, owner: np.ndarray, rows: int, table: int
) -> tuple[np.ndarray, np.ndarray]:
    """Descriptor rows (p, q), ``p < q``, of different films (``owner``: each row's film,
    rows in film order) that share ``table``'s key among ``rows`` voting descriptors
    (``key_bits``), in a key of up to ``WINDOW``, and within ``MAX_HAMMING`` bits.
    ``descriptors`` may be any part of a set of ``rows`` that holds all of each of its keys'
    descriptors, in the set's order: the pairs are then the set's."""
    bits = key_bits(rows)
    key = table_keys(descriptors, table, bits)
    order = _by_key(key, bits)
    ordered = key[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    sizes = np.diff(np.r_[starts, len(ordered)])
    usable = (sizes >= 2) & (sizes <= WINDOW)
    kept = order[np.repeat(usable, sizes)]  # each usable key's rows together, ascending
    bucket = np.repeat(np.arange(int(usable.sum())), sizes[usable])
    # The kept rows' films, and their 32 bytes as four 64-bit words, each word a row, in
    # the keys' order: a pair's two rows are then a few places apart, and reading them
    # stays within the processor's caches (gathered from the whole set, they do not).
    kept_owner = owner[kept]
    kept_words = np.ascontiguousarray(np.ascontiguousarray(descriptors[kept]).view("<u8").T)
    firsts: list[np.ndarray] = []
    seconds: list[np.ndarray] = []
    for offset in range(1, WINDOW):  # every pair of a key: its rows ``offset`` places apart
        at = np.flatnonzero(bucket[offset:] == bucket[:-offset])
        if not len(at):
            break
        at = at[kept_owner[at] != kept_owner[at + offset]]
        distance = np.zeros(len(at), np.int64)
        for word in kept_words:  # ``np.bitwise_count`` a word at a time: no (pairs x 4) copy
            distance += np.bitwise_count(word[at] ^ word[at + offset])
        close = at[distance <= MAX_HAMMING]
        firsts.append(kept[close])
        seconds.append(kept[close + offset])
    if not firsts:
        empty = np.zeros(0, np.intp)
        return empty, empty
    return np.concatenate(firsts), np.concatenate(seconds)  # p < q: a key's rows ascend
