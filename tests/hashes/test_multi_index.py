"""The multi-index search gives exactly brute force's rows, in brute force's order.

``INDEX_PAIRS`` decides which engine runs; each test runs both on the same codes (the
multi-index forced with ``INDEX_PAIRS = -1``, brute force with a huge one) and compares them
with a numpy reference."""

import tracemalloc

import numpy as np
import pytest

from curation.hashes import multi_index, pairs
from curation.hashes.multi_index import multi_index_pairs, substrings

EVERY = -1  # INDEX_PAIRS below any search: the multi-index always runs
NEVER = 10**18  # brute force always runs


def _reference(indexed: np.ndarray, queries: np.ndarray, max_distance: int) -> np.ndarray:
    """numpy brute force: rows ``[query, indexed, distance]`` in row-major order."""
    bits_q = np.unpackbits(queries, axis=1).astype(np.int16)
    bits_i = np.unpackbits(indexed, axis=1).astype(np.int16)
    distance = (bits_q[:, None, :] != bits_i[None, :, :]).sum(-1)
    q, t = np.nonzero(distance <= max_distance)
    return np.stack([q, t, distance[q, t]], axis=1).astype(np.int64).reshape(-1, 3)


def _film_like(n: int, seed: int) -> np.ndarray:
    """Codes shaped like film hashes: a fifth of the bits the same in every code, a few
    centres, and copies a few bits from each other, so many pairs sit near the radius."""
    rng = np.random.default_rng(seed)
    constant = rng.random(512) < 0.2
    centres = rng.integers(0, 2, (6, 512), dtype=np.uint8)
    bits = centres[rng.integers(0, 6, n)] ^ (rng.random((n, 512)) < rng.uniform(0, 0.08, (n, 1)))
    bits[:, constant] = 1
    return np.packbits(bits.astype(np.uint8), axis=1)


def _both(monkeypatch, indexed, queries, max_distance) -> tuple[np.ndarray, np.ndarray]:
    found = {}
    for name, limit in (("index", EVERY), ("brute", NEVER)):
        monkeypatch.setattr(pairs, "INDEX_PAIRS", limit)
        blocks = list(pairs.range_pairs(indexed, queries, max_distance))
        found[name] = np.concatenate(blocks) if blocks else np.zeros((0, 3), np.int64)
    return found["index"], found["brute"]


@pytest.mark.parametrize("max_distance", [0, 1, 7, 30, 32, 60])
@pytest.mark.parametrize("kind", ["random", "film_like"])
def test_range_pairs_equal_brute_force(monkeypatch, kind, max_distance):
    rng = np.random.default_rng(max_distance)
    codes = (
        rng.integers(0, 256, (400, 64), dtype=np.uint8)
        if kind == "random"
        else _film_like(400, max_distance)
    )
    codes[50] = codes[7]  # duplicates
    indexed, queries = codes[:300], codes[100:]
    index, brute = _both(monkeypatch, indexed, queries, max_distance)
    assert np.array_equal(index, brute)
    assert np.array_equal(brute, _reference(indexed, queries, max_distance))
    if kind == "film_like" and max_distance >= 30:
        assert (brute[:, 2] == max_distance).any(), "the codes must exercise the boundary"


@pytest.mark.parametrize("max_distance", [0, 30, 32])
def test_self_pairs_equal_brute_force(monkeypatch, max_distance):
    codes = _film_like(700, seed=3)
    codes[600:] = codes[:100]  # each of these a duplicate of an earlier code
    monkeypatch.setattr(pairs, "INDEX_PAIRS", EVERY)
    index = pairs.self_pairs(codes, max_distance)
    monkeypatch.setattr(pairs, "INDEX_PAIRS", NEVER)
    brute = pairs.self_pairs(codes, max_distance)
    reference = _reference(codes, codes, max_distance)
    assert np.array_equal(index, brute)
    assert np.array_equal(brute, reference[reference[:, 0] < reference[:, 1]])
    assert len(brute) >= 100


def test_blocks_and_chunks_do_not_change_the_answer(monkeypatch):
    codes = _film_like(500, seed=9)
    expected = _reference(codes[:450], codes[40:], 30)
    monkeypatch.setattr(multi_index, "BLOCK", 37)
    monkeypatch.setattr(pairs, "QUERY_BLOCK", 50)
    index, brute = _both(monkeypatch, codes[:450], codes[40:], 30)
    assert np.array_equal(index, expected)
    assert np.array_equal(brute, expected)


def test_the_tables_are_drawn_from_a_fixed_chunk_of_codes_at_a_time(monkeypatch):
    """``substrings`` counts each bit's share a chunk of codes at a time: the driver draws the
    tables of every large search on the executor, and 65,536 codes unpacked at once held 32 MiB
    there. The chunk changes no table."""
    peaks = []
    for count in (8_192, 32_768):
        codes = _film_like(count, seed=2)
        tracemalloc.start()
        try:
            tables = substrings(codes, 30)
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
    assert peaks[1] < 1.25 * peaks[0]  # unpacked at once: four times the codes, four times
    monkeypatch.setattr(multi_index, "COUNTED_AT_ONCE", 37)
    chunked = substrings(codes, 30)
    assert tables is not None and chunked is not None
    assert np.array_equal(chunked, tables)


def test_edge_sizes(monkeypatch):
    one = _film_like(1, seed=1)
    empty = np.zeros((0, 64), dtype=np.uint8)
    for indexed, queries in ((one, one), (empty, one), (one, empty), (empty, empty)):
        index, brute = _both(monkeypatch, indexed, queries, 30)
        assert np.array_equal(index, brute)
        assert np.array_equal(brute, _reference(indexed, queries, 30))
    monkeypatch.setattr(pairs, "INDEX_PAIRS", EVERY)
    assert pairs.self_pairs(one, 30).shape == (0, 3)
    assert pairs.self_pairs(empty, 30).shape == (0, 3)


@pytest.mark.parametrize("max_distance", [-1, 128, 511, 512, 1000])
def test_radii_the_index_cannot_split_fall_back_to_brute_force(monkeypatch, max_distance):
    codes = _film_like(60, seed=4)
    assert substrings(codes, max_distance) is None
    index, brute = _both(monkeypatch, codes, codes[::-1].copy(), max_distance)
    assert np.array_equal(index, brute)
    assert np.array_equal(brute, _reference(codes, codes[::-1], max_distance))


def test_short_codes(monkeypatch):
    """64-bit codes (the audit's phash and dhash): 3 substrings of 21 bits at radius 4."""
    rng = np.random.default_rng(2)
    codes = rng.integers(0, 256, (300, 8), dtype=np.uint8)
    codes[150:] = codes[:150] ^ (rng.random((150, 8)) < 0.05).astype(np.uint8)
    assert substrings(codes, 4).shape == (3, 21)
    index, brute = _both(monkeypatch, codes, codes, 4)
    assert np.array_equal(index, brute)
    assert np.array_equal(brute, _reference(codes, codes, 4))


@pytest.mark.parametrize("max_distance", [30, 32])
def test_pairs_at_the_pigeonholes_edge_are_found(max_distance):
    """Pairs exactly ``max_distance`` apart with their differences spread as evenly as the
    radius allows: two bits in every substring but one, which has none (a third of the rows)
    or one, like one other substring (a third), or one bit in every substring and the rest
    outside every substring (a third). A search with one table fewer, or probing fewer
    one-bit variants, misses some of them."""
    codes = _film_like(300, seed=6)
    tables = substrings(codes, max_distance)
    assert tables is not None and len(tables) == max_distance // 2 + 1
    outside = sorted(set(range(512)) - set(tables.ravel().tolist()))
    rng = np.random.default_rng(0)
    edge = np.unpackbits(codes, axis=1)
    for row in range(len(edge)):
        spared, other = rng.choice(len(tables), 2, replace=False)
        if row % 3 == 2:
            counts = np.ones(len(tables), dtype=int)
        else:
            counts = np.full(len(tables), 2)
            counts[spared] = row % 3
            counts[other] -= row % 3
        flipped = [b for t, k in zip(tables, counts, strict=True) for b in rng.choice(t, k, False)]
        edge[row, flipped + outside[: max_distance - len(flipped)]] ^= 1
    edge = np.packbits(edge, axis=1)
    found = multi_index_pairs(codes, edge, max_distance, tables)
    diagonal = found[found[:, 0] == found[:, 1]]
    assert diagonal[:, 0].tolist() == list(range(len(codes)))
    assert set(diagonal[:, 2].tolist()) == {max_distance}
    assert np.array_equal(found, _reference(codes, edge, max_distance))


@pytest.mark.parametrize("width", [16, 21, 26])
def test_a_keys_list_is_its_rank_among_the_keys_present_or_none(width):
    """``KeyRanks`` against a dictionary: keys at both ends of the range and of 64-bit words,
    and absent keys beside present ones."""
    rng = np.random.default_rng(width)
    top = (1 << width) - 1
    edges = np.array([0, 1, 62, 63, 64, 65, 127, 128, top - 64, top - 1, top], dtype=np.uint32)
    present = np.unique(np.concatenate([edges[::2], rng.integers(0, top, 3_000, np.uint32)]))
    asked = np.concatenate([edges, present, rng.integers(0, top + 1, 5_000, np.uint32)])
    asked = asked[: len(asked) // 2 * 2]  # asked as a block of rows, as the search asks
    expected = dict(zip(present.tolist(), range(len(present)), strict=True))
    ranks = multi_index.KeyRanks(present, width)
    found = ranks.lists(asked.reshape(-1, 2))
    assert found.dtype == np.int64 and found.shape == (len(asked) // 2, 2)
    assert found.ravel().tolist() == [expected.get(key, -1) for key in asked.tolist()]


def test_a_tables_memory_does_not_grow_with_its_keys_range():
    """A table of 2,000 codes at radius 30 (16 tables of 26-bit keys) holds its ``KeyRanks``
    (16 MiB) and little else: a lookup array with an entry for every 26-bit key held 256 MiB in
    every job that built a table. Random codes, so that few pairs are found to hold."""
    codes = np.random.default_rng(5).integers(0, 256, (2_000, 64), dtype=np.uint8)
    tables = substrings(codes, 30)
    assert tables is not None and tables.shape[1] == multi_index.KEY_BITS
    tracemalloc.start()
    try:
        multi_index.table_pairs(codes, [(codes, True)], 30, tables, 1)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 32 * 2**20


def test_a_late_tables_job_holds_no_more_than_the_first():
    """The last of 25 tables (radius 48) checks its candidates against 24 earlier tables'
    keys; with those keys' bits widened to ``int64`` a job held 13 MiB more a table at 64,000
    codes than the first table's job (an audit's workers reached 455 MiB in that search)."""
    codes = np.random.default_rng(8).integers(0, 256, (16_384, 64), dtype=np.uint8)
    tables = substrings(codes, 48)
    assert tables is not None and len(tables) == 25
    peaks = []
    for table in (0, len(tables) - 1):
        tracemalloc.start()
        try:
            multi_index.table_pairs(codes, [(codes, True), (codes[::-1], False)], 48, tables, table)
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
    assert peaks[1] < peaks[0] + 4 * 2**20
