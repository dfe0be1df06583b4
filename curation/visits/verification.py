"""Verification that fits a revisit: two films are one patient's when many RootSIFT matches
agree with a geometry that bends like a panoramic projection, and spread across the arch.

A panoramic film of the same jaw taken again is no single affine transform of the first:
the head's tilt, turn and forward/back position bend the projection across the arch (the
front teeth widen while the molars narrow, one side rises). So the matches (ratio test and
mutual nearest neighbours) pass a loose global fit first (MAGSAC affine, a tolerance of a
few percent of the frame: the coarse placement), then each overlapping strip of the arch
(by x in film A) gets its own tight affine fit: a match counts when the fit of a strip
holding it explains it. The evidence is the number of distinct grid cells such matches
cover, counted on each film and the smaller kept: a burned-in label, ruler or marker, however
many matches it makes, sits in a few cells, and the anatomy mask
(``curation.visits.descriptors``) keeps most such marks from being described at all.

The two films are always fitted in one canonical order (by their features, whichever film
is passed first), so that a pair scores the same both ways: the strips are cut across one
film and the ratio test looks one way, so the order would otherwise move the score by a few
cells. Limits and their margins: docs/design.md, "Visits of one patient".
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import faiss
import numpy as np

from curation.visits.descriptors import VisitFeatures
from curation.visits.retrieval import one_thread

RATIO = 0.8  # Lowe's ratio test on Euclidean distances
LOOSE_TOLERANCE = 0.05  # of the longest side: the global fit's tolerance (the bending)
TIGHT_TOLERANCE = 0.01  # of the longest side: a strip's fit
STRIPS = 6  # overlapping strips across the arch, each a third of the width
STRIP_WIDTH = 1 / 3
MIN_STRIP_INLIERS = 6  # a strip fit explaining fewer is chance
GRID = (12, 6)  # cells across and down each film: the evidence's spread
# Grid cells (of 72) a visit's counted matches must cover. Measured by ``python -m
# bench.visits.real`` on every pair of the 145 real development films (docs/margins.md,
# "Visits"): on the chosen half distinct films reach at most 9 cells at either size and
# realistic revisits at least 52; the limit is their geometric mean, 2.4x above the one and
# 2.4x below the other. On the held-out half distinct films reach 8 (0.36 of the limit) and
# revisits at least 49; over every pair the closest distinct pair (archive size) reaches 11.
MIN_CELLS = 22
VERIFICATION_VERSION = (
    f"verify-v2/canonical-order-cells-both/ratio{RATIO}-mutual/loose{LOOSE_TOLERANCE}-strips{STRIPS}x{STRIP_WIDTH:.3f}-"
    f"tight{TIGHT_TOLERANCE}-min{MIN_STRIP_INLIERS}/grid{GRID[0]}x{GRID[1]}"
)


@dataclass(frozen=True)
class VisitEvidence:
    """What the verification found between films A and B."""

    matches: int  # mutual ratio-test matches
    inliers: int  # of those, explained by a strip's fit
    cells: int  # distinct grid cells holding an inlier that counts, the fewer of A's and B's
    points_a: np.ndarray  # (inliers, 2) in A's fractions of the frame, for drawing
    points_b: np.ndarray  # (inliers, 2) the same in B

    @property
    def verified(self) -> bool:
        return self.cells >= MIN_CELLS


def _framed(features: VisitFeatures) -> np.ndarray:
    """Points in units of the film's longest side (the aspect kept)."""
    width, height = features.size
    longest = max(width, height, 1)
    return features.points * np.array([width / longest, height / longest], np.float32)


def mutual_matches(a: VisitFeatures, b: VisitFeatures) -> np.ndarray:
    """Index pairs (rows of A, rows of B) that pass the ratio test and are each other's
    nearest neighbours (faiss exact search). Only the rows of B that some passing row of A
    points to are searched back: between distinct films few pass, so the search back, half
    the matching's cost, mostly goes (docs/design.md, "Visits of one patient")."""
    if len(a.descriptors) < 2 or len(b.descriptors) < 2:
        return np.zeros((0, 2), np.int64)
    unit_a, unit_b = a.unit, b.unit
    index_b = faiss.IndexFlatL2(128)
    index_b.add(unit_b)
    distances, nearest = one_thread(index_b, unit_a, 2)
    passed = distances[:, 0] < RATIO * RATIO * distances[:, 1]  # squared distances
    rows = np.flatnonzero(passed)
    pointed = np.unique(nearest[rows, 0])
    back = np.full(len(unit_b), -1, np.int64)
    if len(pointed):
        index_a = faiss.IndexFlatL2(128)
        index_a.add(unit_a)
        back[pointed] = one_thread(index_a, unit_b[pointed], 1)[1][:, 0]
    rows = rows[back[nearest[rows, 0]] == rows]
    return np.stack([rows, nearest[rows, 0]], axis=1)


def _fit(source: np.ndarray, target: np.ndarray, tolerance: float) -> np.ndarray:
    """Which of the pairs one affine map (MAGSAC) explains within ``tolerance``."""
    if len(source) < 3:
        return np.zeros(len(source), bool)
    transform, mask = cv2.estimateAffine2D(
        source, target, method=cv2.USAC_MAGSAC, ransacReprojThreshold=tolerance,
        maxIters=2000, confidence=0.995,
    )  # fmt: skip
    if transform is None or mask is None:
        return np.zeros(len(source), bool)
    return mask.ravel().astype(bool)


def strip_inliers(from_a: np.ndarray, to_b: np.ndarray, span: float) -> np.ndarray:
    """Which matches the tight fit of some strip (by x in A, ``span`` wide in all) explains."""
    kept = np.zeros(len(from_a), bool)
    width = STRIP_WIDTH * span
    for start in np.linspace(0.0, span - width, STRIPS):
        inside = np.flatnonzero((from_a[:, 0] >= start) & (from_a[:, 0] < start + width))
        if len(inside) < MIN_STRIP_INLIERS:
            continue
        fitted = _fit(from_a[inside], to_b[inside], TIGHT_TOLERANCE)
        if fitted.sum() >= MIN_STRIP_INLIERS:
            kept[inside[fitted]] = True
    return kept


def _sort_key(features: VisitFeatures) -> tuple[tuple[int, int], int, bytes, bytes]:
    """What orders two films canonically: their own features, never the caller's order."""
    return (
        features.size,
        len(features.descriptors),
        np.ascontiguousarray(features.descriptors).tobytes(),
        np.ascontiguousarray(features.points).tobytes(),
    )


def verify(a: VisitFeatures, b: VisitFeatures) -> VisitEvidence:
    """The evidence that A and B are one patient's films: the same whichever is first (the
    points come back in the caller's order)."""
    if _sort_key(b) < _sort_key(a):
        found = _verify_in_order(b, a)
        return VisitEvidence(
            found.matches, found.inliers, found.cells, found.points_b, found.points_a
        )
    return _verify_in_order(a, b)


def _verify_in_order(a: VisitFeatures, b: VisitFeatures) -> VisitEvidence:
    """The evidence with the strips cut across A and the ratio test from A to B."""
    pairs = mutual_matches(a, b)
    empty = np.zeros((0, 2), np.float32)
    if len(pairs) < 3:
        return VisitEvidence(len(pairs), 0, 0, empty, empty)
    from_a = np.ascontiguousarray(_framed(a)[pairs[:, 0]])
    to_b = np.ascontiguousarray(_framed(b)[pairs[:, 1]])
    coarse = _fit(from_a, to_b, LOOSE_TOLERANCE)
    chosen = np.flatnonzero(coarse)
    span = float(max(a.size) and a.size[0] / max(a.size))
    fine = strip_inliers(from_a[chosen], to_b[chosen], span)
    inliers = pairs[chosen[fine]]
    points_a, points_b = a.points[inliers[:, 0]], b.points[inliers[:, 1]]
    cells = min(grid_cells(points_a), grid_cells(points_b))
    return VisitEvidence(len(pairs), len(inliers), cells, points_a, points_b)


def grid_cells(points: np.ndarray) -> int:
    """How many distinct cells of the ``GRID`` over the frame hold at least one point."""
    if not len(points):
        return 0
    columns = np.clip((points[:, 0] * GRID[0]).astype(int), 0, GRID[0] - 1)
    rows = np.clip((points[:, 1] * GRID[1]).astype(int), 0, GRID[1] - 1)
    return len(np.unique(rows * GRID[0] + columns))
