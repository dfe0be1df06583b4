"""Pairs of films within a radius in any orientation, with the orientation and distance found.

A mirrored or turned copy of a film is far from it upright: only the copy's hash in the right
orientation (``View``) is close. Same picture (its candidates), look-alikes (their links) and
the audit (turned leaks, recomputed clusters) all ask the same question, each with its own
radius and its own rule for which pairs count; this is the one search that answers it, on
the exact pair search of ``curation.hashes.pairs``, in this process
(``pairs_in_any_orientation``) or a table of the multi-index a job on the executor
(``mapped_pairs_in_any_orientation``: the audit's, and the build's steps'), with the same rows;
``orientation_pairs`` chooses by whether it is given a folder the workers see.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import numpy as np

from curation.core.parallel import Mapper
from curation.hashes.hashing import View
from curation.hashes.mapped_pairs import mapped_range_pairs
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
            yield view, _turned(block)


def _turned(rows: np.ndarray) -> np.ndarray:
    """A turned film is no pair with itself (a symmetric film is within reach of its own
    upright hash)."""
    kept: np.ndarray = rows[rows[:, 0] != rows[:, 1]]
    return kept


def _once(rows: np.ndarray) -> np.ndarray:
    kept: np.ndarray = rows[rows[:, 0] < rows[:, 1]]
    return kept


def mapped_pairs_in_any_orientation(
    codes_in: Callable[[View], np.ndarray],
    max_distance: int,
    views: Iterable[View],
    folder: Path,
    map: Mapper | None = None,
    *,
    negatives: bool = False,
) -> list[tuple[View | None, np.ndarray]]:
    """``pairs_in_any_orientation``'s ``(view, rows)`` for each of ``views``, then with
    ``negatives`` the rows of ``negative_pairs`` under ``None``, as one search
    (``curation.hashes.mapped_pairs``): a table of the upright codes a job through ``map``,
    the codes written below ``folder``, which the workers must see. ``codes_in`` is called
    once per view, and its codes go to a file before the next view's are made."""
    views = list(views)
    upright = codes_in(View.identity)

    def query_sets() -> Iterator[np.ndarray | None]:
        for view in views:
            yield None if view is View.identity else codes_in(view)
        if negatives:
            yield np.bitwise_not(upright)

    found = mapped_range_pairs(upright, query_sets(), max_distance, folder, map)
    named: list[View | None] = [*views, *([None] if negatives else [])]
    return [
        (view, rows if view is View.identity else _once(rows) if view is None else _turned(rows))
        for view, rows in zip(named, found, strict=True)
    ]


def orientation_pairs(
    codes_in: Callable[[View], np.ndarray],
    max_distance: int,
    folder: Path | None = None,
    map: Mapper | None = None,
    *,
    negatives: bool = False,
) -> list[tuple[View | None, np.ndarray]]:
    """Every view's ``(view, rows)`` in ``View`` order, then with ``negatives`` the rows of
    ``negative_pairs`` under ``None``: with ``folder`` (which ``map``'s workers see) a table
    of the multi-index a job (``mapped_pairs_in_any_orientation``, for a build or an audit on
    an executor), without it in this process (``pairs_in_any_orientation``); the same rows."""
    if folder is not None:
        return mapped_pairs_in_any_orientation(
            codes_in, max_distance, View, folder, map, negatives=negatives
        )
    found: list[tuple[View | None, np.ndarray]] = [
        *pairs_in_any_orientation(codes_in, max_distance)
    ]
    if negatives:
        found.append((None, negative_pairs(codes_in(View.identity), max_distance)))
    return found


def negative_pairs(upright: np.ndarray, max_distance: int) -> np.ndarray:
    """Rows ``[a, b, distance]``, ``a < b``: film ``a``'s upright hash with every bit inverted
    lies within ``max_distance`` bits of film ``b``'s. A negative (grey levels inverted) turns
    every pixel to the other side of the film's mean, so its average hash is the original's
    inverted but for the few cells at the mean: far from it upright, near it inverted."""
    blocks = [_once(block) for block in range_pairs(upright, np.bitwise_not(upright), max_distance)]
    return np.concatenate(blocks) if blocks else NEGATIVE_PAIRS
