"""Visits of one patient among a set of films: retrieval proposes each film's nearest films
(``curation.visits.retrieval``), verification decides (``curation.visits.verification``).

Every piece of work goes through the executor's ``map`` as jobs that carry keys and stores,
never descriptors or vectors (``curation.visits.stored``): the vocabulary's sample is gathered
by jobs over batches of films, the vectors' projection is trained by one job on a sample of
films, the projected vectors are computed by jobs into a store of their own (one file per
block of films the search reads at once, versioned by the vocabulary and the projection), the
search runs in tiles that read two blocks of vectors and return each query's few best (from
``INVERTED_FROM`` films on, through the inverted file of ``curation.visits.inverted``), and
each pair is verified by a job that reads the two films' descriptors. The driver holds the
keys, the vocabulary, the projection while it stores it, a query block's best and the pairs.
What the search found is kept beside the vectors, and what the verification found (when the
caller gives it a store: the build's cache, the audit's work folder) a window of pairs a file,
so that a run stopped midway does neither again.

The in-memory functions (``film_vectors``, ``candidates``, ``verified_pairs``,
``find_visits``) write their features to a temporary store and run the same jobs.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import faiss
import numpy as np

from curation.core.parallel import CountingMap, LocalMap, Mapper
from curation.core.store import Arrays, ArrayStore
from curation.core.vocabulary import EXACT_UP_TO, VisitSearch
from curation.visits.blocks import VectorBlocks, range_rows
from curation.visits.descriptors import DESCRIPTORS_VERSION, VisitFeatures
from curation.visits.inverted import INVERTED_FROM, INVERTED_VERSION, stored_inverted_pairs
from curation.visits.retrieval import (
    PAIR_INDEX,
    PARTNERS,
    RETRIEVAL_VERSION,
    Tile,
    VectorProjection,
    Vocabulary,
    as_tuples,
    film_sample,
    projection_films,
    sampled_films,
    search_tiles,
    search_width,
    tile_best,
    tiled_pairs,
    train_projection,
    train_vocabulary,
)
from curation.visits.stored import VisitStores, stored_arrays, stored_features, temporary_stores
from curation.visits.verification import VERIFICATION_VERSION, VisitEvidence, verify

if TYPE_CHECKING:
    from curation.core.progress import Track

SAMPLED_PER_JOB = 256  # films per job gathering the vocabulary's sample
PAIRS_AT_ONCE = 4096  # verification jobs the driver holds at a time, and a kept window
NO_POINTS = np.zeros((0, 2), np.float32)  # evidence without its inliers' points


def chosen_search(search: VisitSearch, films: int) -> VisitSearch:
    """The search that runs over ``films`` films when ``search`` is asked for: ``auto`` is
    exact up to ``EXACT_UP_TO`` films, the lists above; the others as asked."""
    if search is not VisitSearch.auto:
        return search
    return VisitSearch.exact if films <= EXACT_UP_TO else VisitSearch.lists


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


def _projection(job: tuple[ArrayStore, Vocabulary, list[str]]) -> VectorProjection:
    """Worker side: the projection trained on the full vectors of the films ``keys``."""
    descriptors, vocabulary, keys = job
    sample = np.zeros((len(keys), vocabulary.centroids.size), np.float32)  # filled, not stacked
    for row, key in enumerate(keys):
        sample[row] = vocabulary.vector(stored_features(descriptors, key))
    return train_projection(sample)


def vector_store(
    stores: VisitStores, vocabulary: Vocabulary, projection: VectorProjection
) -> ArrayStore:
    """The store of the films' projected vectors (array ``vector``), and of the projection
    itself under its own key (arrays ``mean`` and ``components``)."""
    version = f"{RETRIEVAL_VERSION}/{vocabulary.digest}/{projection.digest}/{DESCRIPTORS_VERSION}"
    return ArrayStore(stores.vectors, version)


def projection_key(projection: VectorProjection) -> str:
    """The key the projection is kept under in its vectors' store (no film's sha256)."""
    return hashlib.sha256(f"projection {projection.digest}".encode()).hexdigest()


def _digest(what: str, keys: Sequence[str]) -> str:
    """A key in a store for ``what`` is kept of the films ``keys``, in order (no film's
    sha256)."""
    return hashlib.sha256((what + "\n" + "\n".join(keys)).encode()).hexdigest()


def block_name(keys: Sequence[str]) -> str:
    """A block's key in the store: its films' keys, in order."""
    return _digest("block", keys)


def _vector_block(job: tuple[ArrayStore, ArrayStore, Vocabulary, str, str, list[str]]) -> int:
    """Worker side: the projected VLAD vectors of one block of films into the vectors' store
    as one array (unless there already); how many films."""
    descriptors, vectors, vocabulary, projected_by, name, keys = job

    def projected() -> Arrays:
        stored = stored_arrays(vectors, projected_by, "the vectors' projection is")
        projection = VectorProjection(stored["mean"], stored["components"])
        full = [vocabulary.vector(stored_features(descriptors, key)) for key in keys]
        return {"vectors": projection.apply(np.stack(full))}

    if not vectors.holds(name):  # a rerun reads no block (8.2 GiB at 1,000,000 films)
        vectors.put(name, projected())
    return len(keys)


def stored_vectors(
    stores: VisitStores,
    keys: Sequence[str],
    vocabulary: Vocabulary,
    map: Mapper,
    on_films: Callable[[int], None] | None = None,
) -> VectorBlocks:
    """Every film's projected vector computed into its store, a block of films a job (the
    search's indexed block, ``faiss.cvar.distance_compute_blas_database_bs``), the projection
    trained first by one job on at most ``PROJECTION_FILMS`` films, each block's films told
    to ``on_films``. The vectors of other vocabularies and projections are dropped."""
    unique = list(dict.fromkeys(keys))
    sample = [unique[n] for n in projection_films(len(unique))]
    (projection,) = map(_projection, [(stores.descriptors, vocabulary, sample)], chunksize=1)
    vectors = vector_store(stores, vocabulary, projection)
    key = projection_key(projection)
    vectors.put(key, {"mean": projection.mean, "components": projection.components})
    size = int(faiss.cvar.distance_compute_blas_database_bs)
    blocks = [list(keys[start : start + size]) for start in range(0, len(keys), size)]
    names = [block_name(block) for block in blocks]
    jobs = [
        (stores.descriptors, vectors, vocabulary, key, name, block)
        for name, block in zip(names, blocks, strict=True)
    ]
    for films in map(_vector_block, jobs, chunksize=1):
        if on_films is not None:
            on_films(films)
    vectors.drop_other_versions()
    return VectorBlocks(vectors, names, size, len(keys), projection.components.shape[1])


def _tile(
    job: tuple[ArrayStore, Tile, tuple[list[str], int], tuple[list[str], int], int],
) -> tuple[np.ndarray, np.ndarray]:
    """Worker side: each query's best films in one tile, read from the vectors' blocks."""
    store, tile, (queries, query_offset), (indexed, indexed_offset), keep = job
    return tile_best(
        tile,
        range_rows(store, queries, query_offset, len(tile.queries)),
        range_rows(store, indexed, indexed_offset, len(tile.indexed)),
        keep,
    )


def stored_nearest(
    blocks: VectorBlocks,
    map: Mapper,
    partners: int = PARTNERS,
    search: VisitSearch = VisitSearch.lists,
    track: Track | None = None,
) -> np.ndarray:
    """``nearest_films`` over the stored vectors, one job per tile (from ``INVERTED_FROM``
    films on through the lists, where ``chosen_search`` says so), as an ``(n, 2)`` array
    (``tiled_pairs``), kept beside the vectors: a run stopped after the search (at 1,000,000
    films it took some 50 minutes on two nodes) does not search again. A search that runs
    counts its jobs on a bar of ``track``."""
    count = blocks.count
    if count < 2:
        return np.zeros((0, 2), PAIR_INDEX)
    lists = chosen_search(search, count) is VisitSearch.lists and count >= INVERTED_FROM
    through = f"lists {INVERTED_VERSION}" if lists else "exact"
    key = _digest(f"nearest {partners} {through}", blocks.names)

    def searched() -> Arrays:
        bar = track("search nearest films", None) if track is not None else None
        if lists:
            return {"pairs": stored_inverted_pairs(blocks, map, partners, bar=bar)}
        keep = search_width(partners, count)[1]
        tiles = search_tiles(count, blocks.width)
        jobs = [
            (blocks.store, t, blocks.covering(t.queries), blocks.covering(t.indexed), keep)
            for t in tiles
        ]
        found = CountingMap(map, bar, len(jobs))(_tile, jobs, chunksize=1)
        return {"pairs": tiled_pairs(tiles, found, partners, count)}

    return blocks.store.kept(key, searched)["pairs"]


def stored_candidate_pairs(
    stores: VisitStores,
    keys: Sequence[str],
    map: Mapper,
    partners: int = PARTNERS,
    search: VisitSearch = VisitSearch.lists,
    track: Track | None = None,
) -> np.ndarray:
    """Each film's ``partners`` nearest films (``keys``: one per film), as pairs to verify:
    an ``(n, 2)`` array of indexes into ``keys``, sorted; the vectors and the search each
    shown on a bar of ``track`` (at 1,000,000 films some 15 and 50 minutes on two nodes)."""
    vocabulary = stored_vocabulary(stores, keys, map)
    on_films = track("film vectors", len(keys)).advance if track is not None else None
    vectors = stored_vectors(stores, keys, vocabulary, map, on_films)
    return stored_nearest(vectors, map, partners, search, track)


def stored_candidates(
    stores: VisitStores,
    keys: Sequence[str],
    map: Mapper,
    partners: int = PARTNERS,
    search: VisitSearch = VisitSearch.lists,
    track: Track | None = None,
) -> list[tuple[int, int]]:
    """``stored_candidate_pairs`` as a list of ``(i, j)`` tuples."""
    return as_tuples(stored_candidate_pairs(stores, keys, map, partners, search, track))


def _verify(job: tuple[ArrayStore, str, str]) -> VisitEvidence:
    """Worker side: the evidence of one pair read from the store (without the points, which
    stay in the worker)."""
    store, first, second = job
    evidence = verify(stored_features(store, first), stored_features(store, second))
    return VisitEvidence(evidence.matches, evidence.inliers, evidence.cells, NO_POINTS, NO_POINTS)


def verified_store(root: Path) -> ArrayStore:
    """The store of the verification's evidence below ``root``, a window of pairs a file."""
    return ArrayStore(root, f"{VERIFICATION_VERSION}/{DESCRIPTORS_VERSION}")


def stored_verified(
    store: ArrayStore,
    keys: Sequence[str],
    pairs: np.ndarray,
    map: Mapper,
    on_progress: Callable[[int], None] | None = None,
    kept: ArrayStore | None = None,
) -> list[VisitPair]:
    """The ``pairs`` (an ``(n, 2)`` array of film indexes into ``keys``) verified as visits,
    sorted by index; ``PAIRS_AT_ONCE`` pairs at a time are held as Python objects. Each
    window's evidence is kept in ``kept`` (``verified_store``) when given: a run stopped
    midway (at 1,000,000 films the verification took over half an hour on two nodes)
    verifies only the windows it had not."""
    found = []
    for start in range(0, len(pairs), PAIRS_AT_ONCE):
        window = as_tuples(pairs[start : start + PAIRS_AT_ONCE])
        jobs = [(store, keys[i], keys[j]) for i, j in window]
        key = _digest("verified", [f"{a} {b}" for _, a, b in jobs])
        stored = kept.get(key) if kept is not None else None
        if stored is None:
            rows = []
            for evidence in map(_verify, jobs, chunksize=8):
                rows.append((evidence.matches, evidence.inliers, evidence.cells))
                if on_progress is not None:
                    on_progress(1)
            stored = {"evidence": np.array(rows, np.int64).reshape(-1, 3)}
            if kept is not None:
                kept.put(key, stored)
        elif on_progress is not None:
            on_progress(len(window))
        for (i, j), (matches, inliers, cells) in zip(
            window, stored["evidence"].tolist(), strict=True
        ):
            if VisitEvidence(matches, inliers, cells, NO_POINTS, NO_POINTS).verified:
                found.append(VisitPair(i, j, matches, inliers, cells))
    return sorted(found, key=lambda v: (v.first, v.second))


def film_vectors(features: Sequence[VisitFeatures], map: Mapper | None = None) -> np.ndarray:
    """Train the vocabulary and the projection on ``features`` and compute every film's
    projected vector through ``map`` (a block of films a job): one row per film."""
    mapped = map or LocalMap(1)
    with temporary_stores(features) as (stores, keys):
        vocabulary = stored_vocabulary(stores, keys, mapped)
        blocks = stored_vectors(stores, keys, vocabulary, mapped)
        if not keys:
            return np.zeros((0, blocks.width), np.float32)
        return range_rows(blocks.store, blocks.names, 0, blocks.count)


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
