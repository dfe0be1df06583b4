"""Which pairs of films are worth matching by local features: a shortlist that grows linearly
with the number of films.

Matching every pair of films by features is quadratic; most pairs share nothing. Each film
lends a bounded, evenly spread subset of its ORB descriptors to one faiss binary index (a
multi-hash index: exact Hamming distances inside buckets, deterministic); every descriptor of
every film then looks up its nearest descriptors there (a copy's subset and its original's
subset are different corners, so one side must query with all of its descriptors); each hit
within ``MAX_HAMMING`` is a vote for the pair of films, and each film keeps its ``per_film``
best-voted partners. A crop, a pad, a turn or a re-toned copy of a film, or another visit of
the same patient, shares many corners with it (ORB is rotation-invariant), so it collects far
more votes than an unrelated film.
"""

from __future__ import annotations

from collections.abc import Sequence

import faiss
import numpy as np

from curation.features.features import FilmFeatures

PER_FILM = 8  # best-voted partners kept per film
INDEXED_PER_FILM = 200  # descriptors each film lends to the index (every one of them queries)
NEIGHBOURS = 4  # nearest indexed descriptors looked at per query descriptor
MAX_HAMMING = 40  # of 256 bits: a vote only for a close descriptor
HASH_TABLES = 8  # multi-hash: tables of HASH_BITS bits each
HASH_BITS = 24
MIN_VOTES = 2  # a single coincidence is no evidence
SHORTLIST_VERSION = (
    f"shortlist-v1/{INDEXED_PER_FILM}-k{NEIGHBOURS}-h{MAX_HAMMING}-"
    f"mh{HASH_TABLES}x{HASH_BITS}-top{PER_FILM}"
)


def _indexed_rows(count: int) -> np.ndarray:
    """Evenly spaced descriptor rows, at most ``INDEXED_PER_FILM`` (deterministic)."""
    if count <= INDEXED_PER_FILM:
        return np.arange(count)
    return np.linspace(0, count - 1, INDEXED_PER_FILM).round().astype(np.int64)


def pair_votes(features: Sequence[FilmFeatures]) -> dict[tuple[int, int], int]:
    """Votes per pair of films (i < j): how many descriptors of either film found a close
    descriptor of the other in the index (each query descriptor votes once per film)."""
    indexed = [_indexed_rows(len(f.descriptors)) for f in features]
    total = sum(len(rows) for rows in indexed)
    if total == 0:
        return {}
    owner = np.concatenate([np.full(len(r), n, np.int64) for n, r in enumerate(indexed)])
    index = faiss.IndexBinaryMultiHash(256, HASH_TABLES, HASH_BITS)
    lent = [f.descriptors[r] for f, r in zip(features, indexed, strict=True)]
    index.add(np.ascontiguousarray(np.concatenate(lent)))
    keys = []
    for film, feature in enumerate(features):
        if len(feature.descriptors) == 0:
            continue
        distances, found = index.search(np.ascontiguousarray(feature.descriptors), NEIGHBOURS)
        row, column = np.nonzero((found >= 0) & (distances <= MAX_HAMMING))
        other = owner[found[row, column]]
        foreign = other != film
        # One vote per query descriptor and partner film: a repeated texture counts once.
        voted = np.unique(row[foreign] * len(features) + other[foreign]) % len(features)
        keys.append(np.stack([np.minimum(voted, film), np.maximum(voted, film)], axis=1))
    if not keys:
        return {}
    pairs, counts = np.unique(np.concatenate(keys), axis=0, return_counts=True)
    return {(int(a), int(b)): int(n) for (a, b), n in zip(pairs, counts, strict=True)}


def feature_shortlist(
    features: Sequence[FilmFeatures], per_film: int = PER_FILM
) -> list[tuple[int, int]]:
    """Index pairs (i < j), sorted, worth verifying by
    ``curation.features.features.match_features``:
    each film's ``per_film`` best-voted partners (ties by index). At most
    ``per_film * len(features)`` pairs."""
    votes = pair_votes(features)
    partners: dict[int, list[tuple[int, int]]] = {}
    for (i, j), count in votes.items():
        if count < MIN_VOTES:
            continue
        partners.setdefault(i, []).append((-count, j))
        partners.setdefault(j, []).append((-count, i))
    chosen: set[tuple[int, int]] = set()
    for film, ranked in partners.items():
        for _, other in sorted(ranked)[:per_film]:
            chosen.add((min(film, other), max(film, other)))
    return sorted(chosen)
