"""Visits of one patient among a set of films: retrieval proposes each film's nearest films
(``curation.visits.retrieval``), verification decides (``curation.visits.verification``).

Every piece of work goes through the executor's ``map`` as jobs that carry keys and stores,
never descriptors or vectors (``curation.visits.stored``): the vocabulary's sample is gathered
by jobs over batches of films, the vectors are computed by jobs into a store of their own
(keyed by sha256, versioned by the vocabulary), the search runs in tiles that read two blocks
of vectors and return each query's few best, and each pair is verified by a job that reads
the two films' descriptors. The driver holds the keys, the vocabulary, a query block's best
and the pairs.

The in-memory functions (``film_vectors``, ``candidates``, ``verified_pairs``,
``find_visits``) write their features to a temporary store and run the same jobs.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from curation.core.parallel import LocalMap, Mapper
from curation.core.store import ArrayStore
from curation.visits.descriptors import DESCRIPTORS_VERSION, VisitFeatures
from curation.visits.retrieval import (
    PAIR_INDEX,
    PARTNERS,
    RETRIEVAL_VERSION,
    Tile,
    Vocabulary,
    as_tuples,
    film_sample,
    sampled_films,
    search_tiles,
    search_width,
    tile_best,
    tiled_pairs,
    train_vocabulary,
)
from curation.visits.stored import VisitStores, stored_arrays, stored_features, temporary_stores
from curation.visits.verification import VisitEvidence, verify

FILMS_PER_JOB = 32  # films quantised per job: the vocabulary travels once per job
SAMPLED_PER_JOB = 256  # films per job gathering the vocabulary's sample
PAIRS_AT_ONCE = 4096  # verification jobs the driver holds at a time


@dataclass(frozen=True)
class VisitPair:
    """Two films (indexes, ``first < second``) verified as one patient's, with the evidence."""

    first: int
    second: int
    matches: int
    inliers: int
    cells: int


def _sample(job: tuple[ArrayStore, ArrayStore, str, list[str], int]) -> int:
    """Worker side: the vocabulary's sample of a batch of films (``per_film`` descriptors of
    each, in their order) written to the sample's store as one part; how many rows."""
    descriptors, parts, part, keys, per_film = job
    rows = [film_sample(stored_features(descriptors, key).descriptors, per_film) for key in keys]
    sample = np.concatenate(rows) if rows else np.zeros((0, 128), np.uint8)
    parts.put(part, {"sample": sample})
    return len(sample)


def _train(job: tuple[ArrayStore, list[str]]) -> Vocabulary:
    """Worker side: the vocabulary trained on the sample's parts, in order."""
    parts, keys = job
    rows = [
        stored_arrays(parts, key, "a part of the vocabulary's sample is")["sample"] for key in keys
    ]
    return train_vocabulary(np.concatenate(rows) if rows else np.zeros((0, 128), np.uint8))


def stored_vocabulary(stores: VisitStores, keys: Sequence[str], map: Mapper) -> Vocabulary:
    """The vocabulary trained on the films ``keys`` (one key per film): its sample (at most
    ``TRAINING_MAX`` descriptors) gathered by jobs into parts on disk, and trained by one
    more job, so that no descriptor comes to the driver; the parts removed after."""
    chosen, per_film = sampled_films(len(keys))
    parts = ArrayStore(stores.sample, f"{RETRIEVAL_VERSION}/{DESCRIPTORS_VERSION}")
    starts = range(0, len(chosen), SAMPLED_PER_JOB)
    names = [f"{n:064x}" for n in range(len(starts))]
    jobs = [
        (
            stores.descriptors,
            parts,
            name,
            [keys[n] for n in chosen[start : start + SAMPLED_PER_JOB]],
            per_film,
        )
        for name, start in zip(names, starts, strict=True)
    ]
    try:
        for _ in map(_sample, jobs, chunksize=1):
            pass
        (vocabulary,) = map(_train, [(parts, names)], chunksize=1)  # the map runs to its end
        return vocabulary
    finally:
        shutil.rmtree(stores.sample, ignore_errors=True)


def vector_store(stores: VisitStores, vocabulary: Vocabulary) -> ArrayStore:
    """The store of the films' vectors under ``vocabulary`` (array ``vector``)."""
    version = f"{RETRIEVAL_VERSION}/{vocabulary.digest}/{DESCRIPTORS_VERSION}"
    return ArrayStore(stores.vectors, version)


def _vectors(job: tuple[ArrayStore, ArrayStore, Vocabulary, list[str]]) -> int:
    """Worker side: the VLAD vector of each film of the job into the vectors' store (unless
    there already); how many films."""
    descriptors, vectors, vocabulary, keys = job
    for key in keys:
        if vectors.get(key) is None:
            vectors.put(key, {"vector": vocabulary.vector(stored_features(descriptors, key))})
    return len(keys)


def stored_vectors(
    stores: VisitStores, keys: Sequence[str], vocabulary: Vocabulary, map: Mapper
) -> ArrayStore:
    """Every film's vector computed into its store (``FILMS_PER_JOB`` films a job, each
    content once); the vectors of other vocabularies dropped."""
    vectors = vector_store(stores, vocabulary)
    unique = list(dict.fromkeys(keys))
    jobs = [
        (stores.descriptors, vectors, vocabulary, unique[start : start + FILMS_PER_JOB])
        for start in range(0, len(unique), FILMS_PER_JOB)
    ]
    for _ in map(_vectors, jobs, chunksize=1):
        pass
    vectors.drop_other_versions()
    return vectors


def _stacked(vectors: ArrayStore, keys: Sequence[str]) -> np.ndarray:
    """The stored vectors of ``keys``, one row each."""
    return np.stack([stored_arrays(vectors, key, "a film's vector is")["vector"] for key in keys])


def _tile(job: tuple[ArrayStore, Tile, list[str], list[str], int]) -> tuple[np.ndarray, np.ndarray]:
    """Worker side: each query's best films in one tile, read from the vectors' store."""
    vectors, tile, queries, indexed, keep = job
    return tile_best(tile, _stacked(vectors, queries), _stacked(vectors, indexed), keep)


def stored_nearest(
    vectors: ArrayStore, keys: Sequence[str], width: int, map: Mapper, partners: int = PARTNERS
) -> np.ndarray:
    """``nearest_films`` over the vectors in the store (``width`` components each), one job
    per tile, as an ``(n, 2)`` array (``tiled_pairs``); a block's keys are listed once,
    however many tiles use it."""
    count = len(keys)
    if count < 2:
        return np.zeros((0, 2), PAIR_INDEX)
    keep = search_width(partners, count)[1]
    tiles = search_tiles(count, width)
    blocks: dict[range, list[str]] = {}
    for tile in tiles:
        for films in (tile.queries, tile.indexed):
            blocks.setdefault(films, list(keys[films.start : films.stop]))
    jobs = [(vectors, t, blocks[t.queries], blocks[t.indexed], keep) for t in tiles]
    return tiled_pairs(tiles, map(_tile, jobs, chunksize=1), partners, count)


def stored_candidate_pairs(
    stores: VisitStores, keys: Sequence[str], map: Mapper, partners: int = PARTNERS
) -> np.ndarray:
    """Each film's ``partners`` nearest films (``keys``: one per film), as pairs to verify:
    an ``(n, 2)`` array of indexes into ``keys``, sorted."""
    vocabulary = stored_vocabulary(stores, keys, map)
    vectors = stored_vectors(stores, keys, vocabulary, map)
    return stored_nearest(vectors, keys, vocabulary.centroids.size, map, partners)


def stored_candidates(
    stores: VisitStores, keys: Sequence[str], map: Mapper, partners: int = PARTNERS
) -> list[tuple[int, int]]:
    """``stored_candidate_pairs`` as a list of ``(i, j)`` tuples."""
    return as_tuples(stored_candidate_pairs(stores, keys, map, partners))


def _verify(job: tuple[ArrayStore, str, str]) -> VisitEvidence:
    """Worker side: the evidence of one pair read from the store (without the points, which
    stay in the worker)."""
    store, first, second = job
    evidence = verify(stored_features(store, first), stored_features(store, second))
    empty = np.zeros((0, 2), np.float32)
    return VisitEvidence(evidence.matches, evidence.inliers, evidence.cells, empty, empty)


def stored_verified(
    store: ArrayStore,
    keys: Sequence[str],
    pairs: np.ndarray,
    map: Mapper,
    on_progress: Callable[[int], None] | None = None,
) -> list[VisitPair]:
    """The ``pairs`` (an ``(n, 2)`` array of film indexes into ``keys``) verified as visits,
    sorted by index; ``PAIRS_AT_ONCE`` pairs at a time are held as Python objects."""
    found = []
    for start in range(0, len(pairs), PAIRS_AT_ONCE):
        window = as_tuples(pairs[start : start + PAIRS_AT_ONCE])
        jobs = [(store, keys[i], keys[j]) for i, j in window]
        for (i, j), evidence in zip(window, map(_verify, jobs, chunksize=8), strict=True):
            if on_progress is not None:
                on_progress(1)
            if evidence.verified:
                found.append(VisitPair(i, j, evidence.matches, evidence.inliers, evidence.cells))
    return sorted(found, key=lambda v: (v.first, v.second))


def film_vectors(features: Sequence[VisitFeatures], map: Mapper | None = None) -> np.ndarray:
    """Train the vocabulary on ``features`` and compute every film's vector through ``map``
    (``FILMS_PER_JOB`` a job): one row per film."""
    mapped = map or LocalMap(1)
    with temporary_stores(features) as (stores, keys):
        vocabulary = stored_vocabulary(stores, keys, mapped)
        vectors = stored_vectors(stores, keys, vocabulary, mapped)
        if not keys:
            return np.zeros((0, vocabulary.centroids.size), np.float32)
        return _stacked(vectors, keys)


def candidates(
    features: Sequence[VisitFeatures], map: Mapper | None = None, partners: int = PARTNERS
) -> list[tuple[int, int]]:
    """Each film's ``partners`` nearest films, as pairs to verify."""
    with temporary_stores(features) as (stores, keys):
        return stored_candidates(stores, keys, map or LocalMap(1), partners)


def verified_pairs(
    features: Sequence[VisitFeatures],
    pairs: Sequence[tuple[int, int]],
    map: Mapper | None = None,
    on_progress: Callable[[int], None] | None = None,
) -> list[VisitPair]:
    """The ``pairs`` verified as visits, sorted by index."""
    as_array = np.array(pairs, PAIR_INDEX).reshape(-1, 2)
    with temporary_stores(features) as (stores, keys):
        return stored_verified(stores.descriptors, keys, as_array, map or LocalMap(1), on_progress)


def find_visits(features: Sequence[VisitFeatures], map: Mapper | None = None) -> list[VisitPair]:
    """The visits of one patient among ``features``: retrieved, then verified."""
    mapped = map or LocalMap(1)
    with temporary_stores(features) as (stores, keys):
        pairs = stored_candidate_pairs(stores, keys, mapped)
        return stored_verified(stores.descriptors, keys, pairs, mapped)
