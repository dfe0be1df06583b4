"""Visits of one patient (``curation.lookalikes.visits``) and the feature shortlist
(``curation.features.shortlist``), on films the project makes itself (``support/film_kit.py``)."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from curation.features.features import FeatureMatch, FilmFeatures, film_features, match_features
from curation.features.shortlist import feature_shortlist
from curation.lookalikes import visits
from curation.lookalikes.visits import MIN_INLIER_SHARE, MIN_INLIERS, verified, verified_pairs
from support.film_kit import film

SIZE = (1280, 660)  # a film of the archive's shape, at half size: features are detected at 512

# Measured by ``uv run --frozen python -m bench.visits`` on the 120 real films of
# ../shared/realfilms-dev (bench/RESULTS.md, "Visits of one patient"): the most any pair of
# distinct real films reached, and the least any simulated visit of a real film reached.
DISTINCT_MOST = (53, 0.3655)
VISIT_LEAST = (613, 0.8358)


def grey(picture: np.ndarray) -> np.ndarray:
    return np.clip(picture + 0.5, 0, 255).astype(np.uint8)


def visit_of(picture: np.ndarray, seed: int) -> np.ndarray:
    """Another visit, made here without the code under test: the patient stands 3% closer,
    turned 2 degrees and shifted; the arch bent by 1% of the height; another exposure; a new
    filling; another crop; JPEG quality 75."""
    rng = np.random.default_rng(seed)
    height, width = picture.shape
    moved = cv2.getRotationMatrix2D((width / 2, height / 2), 2.0, 1.03)
    moved[:, 2] += (0.015 * width, -0.01 * height)
    ys, xs = np.mgrid[0:height, 0:width].astype(np.float32)
    inverse = cv2.invertAffineTransform(moved)
    unbent = ys - 0.01 * height * np.sin(np.pi * xs / width)
    map_x = inverse[0, 0] * xs + inverse[0, 1] * unbent + inverse[0, 2]
    map_y = inverse[1, 0] * xs + inverse[1, 1] * unbent + inverse[1, 2]
    maps = map_x.astype(np.float32), map_y.astype(np.float32)
    out = cv2.remap(grey(picture), *maps, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT)
    out = np.clip(255 * (out / 255.0) ** 0.85 * 1.05 + 5, 0, 255).astype(np.uint8)
    x, y = int(rng.integers(width // 4, 3 * width // 4)), height // 2
    cv2.ellipse(out, (x, y), (width // 60, height // 22), 0, 0, 360, 245, -1)
    out = out[height // 40 : height - height // 50, width // 30 : width - width // 45]
    _, data = cv2.imencode(".jpg", out, [cv2.IMWRITE_JPEG_QUALITY, 75])
    return cv2.imdecode(data, cv2.IMREAD_GRAYSCALE)


@pytest.fixture(scope="module")
def kit() -> dict[str, FilmFeatures]:
    """Four distinct films, a visit of the first two, and a crop of the third."""
    pictures = {f"film{n}": film(100 + n, SIZE) for n in range(4)}
    made = {name: grey(p) for name, p in pictures.items()}
    made["visit0"] = visit_of(pictures["film0"], 1)
    made["visit1"] = visit_of(pictures["film1"], 2)
    height, width = made["film2"].shape
    made["crop2"] = made["film2"][height // 20 : -height // 20, width // 20 : -width // 20].copy()
    return {name: film_features(picture) for name, picture in made.items()}


def test_a_visit_is_verified_and_distinct_films_are_not(kit):
    for name in ("visit0", "visit1"):
        match = match_features(kit[f"film{name[-1]}"], kit[name])
        assert verified(match), (name, match.inliers, match.inlier_share)
    distinct = [f"film{n}" for n in range(4)] + ["visit0"]
    for a in distinct:
        for b in distinct:
            if a < b and {a, b} != {"film0", "visit0"}:
                match = match_features(kit[a], kit[b])
                assert not verified(match), (a, b, match.inliers, match.inlier_share)


def test_verified_pairs_finds_exactly_the_related_films(kit):
    names = sorted(kit)
    found = verified_pairs([kit[n] for n in names])
    pairs = {(names[v.first], names[v.second]) for v in found}
    assert pairs == {("film0", "visit0"), ("film1", "visit1"), ("crop2", "film2")}
    # The caller's same-picture judgement removes a pair (here: the crop).
    same = {(names.index("crop2"), names.index("film2"))}
    kept = verified_pairs([kit[n] for n in names], lambda i, j: (i, j) in same)
    assert {(names[v.first], names[v.second]) for v in kept} == pairs - {("crop2", "film2")}


def _match(inliers: int, share: float) -> FeatureMatch:
    empty = np.zeros((0, 2), np.float32)
    return FeatureMatch(int(inliers / share), inliers, None, empty, empty)  # share >= share


def test_each_threshold_decides_and_sits_inside_the_measured_margin(kit):
    """Both limits decide on their own, and each lies between the most distinct real films
    reached and the least a simulated visit reached, with the margins the README states
    (inliers 1.5x above the distinct maximum; share 1.2x above it): moving either limit out
    of that band fails here."""
    assert verified(_match(MIN_INLIERS, MIN_INLIER_SHARE))
    assert not verified(_match(MIN_INLIERS - 1, 0.99))
    assert not verified(_match(10 * MIN_INLIERS, MIN_INLIER_SHARE - 0.01))
    assert not verified(_match(*DISTINCT_MOST))
    assert verified(_match(*VISIT_LEAST))
    assert 1.5 * DISTINCT_MOST[0] <= MIN_INLIERS <= VISIT_LEAST[0] / 5
    assert 1.2 * DISTINCT_MOST[1] <= MIN_INLIER_SHARE <= VISIT_LEAST[1] / 1.5


def test_thresholds_moved_to_the_distinct_side_verify_distinct_films(kit, monkeypatch):
    """The project-made films' own distinct pairs reach some inliers: with the limits at
    zero they would be verified, so the limits (not the matching) keep them apart."""
    monkeypatch.setattr(visits, "MIN_INLIERS", 0)
    monkeypatch.setattr(visits, "MIN_INLIER_SHARE", 0.0)
    assert visits.verified(match_features(kit["film2"], kit["film3"]))


def test_shortlist_names_visits_and_copies_deterministically_and_linearly(kit):
    names = sorted(kit)
    features = [kit[n] for n in names]
    shortlist = feature_shortlist(features, per_film=2)
    assert shortlist == feature_shortlist(features, per_film=2)
    assert shortlist == sorted(set(shortlist)) and all(i < j for i, j in shortlist)
    assert len(shortlist) <= 2 * len(names)
    named = {(names[i], names[j]) for i, j in shortlist}
    assert {("film0", "visit0"), ("film1", "visit1"), ("crop2", "film2")} <= named


def test_shortlist_finds_a_turned_copy_and_handles_a_featureless_film(kit):
    picture = grey(film(120, SIZE))
    height, width = picture.shape
    turned = cv2.warpAffine(
        picture, cv2.getRotationMatrix2D((width / 2, height / 2), 3, 1), (width, height)
    )
    blank = np.full((200, 300), 128, np.uint8)
    features = [film_features(picture), kit["film3"], film_features(turned), film_features(blank)]
    assert len(features[3].descriptors) == 0
    assert (0, 2) in feature_shortlist(features, per_film=1)
