"""``bench.scale.audit_lists`` reads how many of the audit's planted look-alikes each search
finds in pools of its films: a pool must hold both films of every planted pair, a pair counts
whichever way round the search names it, and the lists before the change must be searched as
many as they were (4 x sqrt(films)), or the comparison would say nothing."""

from __future__ import annotations

import numpy as np

from bench.scale import audit_lists
from curation.visits.inverted import list_count


def _pool(count: int, pairs: int) -> np.ndarray:
    """Unit rows over 64 components; rows ``2n + 1`` (n < pairs) at a cosine of 0.6 to ``2n``."""
    rng = np.random.default_rng(3)
    rows = rng.standard_normal((count, 64))
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    rows[1 : 2 * pairs : 2] = 0.6 * rows[0 : 2 * pairs : 2] + 0.8 * rows[1 : 2 * pairs : 2]
    return np.ascontiguousarray(rows / np.linalg.norm(rows, axis=1, keepdims=True), np.float32)


def test_a_pool_holds_every_planted_film_and_others_evenly_chosen():
    planted = np.array([[5, 900], [17, 30], [999, 2]])
    pool = audit_lists.pool_of(1000, planted, 100)
    assert len(pool) == 100 and np.all(np.diff(pool) > 0)
    assert set(planted.ravel()) <= set(pool.tolist())
    assert pool.min() == 0 and pool.max() == 999  # the others spread over every film


def test_a_pair_is_found_whichever_way_round_it_is_planted():
    pairs = np.array([[1, 4], [2, 3]])
    assert audit_lists.found_count(pairs, np.array([[4, 1], [3, 2], [1, 2]])) == 2


def test_the_three_searches_each_count_their_own_lists():
    vectors, planted = _pool(4096, 40), np.array([[2 * n, 2 * n + 1] for n in range(40)])
    found = audit_lists.searched(vectors, planted)
    assert found["exact"]["found"] == 40
    assert found["lists"]["lists"] == list_count(4096) == 256
    assert found["root_lists"]["lists"] == audit_lists.root_lists(4096) == 256
    bigger = audit_lists.searched(_pool(16_384, 40), planted)
    assert bigger["lists"]["lists"] == 1024
    assert bigger["root_lists"]["lists"] == 512
