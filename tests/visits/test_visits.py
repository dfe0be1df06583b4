"""Visits of one patient (``curation.visits``): realistic revisits verified, distinct films and
films sharing a burned-in label not, and retrieval finding what the old vote shortlist
missed; on films the project draws itself (``support/film_kit.py``)."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from curation.drawing.revisits import bent, burned_in, jpeg, re_exposed, revisit, treated
from curation.features.features import film_features
from curation.features.shortlist import feature_shortlist
from curation.same_picture.frame_check import SHORTLIST_PER_FILM
from curation.visits import descriptors, verification
from curation.visits.descriptors import VisitFeatures, visit_features
from curation.visits.find import candidates, find_visits
from curation.visits.verification import MIN_CELLS, verify
from support.film_kit import film

SIZE = (1280, 660)  # a film of the archive's shape at half size: described at 320 px

# Measured by ``uv run --frozen python -m bench.visits.real`` on the 145 real development
# films (docs/margins.md, "Visits"; bench/visits/visits.json): the most cells a pair of
# distinct real films of the chosen half reached at either size, and the fewest any realistic
# revisit reached.
DISTINCT_MOST = 9
VISIT_LEAST = 49


def grey(picture: np.ndarray) -> np.ndarray:
    return np.clip(picture + 0.5, 0, 255).astype(np.uint8)


def harsh_revisit(picture: np.ndarray, seed: int) -> np.ndarray:
    """A revisit bent twice as far as a typical one, with two restorations, through two
    other machines (new noise each time), written at JPEG quality 70."""
    rng = np.random.default_rng(seed)
    out = treated(bent(picture, rng, 2.0), rng, 2)
    return jpeg(re_exposed(re_exposed(out, rng), rng), 70)


@pytest.fixture(scope="module")
def kit() -> dict[str, VisitFeatures]:
    """Six distinct films, a realistic revisit of film0, harsh revisits of film0 and film1,
    and film4 and film5 carrying one burned-in label."""
    films = {f"film{n}": grey(film(100 + n, SIZE)) for n in range(6)}
    made = dict(films)
    made["revisit0"] = revisit(films["film0"], 1)
    made["harsh0"] = harsh_revisit(films["film0"], 0)
    made["harsh1"] = harsh_revisit(films["film1"], 1)
    made["label4"] = burned_in(films["film4"], "label", 0.3, 7)
    made["label5"] = burned_in(films["film5"], "label", 0.3, 7)
    return {name: visit_features(picture) for name, picture in made.items()}


def test_a_realistic_revisit_is_verified_and_distinct_films_are_not(kit):
    """The revisit is bent across the arch, re-noised by another machine and treated."""
    assert verify(kit["film0"], kit["revisit0"]).verified
    assert verify(kit["film0"], kit["harsh0"]).verified
    for a, b in [("film0", "film1"), ("film1", "film2"), ("film2", "film3"), ("film3", "film0")]:
        evidence = verify(kit[a], kit[b])
        assert not evidence.verified and evidence.cells < MIN_CELLS / 2


def test_a_pair_scores_the_same_whichever_film_comes_first(kit):
    """The strips are cut across one film and the ratio test looks one way: the films are
    fitted in one canonical order, so the evidence (and the decision) is the pair's own."""
    names = ["film0", "revisit0", "harsh0", "film1", "harsh1", "label4", "label5"]
    for n, a in enumerate(names):
        for b in names[n + 1 :]:
            ab, ba = verify(kit[a], kit[b]), verify(kit[b], kit[a])
            assert (ab.matches, ab.inliers, ab.cells) == (ba.matches, ba.inliers, ba.cells)
            assert np.array_equal(ab.points_a, ba.points_b)
            assert np.array_equal(ab.points_b, ba.points_a)


def brute_force_matches(a: VisitFeatures, b: VisitFeatures) -> np.ndarray:
    """Mutual nearest neighbours passing the ratio test, from the full distance matrix."""
    unit_a, unit_b = a.unit.astype(np.float64), b.unit.astype(np.float64)
    squared = ((unit_a[:, None, :] - unit_b[None, :, :]) ** 2).sum(axis=2)
    order = np.argsort(squared, axis=1)
    nearest, second = order[:, 0], order[:, 1]
    rows = np.arange(len(unit_a))
    passed = squared[rows, nearest] < verification.RATIO**2 * squared[rows, second]
    mutual = squared.argmin(axis=0)[nearest] == rows
    kept = rows[passed & mutual]
    return np.stack([kept, nearest[kept]], axis=1)


def test_matches_are_the_mutual_ratio_test_matches_of_the_full_distances(kit):
    """Searching back only from the rows of B that a passing row points to loses no match."""
    for a, b in [
        ("film0", "revisit0"),
        ("film0", "harsh0"),
        ("film0", "film1"),
        ("label4", "label5"),
    ]:
        found = verification.mutual_matches(kit[a], kit[b])
        assert len(found) > 0
        assert np.array_equal(found, brute_force_matches(kit[a], kit[b]))


def test_a_shared_burned_in_label_links_no_two_films(kit, monkeypatch):
    """The label is masked; described anyway, its matches sit in too few cells of the grid."""
    assert not verify(kit["label4"], kit["label5"]).verified
    monkeypatch.setattr(descriptors, "anatomy_mask", lambda small: np.full_like(small, 255))
    unmasked = [
        visit_features(burned_in(grey(film(100 + n, SIZE)), "label", 0.3, 7)) for n in (4, 5)
    ]
    evidence = verify(*unmasked)
    assert evidence.inliers > 0  # the label's matches are there to be refused
    assert not evidence.verified


def test_the_limit_sits_inside_the_measured_margin_and_decides(kit, monkeypatch):
    """The limit is above the closest distinct real pair and at most the weakest real-film
    revisit; moved to the distinct side it links distinct films, moved past the revisits it
    loses a revisit."""
    assert DISTINCT_MOST < MIN_CELLS <= VISIT_LEAST
    distinct = verify(kit["film0"], kit["film1"])
    monkeypatch.setattr(verification, "MIN_CELLS", distinct.cells)
    assert distinct.verified
    weakest = min(verify(kit["film0"], kit[name]).cells for name in ("revisit0", "harsh0"))
    monkeypatch.setattr(verification, "MIN_CELLS", weakest + 1)
    assert not all(verify(kit["film0"], kit[n]).verified for n in ("revisit0", "harsh0"))


def test_the_limit_is_at_least_twice_the_closest_distinct_real_pair():
    """The margin the limit keeps on the distinct side (docs/margins.md, "Visits")."""
    assert 2 * DISTINCT_MOST <= MIN_CELLS


def test_retrieval_finds_harsh_revisits_the_vote_shortlist_missed(kit):
    names = [f"film{n}" for n in range(6)] + ["harsh0", "harsh1"]
    nearest = set(candidates([kit[n] for n in names], partners=1))
    assert {(0, 6), (1, 7)} <= nearest
    pictures = [grey(film(100 + n, SIZE)) for n in range(6)]
    pictures += [harsh_revisit(pictures[0], 0), harsh_revisit(pictures[1], 1)]
    shortlist = set(feature_shortlist([film_features(p) for p in pictures], SHORTLIST_PER_FILM))
    assert not {(0, 6), (1, 7)} <= shortlist


def test_find_visits_names_exactly_the_revisits(kit):
    names = [f"film{n}" for n in range(4)] + ["revisit0", "harsh1", "label4", "label5"]
    found = find_visits([kit[n] for n in names])
    assert [(names[v.first], names[v.second]) for v in found] == [
        ("film0", "revisit0"),
        ("film1", "harsh1"),
    ]
    assert all(v.cells >= MIN_CELLS for v in found)


def test_a_featureless_film_is_no_visit_of_anything(kit):
    blank = visit_features(np.full((660, 1280), 128, np.uint8))
    assert len(blank.points) == 0
    assert not verify(kit["film0"], blank).verified and not verify(blank, kit["film0"]).verified


def test_a_jpeg_is_decoded_at_the_largest_reduction_that_keeps_the_working_side():
    """libjpeg's scaled decode does the first shrinking: 1/8 of a 2,560-px film keeps 320 px,
    768 px needs 1/2; the full size is reported either way."""
    picture = grey(film(7, (2560, 1280)))
    data = cv2.imencode(".jpg", picture, [cv2.IMWRITE_JPEG_QUALITY, 90])[1].tobytes()
    for side, width in ((320, 320), (768, 1280), (4096, 2560)):
        decoded, size = descriptors.described_grey(data, side)
        assert (decoded.shape[1], size) == (width, (2560, 1280))
    assert descriptors.described_grey(data)[0].shape[1] >= descriptors.WORKING_SIDE
