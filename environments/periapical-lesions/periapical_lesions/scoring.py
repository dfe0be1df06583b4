"""The pure scorer: reference lesions + a filed report -> reward and its parts.

Matching is one-to-one at IoU >= 0.3 and maximum-cardinality: among all one-to-one pairings of
reported and reference boxes that overlap enough, it takes one with the most pairs, and among
those one with the most grade agreements. The score is then a property of the two sets of
boxes, not of the order a greedy pass happens to visit them (see the README for why).

The curation toolkit imports this module, so it needs nothing beyond the standard library and
numpy (for the bootstrap): the assignment is solved here in exact integer arithmetic rather
than with scipy, and nothing from the agent stack (verifiers) is imported.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from periapical_lesions.radreport import countable_lesions

IOU_THRESHOLD = 0.3
CONFIDENCE = 0.95


@dataclass(frozen=True)
class Score:
    reward: float
    lesion_f1: float
    pai_f1: float
    n_reported: int
    n_reference: int
    matched: int
    report_valid: bool
    n_dropped: int = 0
    """Reported lesions left out of the score because they fail their own checks."""

    def metrics(self) -> dict[str, float]:
        """Everything but the reward, as the floats a trace records."""
        return {
            "lesion_f1": self.lesion_f1,
            "pai_f1": self.pai_f1,
            "n_reported": float(self.n_reported),
            "n_reference": float(self.n_reference),
            "matched": float(self.matched),
            "report_valid": float(self.report_valid),
            "n_dropped": float(self.n_dropped),
        }


def iou(a: Sequence[float], b: Sequence[float]) -> float:
    """Intersection over union of two [x1, y1, x2, y2] boxes with positive area."""
    width = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    height = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = width * height
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union


def max_weight_assignment(weights: list[list[int]]) -> list[tuple[int, int]]:
    """A one-to-one assignment of every row to a distinct column with the largest total weight
    (rows <= columns), by the Hungarian method with potentials: O(rows^2 x columns), exact
    on integers. Returns (row, column) pairs."""
    rows, cols = len(weights), len(weights[0])
    row_potential = [0] * (rows + 1)
    col_potential = [0] * (cols + 1)
    owner = [0] * (cols + 1)  # owner[j]: the 1-based row assigned to column j, 0 for none
    previous = [0] * (cols + 1)
    for row in range(1, rows + 1):
        owner[0], free_col = row, 0
        slack = [float("inf")] * (cols + 1)
        visited = [False] * (cols + 1)
        while owner[free_col]:
            visited[free_col] = True
            current, delta, next_col = owner[free_col], float("inf"), 0
            for col in range(1, cols + 1):
                if visited[col]:
                    continue
                reduced = (
                    -weights[current - 1][col - 1] - row_potential[current] - col_potential[col]
                )
                if reduced < slack[col]:
                    slack[col], previous[col] = reduced, free_col
                if slack[col] < delta:
                    delta, next_col = slack[col], col
            for col in range(cols + 1):
                if visited[col]:
                    row_potential[owner[col]] += delta
                    col_potential[col] -= delta
                else:
                    slack[col] -= delta
            free_col = next_col
        while free_col:
            owner[free_col] = owner[previous[free_col]]
            free_col = previous[free_col]
    return [(owner[col] - 1, col - 1) for col in range(1, cols + 1) if owner[col]]


def match(reported: list[dict], reference: list[dict]) -> list[tuple[int, int]]:
    """Index pairs (reported, reference) of a maximum-cardinality one-to-one matching at
    IoU >= 0.3, breaking ties towards more grade agreements. Integer weights make the
    lexicographic order exact: each pair is worth `bonus` > any count of agreements.
    Boxes that overlap nothing enough are left out before solving, so a long report of
    stray boxes costs little."""
    eligible = {
        (i, j): int(found["pai"] == truth["pai"])
        for i, found in enumerate(reported)
        for j, truth in enumerate(reference)
        if iou(found["box"], truth["box"]) >= IOU_THRESHOLD
    }
    if not eligible:
        return []
    found_ids = sorted({i for i, _ in eligible})
    truth_ids = sorted({j for _, j in eligible})
    bonus = min(len(found_ids), len(truth_ids)) + 1
    weights = [
        [bonus + eligible[i, j] if (i, j) in eligible else 0 for j in truth_ids] for i in found_ids
    ]
    transposed = len(found_ids) > len(truth_ids)
    if transposed:
        weights = [list(column) for column in zip(*weights, strict=True)]
    pairs = []
    for row, col in max_weight_assignment(weights):
        a, b = (col, row) if transposed else (row, col)
        if weights[row][col] > 0:
            pairs.append((found_ids[a], truth_ids[b]))
    return sorted(pairs)


def f1(hits: int, n_reported: int, n_reference: int) -> float:
    """F1 over one-to-one matches; two empty lists agree perfectly."""
    if n_reported == 0 and n_reference == 0:
        return 1.0
    return 2 * hits / (n_reported + n_reference)


def score(reference: list[dict], report: dict | None) -> Score:
    """Score one film. A missing (None) report, or one without a lesion list, counts as no
    findings; a lesion that fails its own checks (a NaN box, a grade of 3.9) is dropped
    and the others are scored (see the README, "One bad lesion")."""
    if report is None:
        return score_lesions(reference, [], valid=False, dropped=0)
    lesions, problems = countable_lesions(report)
    if lesions is None:
        return score_lesions(reference, [], valid=False, dropped=0)
    dropped = len(report["lesions"]) - len(lesions)
    return score_lesions(reference, lesions, valid=not problems, dropped=dropped)


def score_lesions(reference: list[dict], reported: list[dict], valid: bool, dropped: int) -> Score:
    """Score lesions already judged countable (normalized boxes and integer grades)."""
    pairs = match(reported, reference)
    graded = sum(reported[i]["pai"] == reference[j]["pai"] for i, j in pairs)
    lesion_f1 = f1(len(pairs), len(reported), len(reference))
    pai_f1 = f1(graded, len(reported), len(reference))
    return Score(
        reward=0.5 * lesion_f1 + 0.5 * pai_f1,
        lesion_f1=lesion_f1,
        pai_f1=pai_f1,
        n_reported=len(reported),
        n_reference=len(reference),
        matched=len(pairs),
        report_valid=valid,
        n_dropped=dropped,
    )


@dataclass(frozen=True)
class Interval:
    mean: float
    low: float
    high: float


def bootstrap_ci(values: Sequence[float], seed: int = 0, n: int = 10_000) -> Interval:
    """The mean with a 95% percentile-bootstrap interval; seeded, so reruns print the same."""
    data = np.asarray(values, dtype=np.float64)
    if data.size == 0:
        raise ValueError("bootstrap_ci needs at least one value")
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, data.size, size=(n, data.size))].mean(axis=1)
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return Interval(mean=float(data.mean()), low=float(low), high=float(high))
