"""``bench.peers.lookalike_spread``: the smallest distance over orientations, and the counts of
planted look-alike and distinct pairs within each radius."""

from __future__ import annotations

import numpy as np

from bench.peers.compare import joined_groups
from bench.peers.lookalike_spread import nearest_views, spread
from curation.hashes.hashing import View


def _code(ones: list[int]) -> bytes:
    bits = np.zeros(512, bool)
    bits[ones] = True
    return np.packbits(bits).tobytes()


def test_a_pair_counts_at_its_nearest_orientation_and_distinct_films_are_counted_apart():
    blank, near_mirror = _code([]), _code(list(range(20)))
    views = {
        "a": dict.fromkeys(View, blank) | {View.mirror: near_mirror},
        "b": dict.fromkeys(View, _code(list(range(35)))),  # 35 bits from a, 15 mirrored
        "c": dict.fromkeys(View, _code(list(range(200, 250)))),  # 50 bits from a
        "d": dict.fromkeys(View, _code(list(range(300, 400)))),  # beyond any radius
    }
    distances = nearest_views(views, 60)
    assert distances == {("a", "b"): 15, ("a", "c"): 50}
    lookalikes = {("a", "b"), ("b", "d")}
    found = spread(distances, lookalikes, joined_groups(lookalikes), radii=(30, 60))
    assert found["lookalike_bits"] == {
        "min": 15,
        "median": 15.0,
        "max_within_search": 15,
        "beyond_search": 1,
    }
    assert found["nearest_distinct_bits"] == 50
    assert found["within"] == [
        {"radius": 30, "lookalike": 1, "distinct": 0},
        {"radius": 60, "lookalike": 1, "distinct": 1},
    ]
