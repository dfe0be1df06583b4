"""Candidate visits that do not need the same exposure: each film summarised by a VLAD vector
of its RootSIFT descriptors, and each film's nearest films by cosine similarity (faiss).

VLAD (vectors of locally aggregated descriptors): a small visual vocabulary is trained on
the build's own descriptors (faiss k-means, a fixed seed and a fixed subsample: the same
films give the same words); each film adds up, per word, how its descriptors differ from
the word's centre. Each word's sum is normalised on its own, so a pattern repeated many times
within a film (a brace's brackets, a ruler's ticks) weighs no more than one word, and the
signed square root damps the words every film holds. A bag of words with tf-idf was
measured first and dropped: with a thousand descriptors a film, a visit ranked anywhere
among a few dozen films, where VLAD ranked it first or second (docs/design.md, "Visits of
one patient"). Each film keeps only its vector: retrieval never needs the descriptors.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass

import faiss
import numpy as np
from threadpoolctl import threadpool_limits

from curation.hashes.mapped_pairs import one_openmp_thread
from curation.visits.descriptors import QUANTUM, VisitFeatures

WORDS = 64  # vocabulary size: a film's vector has WORDS x 128 components
TRAINING_PER_FILM = 128  # descriptors per film the vocabulary is trained on (evenly chosen)
TRAINING_MAX = 131_072  # descriptors at most, whatever the number of films
KMEANS_ITERATIONS = 20
KMEANS_SEED = 35
PROJECTED_WIDTH = 2048  # components a vector keeps for the search (``VectorProjection``)
WHITENING = 0.5  # each direction divided by its deviation to this power (1: fully whitened)
PROJECTION_FILMS = 2048  # films at most the projection is trained on (evenly chosen)
GRAM_COLUMNS = 1024  # components summed into the sample's Gram matrix at a time
PARTNERS = 8  # nearest films kept per film
PAIR_INDEX = np.int32  # a film's index in a pair: up to 2**31 films
RETRIEVAL_VERSION = (
    f"vlad{WORDS}-train{TRAINING_PER_FILM}-{TRAINING_MAX}-seed{KMEANS_SEED}"
    f"-pca{PROJECTED_WIDTH}-{PROJECTION_FILMS}-w{WHITENING}"
)


def one_thread(index: faiss.Index, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``index.search`` on one OpenMP thread (``one_openmp_thread``)."""
    with one_openmp_thread():
        distances, found = index.search(np.ascontiguousarray(query, np.float32), k)
    return distances, found


@dataclass(frozen=True)
class Vocabulary:
    """Visual words: centroids of RootSIFT descriptors."""

    centroids: np.ndarray  # (words, 128) float32

    @property
    def digest(self) -> str:
        """What names the vectors this vocabulary computes (their store's version)."""
        return hashlib.sha256(np.ascontiguousarray(self.centroids).tobytes()).hexdigest()[:16]

    def vector(self, features: VisitFeatures) -> np.ndarray:
        """The film's VLAD vector: per word, the sum of its descriptors' differences from
        the centre, normalised; signed square root; unit length (zero without descriptors)."""
        words, width = self.centroids.shape
        summed = np.zeros((words, width), np.float32)
        if len(features.descriptors):
            unit = features.unit
            index = faiss.IndexFlatL2(width)
            index.add(self.centroids)
            nearest = one_thread(index, unit, 1)[1][:, 0]
            np.add.at(summed, nearest, unit - self.centroids[nearest])
        norms = np.linalg.norm(summed, axis=1, keepdims=True)
        summed /= np.maximum(norms, 1e-12)
        flat = summed.ravel()
        flat = np.sign(flat) * np.sqrt(np.abs(flat))
        norm = float(np.linalg.norm(flat))
        return flat / norm if norm > 0 else flat


def evenly_chosen(count: int, most: int) -> np.ndarray:
    """Indexes of at most ``most`` of ``count`` items: every one, else evenly spread from the
    first to the last (deterministic: the same items give the same choice)."""
    if count <= most:
        return np.arange(count)
    return np.unique(np.linspace(0, count - 1, most).astype(int))


def sampled_films(count: int) -> tuple[np.ndarray, int]:
    """Which of ``count`` films the vocabulary is trained on (indexes, evenly chosen when
    there are more than ``TRAINING_MAX``) and how many descriptors each gives: at most
    ``TRAINING_MAX`` descriptors in all, whatever the number of films."""
    per_film = max(1, min(TRAINING_PER_FILM, TRAINING_MAX // max(1, count)))
    return evenly_chosen(count, TRAINING_MAX), per_film


def film_sample(descriptors: np.ndarray, per_film: int) -> np.ndarray:
    """``per_film`` of one film's descriptors (uint8 rows), evenly chosen: deterministic."""
    count = len(descriptors)
    return descriptors[evenly_chosen(count, per_film)] if count else descriptors[:0]


def train_vocabulary(sample: np.ndarray, words: int = WORDS) -> Vocabulary:
    """A vocabulary of at most ``words`` words trained on ``sample`` (uint8 RootSIFT rows;
    fewer words for a small build: faiss asks at least 39 training descriptors a word)."""
    if len(sample) < 2:
        return Vocabulary(np.zeros((1, 128), np.float32))
    unit = np.ascontiguousarray(sample, np.uint8).astype(np.float32)
    unit /= QUANTUM  # in place: at ``TRAINING_MAX`` rows a second copy is 67 MB of the driver's
    count = max(1, min(words, len(unit) // 39))
    kmeans = faiss.Kmeans(128, count, niter=KMEANS_ITERATIONS, seed=KMEANS_SEED, verbose=False)
    with one_openmp_thread():
        kmeans.train(unit)
    return Vocabulary(np.ascontiguousarray(kmeans.centroids, np.float32))


def projection_films(count: int) -> np.ndarray:
    """Which of ``count`` films the projection is trained on: every film up to
    ``PROJECTION_FILMS``, else that many evenly chosen."""
    return evenly_chosen(count, PROJECTION_FILMS)


@dataclass(frozen=True)
class VectorProjection:
    """The vectors' principal directions, partly whitened: centred on the sample's mean,
    projected on its ``PROJECTED_WIDTH`` strongest directions, each divided by the square
    root of its deviation (``WHITENING``), and of unit length again. The exact search costs
    each film the number of films times the width: at 8,192 components it grew with the
    square of the archive past everything else. At 2,048 (every direction of the sample) a
    real revisit among 64,000 distractors was out of reach once in 145, at 1,024 three times,
    and unwhitened more (docs/scale.md, "The visits' search at scale")."""

    mean: np.ndarray  # (vector width,) float32
    components: np.ndarray  # (vector width, projected width) float32, whitening folded in

    @property
    def digest(self) -> str:
        """What names the vectors this projection gives (their store's version)."""
        parts = (np.ascontiguousarray(self.mean), np.ascontiguousarray(self.components))
        return hashlib.sha256(b"".join(part.tobytes() for part in parts)).hexdigest()[:16]

    def apply(self, vectors: np.ndarray) -> np.ndarray:
        """``vectors`` (one row each) projected, float32 rows of unit length; a film without
        descriptors (a zero vector) stays zero: similar to nothing."""
        rows = np.asarray(vectors, np.float32)
        with threadpool_limits(limits=1):
            projected = (rows - self.mean) @ self.components
        norms = np.linalg.norm(projected, axis=1, keepdims=True)
        projected /= np.maximum(norms, 1e-12)
        projected[~rows.any(axis=1)] = 0
        return np.ascontiguousarray(projected, np.float32)


def train_projection(
    sample: np.ndarray, width: int = PROJECTED_WIDTH, whitening: float = WHITENING
) -> VectorProjection:
    """The projection on the ``width`` principal directions of ``sample``'s rows (vectors).
    Computed from the centred rows' Gram matrix (numpy's ``eigh``, on one thread: the same
    sums on every machine), as the sample has fewer rows than the vectors have components;
    a direction of no weight is dropped, so a small set projects narrower."""
    rows = np.asarray(sample, np.float32)
    mean = rows.mean(axis=0, dtype=np.float64) if len(rows) else np.zeros(rows.shape[1])
    rows = rows - mean.astype(np.float32)  # float32: the sample is held twice at most
    gram = np.zeros((len(rows), len(rows)))
    with threadpool_limits(limits=1):
        for start in range(0, rows.shape[1], GRAM_COLUMNS):  # float64 sums, a slice at a time
            part = rows[:, start : start + GRAM_COLUMNS].astype(np.float64)
            gram += part @ part.T
        values, directions = np.linalg.eigh(gram)
    del gram
    order = np.argsort(values, kind="stable")[::-1][:width]
    order = order[values[order] > max(float(values.max(initial=0.0)), 1.0) * 1e-9]
    if not len(order):  # every film alike: one direction, every similarity nought
        return VectorProjection(mean.astype(np.float32), np.zeros((rows.shape[1], 1), np.float32))
    deviation = np.sqrt(values[order] / len(rows))
    scaled = (directions[:, order] / np.sqrt(values[order]) / deviation**whitening).astype(
        np.float32
    )
    with threadpool_limits(limits=1):
        components = rows.T @ scaled
    return VectorProjection(mean.astype(np.float32), np.ascontiguousarray(components, np.float32))


# The search: each film's PARTNERS + 1 most similar films (itself among them), exactly as one
# faiss flat search over every film chooses them, computed in tiles (a block of query films
# against a block of indexed films) that hold only their two blocks' vectors. Two things make
# the tiles choose as the flat search does:
# - the similarities are bit for bit the flat search's: BLAS sums a product in an order that
#   depends on the matrices' shapes, so the tiles are faiss's own blocks of the flat search
#   (``distance_compute_blas_query_bs`` queries by ``..._database_bs`` films), computed on the
#   same path (BLAS, or faiss's own loop below its threshold);
# - ties are decided as faiss's heap decides them: a film enters only when strictly more
#   similar than the heap's least, which goes out (the smallest index among equals). That
#   choice depends only on the films at least as similar as the last one kept: at most
#   PARTNERS of them more similar, and of the equals at most PARTNERS + 1 that come first.
#   So a tile keeps the ``2 * (PARTNERS + 1) - 1`` best by (similarity, then smallest
#   index), the merge keeps as many per query, and the heap is replayed on them.


@dataclass(frozen=True)
class Tile:
    """One block of a flat search: query films ``queries`` against indexed films ``indexed``
    (index ranges), ``blas`` when the flat search computes its products with BLAS."""

    queries: range
    indexed: range
    blas: bool


def search_tiles(count: int, width: int) -> list[Tile]:
    """The blocks of a flat search of ``count`` vectors of ``width`` among themselves, query
    block by query block (faiss's own block sizes and path)."""
    query_block = int(faiss.cvar.distance_compute_blas_query_bs)
    index_block = int(faiss.cvar.distance_compute_blas_database_bs)
    blas = count * width >= int(faiss.cvar.distance_compute_blas_threshold)
    return [
        Tile(range(q, min(q + query_block, count)), range(i, min(i + index_block, count)), blas)
        for q in range(0, count, query_block)
        for i in range(0, count, index_block)
    ]


@contextmanager
def blas_products() -> Iterator[None]:
    """faiss computes inner products with BLAS inside the block, whatever the number of
    queries (a tile's block of a flat search that used BLAS), the setting put back after."""
    threshold = faiss.cvar.distance_compute_blas_threshold
    faiss.cvar.distance_compute_blas_threshold = 0
    try:
        yield
    finally:
        faiss.cvar.distance_compute_blas_threshold = threshold


def tile_best(
    tile: Tile, queries: np.ndarray, indexed: np.ndarray, keep: int
) -> tuple[np.ndarray, np.ndarray]:
    """The ``keep`` best indexed films of each query of a tile (``queries`` and ``indexed``:
    the two blocks' vectors): similarities and film indexes, by similarity then index.

    faiss is asked for one more than ``keep``: where that one is strictly less similar than
    the last kept, the ``keep`` are the best whatever the order of equals. Only a query
    whose boundary is tied is searched again in full (the same products: the whole tile
    again, so that BLAS sums as before); ordering every indexed film of every query cost
    more than the products themselves (docs/scale.md, "The visits' search at scale")."""
    index = faiss.IndexFlatIP(indexed.shape[1])
    index.add(np.ascontiguousarray(indexed, np.float32))
    count = len(indexed)
    with blas_products() if tile.blas else nullcontext():
        similarity, found = one_thread(index, queries, min(count, keep + 1))
        if count <= keep:
            return _best(similarity, found + tile.indexed.start, keep)
        tied = similarity[:, keep] == similarity[:, keep - 1]
        best = _best(similarity[:, :keep], found[:, :keep] + tile.indexed.start, keep)
        if tied.any():
            every, films = one_thread(index, queries, count)
            again = _best(every[tied], films[tied] + tile.indexed.start, keep)
            best[0][tied], best[1][tied] = again
    return best


def _best(similarity: np.ndarray, films: np.ndarray, keep: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the ``keep`` best (similarity, then smallest film index)."""
    order = np.lexsort((films, -similarity), axis=1)[:, :keep]
    return np.take_along_axis(similarity, order, 1), np.take_along_axis(films, order, 1)


def merge_best(
    best: tuple[np.ndarray, np.ndarray] | None, tile: tuple[np.ndarray, np.ndarray], keep: int
) -> tuple[np.ndarray, np.ndarray]:
    """The ``keep`` best of a query block over the tiles merged so far and one more."""
    if best is None:
        return tile
    return _best(np.hstack([best[0], tile[0]]), np.hstack([best[1], tile[1]]), keep)


def heap_choice(similarity: np.ndarray, films: np.ndarray, k: int) -> list[int]:
    """The ``k`` films faiss's heap keeps when it meets these candidates in index order."""
    heap = [(-math.inf, -1)] * k
    for value, film in sorted(zip(similarity.tolist(), films.tolist(), strict=True), key=_film):
        least = min(heap)
        if value > least[0]:
            heap[heap.index(least)] = (value, film)
    return [film for _, film in heap]


def _film(candidate: tuple[float, int]) -> int:
    return candidate[1]


def block_pairs(queries: range, best: tuple[np.ndarray, np.ndarray], k: int) -> np.ndarray:
    """The pairs ``(i, j)``, ``i < j``, of each query ``i`` of a block and its chosen films,
    as rows of an ``(n, 2)`` array (a pair twice when both films chose each other)."""
    firsts: list[int] = []
    seconds: list[int] = []
    for i, similarity, films in zip(queries, best[0], best[1], strict=True):
        chosen = [j for j in heap_choice(similarity, films, k) if j != i]
        firsts += [i] * len(chosen)
        seconds += chosen
    pairs = np.column_stack([np.array(firsts, PAIR_INDEX), np.array(seconds, PAIR_INDEX)])
    return np.sort(pairs, axis=1)


def search_width(partners: int, count: int) -> tuple[int, int]:
    """How many films each query chooses (itself among them) and how many candidates a tile
    and the merge keep for the heap's replay."""
    k = min(count, partners + 1)
    return k, 2 * k - 1


def tiled_pairs(
    tiles: Sequence[Tile], found: Iterable[tuple[np.ndarray, np.ndarray]], partners: int, count: int
) -> np.ndarray:
    """The pairs the flat search chooses, from each tile's best (``tile_best``, in the order of
    ``tiles``: query block by query block), merged per query block as they come: an
    ``(n, 2)`` array of film indexes, ``i < j`` in each row, each pair once, sorted. An array,
    not a tuple per pair: the driver holds every pair until they are verified (docs/scale.md,
    "The driver's memory per source file")."""
    k, keep = search_width(partners, count)
    blocks = [np.zeros((0, 2), PAIR_INDEX)]
    best = None
    for n, (tile, tile_found) in enumerate(zip(tiles, found, strict=True)):
        best = merge_best(best, tile_found, keep)
        if n + 1 == len(tiles) or tiles[n + 1].queries != tile.queries:
            blocks.append(block_pairs(tile.queries, best, k))
            best = None
    return np.unique(np.concatenate(blocks), axis=0)


def as_tuples(pairs: np.ndarray) -> list[tuple[int, int]]:
    """An ``(n, 2)`` array of pairs as a list of ``(i, j)`` tuples of ints."""
    return [(i, j) for i, j in pairs.tolist()]


def nearest_films(vectors: np.ndarray, partners: int = PARTNERS) -> list[tuple[int, int]]:
    """Each film's ``partners`` most similar films (inner product of unit vectors), as pairs
    ``(i, j)`` with ``i < j``, each once, sorted: the flat search's choice, tile by tile."""
    count = len(vectors)
    if count < 2:
        return []
    keep = search_width(partners, count)[1]
    tiles = search_tiles(count, vectors.shape[1])
    found = (
        tile_best(tile, vectors[_slice(tile.queries)], vectors[_slice(tile.indexed)], keep)
        for tile in tiles
    )
    return as_tuples(tiled_pairs(tiles, found, partners, count))


def _slice(films: range) -> slice:
    return slice(films.start, films.stop)
