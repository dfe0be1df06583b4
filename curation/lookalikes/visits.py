"""Visits of one patient: two films whose local features agree under one fitted transform,
but which are not the same picture.

A second visit is a new exposure of the same jaw: the patient stands a little differently
(scale, shift, a small turn, the arch's curve), the exposure, the crop and the resolution
change, a tooth may have been filled or pulled. No global hash separates such pairs from
distinct films (visits lie 5-89 bits apart, distinct films from 43 bits), but the bone's
corners still match: many ORB matches survive the ratio test and one affine transform,
fitted by MAGSAC, explains a large share of them. Two distinct patients' films share a few
chance matches, never both many inliers and a high share (margins in ``bench/RESULTS.md``,
measured by ``uv run --frozen python -m bench.visits`` on real radiographs).

Same-picture pairs (a copy under another frame) also pass this test; the caller says which
pairs are the same picture (``same_picture``), and those are not visits.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from curation.core.parallel import LocalMap, Mapper
from curation.features.features import FeatureMatch, FilmFeatures, match_features
from curation.features.shortlist import feature_shortlist
from curation.same_picture.frame_check import SHORTLIST_PER_FILM, FrameComparison

# Measured on real radiographs (``uv run --frozen python -m bench.visits``; bench/RESULTS.md,
# "Visits of one patient" and "A cheaper detector"), with the features of ``features-v3``:
# over all 7,140 pairs of the 120 distinct real films, at most 41 inliers and a share of at
# most 0.400; simulated visits of each film at least 582 inliers and a share of at least 0.862
# (upscaled to archive sizes, 24 films: 38 / 0.279 and 706 / 0.924). Both must hold; each
# limit sits nearer the distinct side (real visits are harder than simulated ones).
MIN_INLIERS = 80  # 1.95x the distinct maximum, 7.3x below the visit minimum
MIN_INLIER_SHARE = 0.45  # 1.13x the distinct maximum, 1.92x below the visit minimum


@dataclass(frozen=True)
class VisitPair:
    """Two films (indexes, ``first < second``) verified as one patient's, with the evidence."""

    first: int
    second: int
    matches: int
    inliers: int
    share: float


def verified(match: FeatureMatch) -> bool:
    """The feature evidence of one patient: enough inliers and a high enough share."""
    return match.inliers >= MIN_INLIERS and match.inlier_share >= MIN_INLIER_SHARE


def _match(pair: tuple[FilmFeatures, FilmFeatures]) -> tuple[int, int, float, bool]:
    """Worker side: matches, inliers, share, verified."""
    match = match_features(*pair)
    return match.matches, match.inliers, round(match.inlier_share, 4), verified(match)


def verified_pairs(
    features: Sequence[FilmFeatures],
    same_picture: Callable[[int, int], bool] = lambda i, j: False,
    pairs: Sequence[tuple[int, int]] | None = None,
    map: Mapper | None = None,
) -> list[VisitPair]:
    """The visits among ``features``: each shortlisted pair (or each of ``pairs``) verified
    by features and not the same picture, sorted by index; matched through ``map`` (default:
    in this process)."""
    if pairs is None:
        pairs = feature_shortlist(features, SHORTLIST_PER_FILM)
    jobs = [(features[i], features[j]) for i, j in pairs]
    visits = []
    for (i, j), found in zip(pairs, (map or LocalMap(1))(_match, jobs, chunksize=8), strict=True):
        matches, inliers, share, ok = found
        if ok and not same_picture(i, j):
            visits.append(VisitPair(min(i, j), max(i, j), matches, inliers, share))
    return sorted(visits, key=lambda v: (v.first, v.second))


def kept_film_visits(
    films: Collection[str], checked: Mapping[tuple[str, str], FrameComparison]
) -> list[tuple[str, str, VisitPair]]:
    """The verified visits among the kept ``films`` (ids) of a build, read from the pairs the
    frame step checked (``checked``: film ids, ``a < b``; the step's shortlist is computed
    once per build, over every film still in play): a pair of two kept films is never the
    same picture (the same-picture step kept one film per picture), so every verified pair
    is a visit. ``VisitPair`` indexes the films in id order."""
    ids = sorted(films)
    index = {film: n for n, film in enumerate(ids)}
    visits = []
    for (a, b), frame in sorted(checked.items()):
        evidence = frame.inliers >= MIN_INLIERS and frame.inlier_share >= MIN_INLIER_SHARE
        if a in index and b in index and evidence and not frame.same_picture:
            share = round(frame.inlier_share, 4)
            pair = VisitPair(index[a], index[b], frame.matches, frame.inliers, share)
            visits.append((a, b, pair))
    return visits
