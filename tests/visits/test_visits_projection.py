"""The visits' search at scale: vectors projected on their partly whitened principal
directions (``VectorProjection``), and a tile that never orders every film it compares."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from curation.visits import find, retrieval
from curation.visits.find import film_vectors
from curation.visits.retrieval import (
    PROJECTED_WIDTH,
    PROJECTION_FILMS,
    Tile,
    Vocabulary,
    projection_films,
    tile_best,
    train_projection,
)

VECTOR_WIDTH = 8192  # a VLAD vector: 64 words of 128 components


def revisit_pool(films: int, loud: float, seed: int) -> np.ndarray:
    """Unit vectors, two per patient (rows 2k and 2k + 1): each visit adds, to what is the
    patient's own (300 directions), a loud part every film varies in and no two visits share
    (20 directions: the exposure, the positioning), and noise."""
    rng = np.random.default_rng(seed)
    basis = np.linalg.qr(rng.standard_normal((VECTOR_WIDTH, 320)))[0]
    common, own = basis[:, :20], basis[:, 20:]
    patients = rng.standard_normal((films, 300)) @ own.T
    rows = []
    for patient in patients:
        for _ in range(2):
            noise = rng.standard_normal(VECTOR_WIDTH) * np.sqrt(300 / VECTOR_WIDTH) * 0.3
            row = loud * common @ rng.standard_normal(20) + patient + noise
            rows.append(row / np.linalg.norm(row))
    return np.array(rows, np.float32)


def share_paired(vectors: np.ndarray, whitening: float | None = None) -> float:
    """The share of visits whose nearest film, through the projection, is the other visit."""
    trained = (
        train_projection(vectors)
        if whitening is None
        else train_projection(vectors, whitening=whitening)
    )
    projected = trained.apply(vectors)
    similarity = projected @ projected.T
    np.fill_diagonal(similarity, -np.inf)
    return float(np.mean(similarity.argmax(axis=1) == (np.arange(len(vectors)) ^ 1)))


def test_an_archive_s_vectors_are_searched_at_the_projected_width():
    """The exact search costs each film the number of films times the width: 8,192 before."""
    vectors = revisit_pool(1040, 6.0, 1)
    projected = train_projection(vectors).apply(vectors)
    assert projected.shape == (2080, PROJECTED_WIDTH) < (2080, VECTOR_WIDTH)
    assert np.allclose(np.linalg.norm(projected, axis=1), 1, atol=1e-5)


def test_loud_directions_every_film_varies_in_do_not_outweigh_the_patient():
    """The patient's own directions decide once each direction is divided by the root of its
    deviation; unwhitened they lose to the loud ones."""
    vectors = revisit_pool(520, 6.0, 1)
    assert share_paired(vectors) == 1.0
    assert share_paired(vectors, whitening=0.0) < 0.5


def test_a_set_smaller_than_the_width_is_not_whitened_into_equals():
    """Fully whitened, n films in their n - 1 directions are all equally far apart: the
    partial whitening keeps a small build's revisits nearest."""
    vectors = revisit_pool(40, 3.0, 2)
    assert share_paired(vectors) == 1.0
    assert share_paired(vectors, whitening=1.0) < 0.5


def test_a_film_without_descriptors_stays_similar_to_nothing():
    vectors = revisit_pool(40, 3.0, 2)
    vectors[5] = 0
    projected = train_projection(vectors).apply(vectors)
    assert not projected[5].any()


def test_the_build_s_vectors_are_the_projected_ones(random_features):
    vectors = film_vectors(random_features(12, 60, 4))
    assert vectors.shape == (12, 11)  # twelve films span eleven directions about their mean


def test_a_tile_asks_faiss_for_one_film_more_than_it_keeps_unless_tied(monkeypatch):
    """Ordering every indexed film of every query cost more than the products (about 1.0 s
    of a 1.85 s tile): a tile asks for ``keep + 1`` and searches in full only where the
    boundary is tied, with the same choice."""
    asked: list[int] = []
    searched = retrieval.one_thread

    def counting(index, query, k):
        asked.append(k)
        return searched(index, query, k)

    monkeypatch.setattr(retrieval, "one_thread", counting)
    rng = np.random.default_rng(6)
    queries = rng.standard_normal((64, 32)).astype(np.float32)
    indexed = rng.standard_normal((128, 32)).astype(np.float32)
    tile = Tile(range(0, 64), range(1000, 1128), False)
    _, films = tile_best(tile, queries, indexed, 17)
    assert asked == [18]
    exact = queries @ indexed.T
    for row, chosen in zip(exact, films, strict=True):
        assert set(chosen - 1000) == set(np.argsort(-row, kind="stable")[:17])

    asked.clear()
    indexed[40] = indexed[41] = indexed[42] = 0  # a tie at the boundary: similarity nought
    queries[3] = 0  # every similarity of this query nought
    _, films = tile_best(tile, queries, indexed, 17)
    assert asked == [18, 128]
    assert list(films[3]) == list(range(1000, 1017))  # equals: the smallest indexes


@pytest.mark.parametrize("films", [1, 2])
def test_one_or_two_films_project_without_failing(films):
    vectors = revisit_pool(1, 3.0, 3)[:films]
    projected = train_projection(vectors).apply(vectors)
    assert projected.shape[0] == films


def test_the_projection_is_trained_on_at_most_2048_films_evenly_chosen():
    """Every film of a small build; 2,048 of a large one, first and last among them: the
    width measured on real revisits among 64,000 distractors is that sample's."""
    assert list(projection_films(10)) == list(range(10))
    chosen = projection_films(100_000)
    assert len(chosen) == PROJECTION_FILMS == 2048
    assert chosen[0] == 0 and chosen[-1] == 99_999 and len(set(chosen)) == len(chosen)


def test_the_projection_s_job_holds_its_sample_of_vectors_once(monkeypatch, random_features):
    """The job fills one array with the sampled films' full vectors: a list of them, then a
    stacked copy, held the sample twice at the job's peak (traced, in units of the sample)."""
    films = random_features(64, 40, 5)
    vocabulary = Vocabulary(np.random.default_rng(6).random((64, 128), dtype=np.float32))
    monkeypatch.setattr(find, "stored_features", lambda store, key: films[int(key)])
    job = (None, vocabulary, [str(n) for n in range(len(films))])
    find._projection(job)  # imports and faiss's first index are not the sample
    sample_bytes = len(films) * vocabulary.centroids.size * 4
    tracemalloc.start()
    try:
        find._projection(job)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 3.8 * sample_bytes, peak / sample_bytes  # 3.3 now, 4.3 before
