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

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import faiss
import numpy as np

from curation.visits.descriptors import QUANTUM, VisitFeatures

WORDS = 64  # vocabulary size: a film's vector has WORDS x 128 components
TRAINING_PER_FILM = 128  # descriptors per film the vocabulary is trained on (evenly chosen)
TRAINING_MAX = 131_072  # descriptors at most, whatever the number of films
KMEANS_ITERATIONS = 20
KMEANS_SEED = 35
PARTNERS = 8  # nearest films kept per film
RETRIEVAL_VERSION = f"vlad{WORDS}-train{TRAINING_PER_FILM}-{TRAINING_MAX}-seed{KMEANS_SEED}"


@contextmanager
def one_openmp_thread() -> Iterator[None]:
    """faiss on one OpenMP thread inside the block, the process's setting put back after:
    the executor's processes fill the cores, and idle OpenMP threads spin (training the
    vocabulary on every thread burned about twenty times the CPU of one thread: docs/design.md,
    "Visits of one patient"); one thread also sums in one order on every machine."""
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(threads)


def one_thread(index: faiss.Index, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``index.search`` on one OpenMP thread (``one_openmp_thread``)."""
    with one_openmp_thread():
        distances, found = index.search(np.ascontiguousarray(query, np.float32), k)
    return distances, found


@dataclass(frozen=True)
class Vocabulary:
    """Visual words: centroids of RootSIFT descriptors."""

    centroids: np.ndarray  # (words, 128) float32

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


def training_sample(features: Sequence[VisitFeatures]) -> np.ndarray:
    """Up to ``TRAINING_PER_FILM`` descriptors of each film, evenly chosen, at most
    ``TRAINING_MAX`` in all: deterministic."""
    per_film = max(1, min(TRAINING_PER_FILM, TRAINING_MAX // max(1, len(features))))
    rows = []
    for film in features:
        count = len(film.descriptors)
        if count:
            chosen = np.unique(np.linspace(0, count - 1, min(per_film, count)).astype(int))
            rows.append(film.descriptors[chosen])
    if not rows:
        return np.zeros((0, 128), np.float32)
    return np.concatenate(rows).astype(np.float32) / QUANTUM


def train_vocabulary(features: Sequence[VisitFeatures], words: int = WORDS) -> Vocabulary:
    """A vocabulary of at most ``words`` words (fewer for a small build: faiss asks at least
    39 training descriptors a word)."""
    sample = training_sample(features)
    count = max(1, min(words, len(sample) // 39))
    if len(sample) < 2:
        return Vocabulary(np.zeros((1, 128), np.float32))
    kmeans = faiss.Kmeans(128, count, niter=KMEANS_ITERATIONS, seed=KMEANS_SEED, verbose=False)
    with one_openmp_thread():
        kmeans.train(sample)
    return Vocabulary(np.ascontiguousarray(kmeans.centroids, np.float32))


def nearest_films(vectors: np.ndarray, partners: int = PARTNERS) -> list[tuple[int, int]]:
    """Each film's ``partners`` most similar films (inner product of unit vectors, faiss
    exact search), as pairs ``(i, j)`` with ``i < j``, each once, sorted."""
    count = len(vectors)
    if count < 2:
        return []
    index = faiss.IndexFlatIP(vectors.shape[1])
    index.add(np.ascontiguousarray(vectors, np.float32))
    _, found = one_thread(index, vectors, min(count, partners + 1))
    pairs = {
        (min(i, int(j)), max(i, int(j)))
        for i, row in enumerate(found)
        for j in row
        if j >= 0 and j != i
    }
    return sorted(pairs)
