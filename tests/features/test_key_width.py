"""The shortlist's keys widen with the number of voting descriptors
(``curation.features.close_pairs.key_bits``), so that neither its work per descriptor nor
its recall depends on the size of the archive.

A set of hundreds of millions of descriptors is too large for a test, but the search's
result on a part of a set that holds all of each of its keys' descriptors is the set's: the
part here is the descriptors of a uniformly drawn set whose first table's key starts with
one or two zero bytes (one in 256 or 65,536 of the set), told the size of the set."""

from __future__ import annotations

import numpy as np
import pytest

from curation.features import close_pairs
from curation.features.close_pairs import KEY_BITS, KEY_LOAD_BITS
from curation.features.close_pairs import close_pairs as search


def _part(rng: np.random.Generator, rows: int, prefix_bytes: int) -> np.ndarray:
    """The voting descriptors of a uniformly drawn set of ``rows`` whose first table's key
    starts with ``prefix_bytes`` zero bytes."""
    drawn = rng.integers(0, 256, (rows >> (8 * prefix_bytes), 32), dtype=np.uint8)
    drawn[:, :prefix_bytes] = 0
    drawn[:, -1] &= ~np.uint8(close_pairs.SAMPLE_MASK)
    return drawn


def _compared(monkeypatch: pytest.MonkeyPatch, descriptors: np.ndarray, rows: int) -> int:
    """Pairs of descriptors whose distance the first table's search computes, each a film
    of its own (one bit count per 64-bit word of a pair: four a pair)."""
    counted = [0]
    bit_count = np.bitwise_count

    def counting(values: np.ndarray) -> np.ndarray:
        counted[0] += len(values)
        return bit_count(values)

    monkeypatch.setattr(np, "bitwise_count", counting)
    search(descriptors, np.arange(len(descriptors)), rows, 0)
    monkeypatch.setattr(np, "bitwise_count", bit_count)
    return counted[0] // 4


def test_the_work_per_descriptor_is_the_same_among_sets_of_any_size(monkeypatch):
    """Random descriptors, among 4 million and 64 million (about 10,000 and 150,000 films'
    worth): a key holds 1/8 of a descriptor on average, whatever the size, so a descriptor
    is compared with about 1/16 of another per table at both sizes (with 24-bit keys at every
    size, sixteen times as many among the larger set: 4 keys' worth of companions)."""
    rng = np.random.default_rng(8)
    for rows in (2**22, 2**26):
        part = _part(rng, rows, 1)
        per_descriptor = _compared(monkeypatch, part, rows) / len(part)
        expected = 2.0 ** -(KEY_LOAD_BITS + 1)  # half the pairs of a key of load 1/8
        assert 0.8 * expected < per_descriptor < 1.25 * expected, (rows, per_descriptor)


def test_keys_widen_past_two_million_descriptors():
    """Two close descriptors that differ in the 25th bit of the first table's key, and in
    every other table's: 24-bit keys join them among 2,097,152 voting descriptors (so every
    set up to there, such as the 4,680 films the shortlist's gate was measured on, is
    searched as with fixed 24-bit keys), 25-bit keys part them among one more."""
    rng = np.random.default_rng(9)
    pair = _part(rng, 2, 0)
    pair[1] = pair[0]
    pair[1, 3] ^= 0x80  # the 25th bit of table 0's key
    for table in range(1, close_pairs.HASH_TABLES):
        pair[1, table * close_pairs.HASH_BYTES] ^= 0x01
    owner = np.arange(2)
    narrowest = 2 ** (KEY_BITS - KEY_LOAD_BITS)
    assert narrowest == 2_097_152
    assert [len(p) for p in search(pair, owner, narrowest, 0)] == [1, 1]
    assert [len(p) for p in search(pair, owner, narrowest + 1, 0)] == [0, 0]


@pytest.mark.parametrize("rows", [2**22, 2**26, 2**30, 2**34])
def test_close_descriptors_are_found_among_sets_of_any_size(rows):
    """Fifty pairs of close descriptors (8 bits apart, past their first table's key at any
    width) among random ones, from 4 million to 17 billion (about 40 million films): each
    pair found, and nothing else. With 24-bit keys, a key would hold 64 descriptors among a
    billion, more than ``WINDOW``, and be passed over with the pairs in it."""
    rng = np.random.default_rng(10)
    part = _part(rng, rows, 2)
    planted = _part(rng, 50 << 16, 2)
    near = planted.copy()
    near[:, 20] ^= 0xFF  # bits 160-167: past every key of the first table
    descriptors = np.concatenate([part, planted, near])
    first = len(part)
    p, q = search(descriptors, np.arange(len(descriptors)), rows, 0)
    found = sorted(zip(p.tolist(), q.tolist(), strict=True))
    assert found == [(first + n, first + 50 + n) for n in range(50)]


def test_keys_too_wide_to_share_a_word_with_their_rows_sort_the_same():
    """The search orders rows by key, then row: by one sort of key and row packed in a 64-bit
    word, or (a key and a row number too wide for one word, beyond millions of films per
    shard) by a stable sort of the keys; the two orders are one."""
    rng = np.random.default_rng(12)
    key = rng.integers(0, 1 << 12, 5000).astype(np.uint64)  # many repeated keys
    expected = np.lexsort((np.arange(len(key)), key))
    packed = close_pairs._by_key(key, close_pairs.WIDEST_KEY)
    too_wide = close_pairs._by_key(key, 64 - 12)  # 5,000 rows take 13 bits
    assert (packed == expected).all() and (too_wide == expected).all()
