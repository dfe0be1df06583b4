"""The visits' lists cut into shards, and what a shard's job holds of the films' probed lists.

A shard is consecutive lists holding at most ``SHARD_FILMS`` films between them
(``curation.visits.inverted`` searches each as one job). Each film probes one list in 32 of its
lists, 2,048 at 1,000,000 films, and nearly every film probes some list of every shard; so a
shard's job holds, of each film that probes its lists, only the list the film is filed in and
its probed lists in the shard, about four: the whole row would be 8 KB a film.
"""

from __future__ import annotations

import numpy as np

# Films filed in one shard's lists at most (unless one list holds more): half of
# INVERTED_FROM (4,096), so that the search is always two jobs at least; the local executor
# runs a lone job in the driver's process, which would then hold every film's vector.
SHARD_FILMS = 2048


def shard_lists(sizes: np.ndarray, most: int = SHARD_FILMS) -> list[range]:
    """Consecutive lists holding at most ``most`` films between them (a larger list alone)."""
    shards: list[range] = []
    start, held = 0, 0
    for number, size in enumerate(sizes.tolist()):
        if held and held + size > most:
            shards.append(range(start, number))
            start, held = number, 0
        held += size
    return [*shards, range(start, len(sizes))] if len(sizes) else shards


def probes_of_pairs(films: np.ndarray, lists: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The films of ``films`` and ``lists`` (a film and a list it probes, each pair once), in
    ascending order, and each film's lists as a row (ascending, -1 past them)."""
    order = np.lexsort((lists, films))
    films, lists = films[order], lists[order]
    asking, starts, counts = np.unique(films, return_index=True, return_counts=True)
    rows = np.full((len(asking), int(counts.max(initial=0))), -1, np.int32)
    rows[
        np.repeat(np.arange(len(asking)), counts), np.arange(len(films)) - np.repeat(starts, counts)
    ] = lists
    return asking, rows


def in_shard(probes: np.ndarray, shard: range) -> tuple[np.ndarray, np.ndarray]:
    """Of the rows of ``probes`` (each film's probed lists, its own first), the films that probe
    a list of ``shard``, ascending, and what a shard's job holds of each: its own list, then
    its probed lists in the shard (``probes_of_pairs``)."""
    films, columns = np.nonzero((probes >= shard.start) & (probes < shard.stop))
    asking, rows = probes_of_pairs(films, probes[films, columns])
    return asking, np.hstack([probes[asking, :1], rows])


def padded(rows: list[np.ndarray]) -> np.ndarray:
    """Several blocks' rows as ``in_shard`` makes them, as one array, the narrower padded
    with -1."""
    width = max((part.shape[1] for part in rows), default=1)
    return np.vstack(
        [np.pad(part, ((0, 0), (0, width - part.shape[1])), constant_values=-1) for part in rows]
    )
