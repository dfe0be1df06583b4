"""``bench.visits.distractors.inverted_file`` reads the recall of an inverted-file search beside
the exact one: searching every list must rank every planted pair as the exact search does and
compare every film, and searching fewer lists must compare fewer films, or its figures would
say nothing about what an inverted file trades for its cost; and the build's own search of
those lists is read beside them."""

from __future__ import annotations

from unittest import mock

import numpy as np

from bench.visits import distractors
from curation.visits.inverted import list_count


def _planted_pool(films: int, planted: int, width: int = 32) -> np.ndarray:
    """Unit rows; rows ``2n`` and ``2n + 1`` (n < planted) a film and its near copy."""
    rng = np.random.default_rng(5)
    rows = rng.standard_normal((films, width)).astype(np.float32)
    rows[1 : 2 * planted : 2] = rows[0 : 2 * planted : 2] + 0.3 * rng.standard_normal(
        (planted, width)
    ).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_every_list_searched_ranks_as_the_exact_search_and_fewer_compare_fewer_films():
    pool, planted = _planted_pool(1200, 20), 20
    halves = [np.arange(planted)[0::2], np.arange(planted)[1::2]]
    lists = list_count(len(pool))
    assert lists == 64  # 1200 / 16 = 75: the nearest power of two
    with mock.patch.object(distractors, "PROBES_TRIED", (2, lists)):
        found = distractors.inverted_file(pool, planted, halves)
    exact = distractors._spread(distractors._ranks(pool, planted), halves)
    every = found[f"probe{lists}"]
    assert every["compared_share"] == 1.0
    assert {k: every[k] for k in exact} == exact
    assert found["probe2"]["compared_share"] < 0.1
    assert found["lists"] == lists
    assert found["as_built"]["retrieved"] == planted  # the build's own search of the lists
    assert found["as_built"]["probes"] == 2  # one list in 32


def test_searching_as_many_lists_as_the_worst_list_rank_meets_every_pair():
    """A pair's list rank is how many lists its film must search to meet its revisit: that
    many, every pair is met (ranked among the 200 nearest, as deep as the search reads); one
    fewer, the worst is not."""
    pool, planted = _planted_pool(1200, 20, width=8), 20
    halves = [np.arange(planted)[0::2], np.arange(planted)[1::2]]
    first = distractors.inverted_file(pool, planted, halves)["list_rank"]
    worst = first["worst"]
    assert worst > 1 and worst == max(first["halves_worst"])
    with mock.patch.object(distractors, "PROBES_TRIED", (worst - 1, worst)):
        found = distractors.inverted_file(pool, planted, halves)
    assert found[f"probe{worst}"]["worst_rank"] < 200
    assert found[f"probe{worst - 1}"]["worst_rank"] == 200  # not met
