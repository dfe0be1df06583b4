"""Which pairs of films are worth matching by local features: a shortlist whose cost per
film is bounded, and whose recall holds, whatever the number of films.

Matching every pair of films by features is quadratic; most pairs share nothing. Descriptors
of different films that share a key and are close (``curation.features.close_pairs``: keys,
common keys and the search within a key) are a vote for the pair of films; each descriptor
votes once per partner film. A crop, a pad, a turn or a re-toned copy of a film, or another
visit of the same patient, shares many corners with it (ORB is rotation-invariant), so it
collects far more votes than an unrelated film: a pair needs ``MIN_VOTES`` and votes from
``MIN_SHARE`` of the voting descriptors of the film with fewer (measured on real films by
``python -m bench.same_picture.feature_cost``, margins in docs/margins.md, "Shortlist"), and
each film keeps its ``per_film`` best-voted partners. Only a quarter of each film's
descriptors vote (``voting``): sixteen times fewer pairs of descriptors to compare, and the
real films' margin holds. The votes are counted by jobs over a store of the films' features
(``curation.features.vote_shards``), wherever the caller's ``map`` runs work; the in-memory
calls here file the features they are handed and count them the same way.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np

from curation.core.parallel import Mapper
from curation.features.close_pairs import (
    HASH_TABLES,
    KEY_BITS,
    KEY_LOAD_BITS,
    MAX_HAMMING,
    SAMPLE_MASK,
    WINDOW,
    voting_rows,
)
from curation.features.features import FilmFeatures
from curation.features.vote_shards import held_pair_votes, in_process, stored_pair_votes

__all__ = [
    "HASH_TABLES",
    "MIN_SHARE",
    "MIN_VOTES",
    "PER_FILM",
    "SHORTLIST_VERSION",
    "best_partners",
    "feature_shortlist",
    "pair_votes",
    "shortlisted",
    "stored_pair_votes",
    "voter_counts",
    "voting",
]

PER_FILM = 8  # best-voted partners kept per film
MIN_VOTES = 10  # a few coincidences are no evidence
MIN_SHARE = 0.12  # votes over the fewer voting descriptors (bench.same_picture.feature_cost)
SHORTLIST_VERSION = (
    f"shortlist-v4/lsh{HASH_TABLES}x{KEY_BITS}-load{KEY_LOAD_BITS}-sample{SAMPLE_MASK}-"
    f"window{WINDOW}-h{MAX_HAMMING}-votes{MIN_VOTES}-share{MIN_SHARE}"
)


def voting(features: FilmFeatures) -> np.ndarray:
    """Which of a film's descriptors vote (``voting_rows``)."""
    return voting_rows(features.descriptors)


def voter_counts(features: Sequence[FilmFeatures]) -> list[int]:
    """Each film's number of voting descriptors (``shortlisted``, ``stored_pair_votes``)."""
    return [int(voting(f).sum()) for f in features]


def pair_votes(
    features: Sequence[FilmFeatures],
    min_votes: int = 1,
    on_progress: Callable[[int], None] = lambda count: None,
    map: Mapper = in_process,
) -> dict[tuple[int, int], int]:
    """``stored_pair_votes`` of films held in memory (``held_pair_votes``), in a temporary
    work folder that ``map``'s workers must see (a local pool's do)."""
    with tempfile.TemporaryDirectory(prefix="pericurate-votes-") as folder:
        voting_descriptors = [film.descriptors[voting(film)] for film in features]
        work = Path(folder) / "work"
        return held_pair_votes(voting_descriptors, work, min_votes, on_progress, map)


def best_partners(votes: Mapping[tuple[int, int], int], per_film: int) -> set[tuple[int, int]]:
    """Each film's ``per_film`` best-voted partners among ``votes`` (ties by index), as
    index pairs (i < j)."""
    partners: dict[int, list[tuple[int, int]]] = {}
    for (i, j), count in votes.items():
        partners.setdefault(i, []).append((-count, j))
        partners.setdefault(j, []).append((-count, i))
    return {
        (min(film, other), max(film, other))
        for film, ranked in partners.items()
        for _, other in sorted(ranked)[:per_film]
    }


def shortlisted(
    voters: Sequence[int],
    votes: Mapping[tuple[int, int], int],
    per_film: int = PER_FILM,
) -> list[tuple[int, int]]:
    """Index pairs (i < j), sorted, of ``votes`` (``pair_votes``) worth verifying: each
    film's ``per_film`` best-voted partners among those with ``MIN_SHARE`` of the fewer
    voting descriptors of the two (``voters``: each film's, ``voter_counts``)."""
    worth = {
        (i, j): count
        for (i, j), count in votes.items()
        if count >= MIN_SHARE * min(voters[i], voters[j])
    }
    return sorted(best_partners(worth, per_film))


def feature_shortlist(
    features: Sequence[FilmFeatures],
    per_film: int = PER_FILM,
    on_progress: Callable[[int], None] = lambda count: None,
    map: Mapper = in_process,
) -> list[tuple[int, int]]:
    """Index pairs (i < j), sorted, worth verifying by
    ``curation.features.features.match_features``:
    each film's ``per_film`` best-voted partners among those with at least ``MIN_VOTES``
    votes and ``MIN_SHARE`` of the fewer voting descriptors of the two (ties by index). At
    most ``per_film * len(features)`` pairs. ``on_progress(1)`` after each of the
    ``HASH_TABLES`` keys."""
    votes = pair_votes(features, MIN_VOTES, on_progress, map)
    return shortlisted(voter_counts(features), votes, per_film)
