"""The one search over every orientation: each view searched, the radius inclusive, a film
never paired with itself, upright pairs once, rows in the order both engines give."""

import numpy as np
import pytest

from curation.hashes import pairs
from curation.hashes.hashing import View
from curation.hashes.orientations import pairs_in_any_orientation

RADIUS = 30
FILMS = 6


def _flip(code: np.ndarray, bits: int) -> np.ndarray:
    """``code`` with its first ``bits`` bits flipped: exactly ``bits`` bits away."""
    unpacked = np.unpackbits(code)
    unpacked[:bits] ^= 1
    return np.packbits(unpacked)


def _found(codes: dict[View, np.ndarray], views=tuple(View)) -> list[tuple[View, int, int, int]]:
    return [
        (view, a, b, distance)
        for view, rows in pairs_in_any_orientation(codes.__getitem__, RADIUS, views)
        for a, b, distance in rows.tolist()
    ]


@pytest.mark.parametrize("view", list(View))
def test_a_pair_at_the_radius_is_found_in_its_orientation_and_one_bit_more_is_not(view):
    rng = np.random.default_rng(7)  # random codes: about 256 bits apart, far beyond RADIUS
    codes = {v: rng.integers(0, 256, (FILMS, 64), dtype=np.uint8) for v in View}
    upright = codes[View.identity]
    codes[view][1] = _flip(upright[0], RADIUS)  # film 1 in ``view`` is film 0, at the radius
    codes[view][3] = _flip(upright[2], RADIUS + 1)  # film 3 in ``view``: one bit too far
    for other in View:
        if other is not View.identity:
            codes[other][5] = upright[5]  # a symmetric film is no pair with itself
    expected = (0, 1) if view is View.identity else (1, 0)  # upright pairs come once, a < b
    assert _found(codes) == [(view, *expected, RADIUS)]


def test_only_the_views_asked_for_are_searched():
    rng = np.random.default_rng(8)
    codes = {v: rng.integers(0, 256, (FILMS, 64), dtype=np.uint8) for v in View}
    codes[View.identity][1] = _flip(codes[View.identity][0], 3)
    codes[View.rot270][4] = _flip(codes[View.identity][2], 4)
    turned = [v for v in View if v is not View.identity]
    assert _found(codes, turned) == [(View.rot270, 4, 2, 4)]
    assert _found(codes) == [(View.identity, 0, 1, 3), (View.rot270, 4, 2, 4)]


def _reference(codes: dict[View, np.ndarray]) -> list[tuple[View, int, int, int]]:
    """Every film in every view against every film upright, by numpy."""
    upright = np.unpackbits(codes[View.identity], axis=1)
    found = []
    for view in View:
        turned = np.unpackbits(codes[view], axis=1)
        distance = (turned[:, None, :] != upright[None, :, :]).sum(-1)
        for a, b in zip(*np.nonzero(distance <= RADIUS), strict=True):
            if a != b and (view is not View.identity or a < b):
                found.append((view, int(a), int(b), int(distance[a, b])))
    return found


@pytest.mark.parametrize("index_pairs", [-1, 10**18])  # the multi-index, then brute force
def test_every_orientation_equals_numpy_on_codes_near_one_another(monkeypatch, index_pairs):
    monkeypatch.setattr(pairs, "INDEX_PAIRS", index_pairs)
    monkeypatch.setattr(pairs, "QUERY_BLOCK", 16)  # several blocks per view
    rng = np.random.default_rng(9)
    centre = rng.integers(0, 2, 512, dtype=np.uint8)
    codes = {
        v: np.packbits(centre ^ (rng.random((60, 512)) < rng.uniform(0, 0.05, (60, 1))), axis=1)
        for v in View
    }
    found = _found(codes)
    assert found == _reference(codes)
    assert {view for view, *_ in found} == set(View), "every view must have pairs"
    assert any(d == RADIUS for *_, d in found), "the codes must reach the boundary"
