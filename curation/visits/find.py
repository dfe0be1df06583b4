"""Visits of one patient among a set of films: retrieval proposes each film's nearest films
(``curation.visits.retrieval``), verification decides (``curation.visits.verification``).

The per-film work (describing, summarising) and the per-pair work (verifying) go through the
executor's ``map``; the driver keeps the vocabulary and each film's VLAD vector.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from curation.core.parallel import LocalMap, Mapper
from curation.visits.descriptors import VisitFeatures
from curation.visits.retrieval import PARTNERS, Vocabulary, nearest_films, train_vocabulary
from curation.visits.verification import VisitEvidence, verify

FILMS_PER_JOB = 32  # films quantised per job: the vocabulary travels once per job


@dataclass(frozen=True)
class VisitPair:
    """Two films (indexes, ``first < second``) verified as one patient's, with the evidence."""

    first: int
    second: int
    matches: int
    inliers: int
    cells: int


def _vectors(job: tuple[Vocabulary, list[VisitFeatures]]) -> list[np.ndarray]:
    """Worker side: the VLAD vector of each film of the job."""
    vocabulary, films = job
    return [vocabulary.vector(film) for film in films]


def film_vectors(features: Sequence[VisitFeatures], map: Mapper | None = None) -> np.ndarray:
    """Train the vocabulary on ``features`` and compute every film's vector through ``map``
    (``FILMS_PER_JOB`` a job): one row per film."""
    vocabulary = train_vocabulary(features)
    jobs = [
        (vocabulary, list(features[start : start + FILMS_PER_JOB]))
        for start in range(0, len(features), FILMS_PER_JOB)
    ]
    rows = [v for batch in (map or LocalMap(1))(_vectors, jobs, chunksize=1) for v in batch]
    width = vocabulary.centroids.size
    return np.stack(rows) if rows else np.zeros((0, width), np.float32)


def candidates(
    features: Sequence[VisitFeatures], map: Mapper | None = None, partners: int = PARTNERS
) -> list[tuple[int, int]]:
    """Each film's ``partners`` nearest films, as pairs to verify."""
    return nearest_films(film_vectors(features, map), partners)


def _verify(job: tuple[VisitFeatures, VisitFeatures]) -> VisitEvidence:
    """Worker side: the evidence of one pair (without the points, which stay in the worker)."""
    evidence = verify(*job)
    empty = np.zeros((0, 2), np.float32)
    return VisitEvidence(evidence.matches, evidence.inliers, evidence.cells, empty, empty)


def verified_pairs(
    features: Sequence[VisitFeatures],
    pairs: Sequence[tuple[int, int]],
    map: Mapper | None = None,
    on_progress: Callable[[int], None] | None = None,
) -> list[VisitPair]:
    """The ``pairs`` verified as visits, sorted by index."""
    jobs = [(features[i], features[j]) for i, j in pairs]
    found = []
    for (i, j), evidence in zip(
        pairs, (map or LocalMap(1))(_verify, jobs, chunksize=8), strict=True
    ):
        if on_progress is not None:
            on_progress(1)
        if evidence.verified:
            found.append(VisitPair(i, j, evidence.matches, evidence.inliers, evidence.cells))
    return sorted(found, key=lambda v: (v.first, v.second))


def find_visits(features: Sequence[VisitFeatures], map: Mapper | None = None) -> list[VisitPair]:
    """The visits of one patient among ``features``: retrieved, then verified."""
    return verified_pairs(features, candidates(features, map), map)
