"""Crops to 60 % of each side reach the frame check by their own path
(``curation.same_picture.candidates.crop_candidates``): few of their features vote, so the
feature shortlist's vote share can pass them over."""

from __future__ import annotations

import numpy as np

from curation.features.features import FilmFeatures
from curation.features.shortlist import (
    MIN_SHARE,
    MIN_VOTES,
    feature_shortlist,
    pair_votes,
    voting,
)
from curation.same_picture.candidates import CROP_PARTNERS, crop_candidates

VOTERS = 600  # voting descriptors per film


def _films(shared: dict[tuple[int, int], int], count: int, seed: int = 0) -> list[FilmFeatures]:
    """``count`` films of random voting descriptors; each pair in ``shared`` has that many
    descriptors in common (the votes a crop and its original would share)."""
    rng = np.random.default_rng(seed)
    descriptors = [rng.integers(0, 256, (VOTERS, 32), dtype=np.uint8) for _ in range(count)]
    row = 0
    for (i, j), n in shared.items():
        descriptors[j][row : row + n] = descriptors[i][row : row + n]
        row += n
    films = []
    for found in descriptors:
        found[:, -1] &= 0xFC  # every descriptor votes
        films.append(FilmFeatures(np.zeros((VOTERS, 2), np.float32), found, (1000, 500)))
    assert all(voting(f).all() for f in films)
    return films


def test_a_pair_below_the_shortlists_share_is_proposed_by_the_crop_path():
    few = int(MIN_SHARE * VOTERS / 2) - 5  # two votes each: a share below MIN_SHARE
    assert 2 * few >= MIN_VOTES
    films = _films({(0, 1): few}, 4)
    shortlist = feature_shortlist(films)
    assert (0, 1) not in shortlist
    assert crop_candidates(pair_votes(films, MIN_VOTES), shortlist) == [(0, 1)]


def test_the_crop_path_adds_nothing_the_shortlist_already_proposes():
    films = _films({(0, 1): VOTERS // 2}, 3)
    shortlist = feature_shortlist(films)
    assert shortlist == [(0, 1)]
    assert crop_candidates(pair_votes(films, MIN_VOTES), shortlist) == []


def test_the_crop_path_checks_only_each_films_best_voted_partners():
    """Film 0 shares a few descriptors with films 1-3, each of which shares more with a
    twin (4-6): with one partner per film, only film 0's best (film 3) and the twins."""
    shared = {(0, 1): 8, (0, 2): 10, (0, 3): 12, (1, 4): 20, (2, 5): 20, (3, 6): 20}
    films = _films(shared, 7)
    assert crop_candidates(pair_votes(films, MIN_VOTES), [], per_film=1) == [
        (0, 3),
        (1, 4),
        (2, 5),
        (3, 6),
    ]
    assert CROP_PARTNERS >= 3  # a 60 % crop was at most its original's third-best partner
