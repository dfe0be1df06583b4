"""Pairs of films within a radius in any orientation, with the orientation and distance found.

A mirrored or turned copy of a film is far from it upright: only the copy's hash in the right
orientation (``View``) is close. Same picture (its candidates), look-alikes (their links) and
the audit (turned leaks, recomputed clusters) all ask the same question, each with its own
radius and its own rule for which pairs count; this is the one search that answers it, on
the exact pair search of ``curation.hashes.pairs``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import numpy as np

from curation.hashes.hashing import View
from curation.hashes.pairs import range_pairs, self_pairs

NEGATIVE_PAIRS = np.zeros((0, 3), np.int64)


def pairs_in_any_orientation(
    codes_in: Callable[[View], np.ndarray], max_distance: int, views: Iterable[View] = View
) -> Iterator[tuple[View, np.ndarray]]:
    """Yield ``(view, rows)`` for each of ``views`` in the order given, ``rows`` an ``int64``
    array of ``[a, b, distance]``: film ``a`` turned by ``view`` is within ``max_distance``
    bits (inclusive) of film ``b`` upright, ``a != b``, ordered by ``a`` then ``b``.
    Upright pairs (``View.identity``) come once each, ``a < b``; turned pairs in both
    directions, since turning ``a`` onto ``b`` and ``b`` onto ``a`` are two hashes.

    ``codes_in(view)`` gives every film's codes in that orientation, one row per film, the
    same films in the same order for every view; it is called once per view, when that view
    is searched, so only two orientations' codes are held at a time."""
    upright = codes_in(View.identity)
    for view in views:
        if view is View.identity:
            yield view, self_pairs(upright, max_distance)
            continue
        for block in range_pairs(upright, codes_in(view), max_distance):
            yield view, block[block[:, 0] != block[:, 1]]


def negative_pairs(upright: np.ndarray, max_distance: int) -> np.ndarray:
    """Rows ``[a, b, distance]``, ``a < b``: film ``a``'s upright hash with every bit inverted
    lies within ``max_distance`` bits of film ``b``'s. A negative (grey levels inverted) turns
    every pixel to the other side of the film's mean, so its average hash is the original's
    inverted but for the few cells at the mean: far from it upright, near it inverted."""
    blocks = [
        block[block[:, 0] < block[:, 1]]
        for block in range_pairs(upright, np.bitwise_not(upright), max_distance)
    ]
    return np.concatenate(blocks) if blocks else NEGATIVE_PAIRS
