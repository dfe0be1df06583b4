"""Matching two films' features (``curation.features.features.match_features``): faiss's
exact binary search gives the brute-force matcher's neighbours, the ratio test refuses a
tie, and the search leaves the process's thread setting as it found it."""

from __future__ import annotations

import cv2
import faiss
import numpy as np
import pytest

from curation.features.features import (
    RATIO,
    FilmFeatures,
    film_features,
    match_features,
    nearest_two,
)
from support.film_kit import film, noised


def _features(seed: int) -> FilmFeatures:
    picture = np.clip(noised(film(seed, (1280, 660)), 6.0, seed) + 0.5, 0, 255)
    return film_features(picture.astype(np.uint8))


@pytest.fixture(scope="module")
def films() -> list[FilmFeatures]:
    return [_features(seed) for seed in (11, 12, 13)]


def test_the_nearest_two_are_those_of_opencvs_brute_force_matcher(films):
    for a, b in ((films[0], films[1]), (films[1], films[2]), (films[2], films[2])):
        distances, nearest = nearest_two(b.descriptors, a.descriptors)
        pairs = cv2.BFMatcher(cv2.NORM_HAMMING).knnMatch(b.descriptors, a.descriptors, k=2)
        expected = np.array([[p[0].distance, p[1].distance] for p in pairs])
        assert np.array_equal(distances, expected)
        unique = expected[:, 0] < expected[:, 1]  # which of a tie is named may differ
        named = [p[0].trainIdx for p in pairs]
        assert np.array_equal(nearest[unique], np.asarray(named)[unique])
        passed = expected[:, 0] < RATIO * expected[:, 1]
        assert match_features(a, b).matches == int(passed.sum())


def test_a_tie_for_the_nearest_descriptor_is_no_match():
    rng = np.random.default_rng(5)
    descriptors = rng.integers(0, 256, (40, 32), dtype=np.uint8)
    descriptors[1] = descriptors[0]  # film A holds one corner twice
    points = rng.uniform(0, 500, (40, 2)).astype(np.float32)
    a = FilmFeatures(points, descriptors, (512, 512))
    b = FilmFeatures(points[:10] + 3.0, descriptors[:10].copy(), (512, 512))
    match = match_features(a, b)
    assert match.matches == 8  # B's copies of the doubled corner find two nearest at 0 bits
    assert match.inliers == 8
    assert np.allclose(match.transform, [[1, 0, -3], [0, 1, -3]], atol=1e-3)


def test_matching_leaves_the_process_thread_setting_as_it_found_it(films):
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(3)
    try:
        match_features(films[0], films[1])
        assert faiss.omp_get_max_threads() == 3
    finally:
        faiss.omp_set_num_threads(before)
