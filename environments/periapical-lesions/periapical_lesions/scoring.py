"""The pure scorer: reference lesions + a filed report -> reward and its parts.

Matching is one-to-one at IoU >= 0.3 and maximum-cardinality: among all one-to-one pairings of
reported and reference boxes that overlap enough, it takes one with the most pairs, and among
those one with the most grade agreements. The score is then a property of the two sets of
boxes, not of the order a greedy pass happens to visit them (see the README for why).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import linear_sum_assignment

from periapical_lesions.radreport import normalized_lesions, report_problems

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

    def metrics(self) -> dict[str, float]:
        """Everything but the reward, as the floats a trace records."""
        return {
            "lesion_f1": self.lesion_f1,
            "pai_f1": self.pai_f1,
            "n_reported": float(self.n_reported),
            "n_reference": float(self.n_reference),
            "matched": float(self.matched),
            "report_valid": float(self.report_valid),
        }


def iou(a: Sequence[float], b: Sequence[float]) -> float:
    """Intersection over union of two [x1, y1, x2, y2] boxes with positive area."""
    width = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    height = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = width * height
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union


def match(reported: list[dict], reference: list[dict]) -> list[tuple[int, int]]:
    """Index pairs (reported, reference) of a maximum-cardinality one-to-one matching at
    IoU >= 0.3, breaking ties towards more grade agreements. Integer weights make the
    lexicographic order exact: each pair is worth `bonus` > any count of agreements."""
    if not reported or not reference:
        return []
    bonus = min(len(reported), len(reference)) + 1
    weights = np.zeros((len(reported), len(reference)), dtype=np.int64)
    for i, found in enumerate(reported):
        for j, truth in enumerate(reference):
            if iou(found["box"], truth["box"]) >= IOU_THRESHOLD:
                weights[i, j] = bonus + int(found["pai"] == truth["pai"])
    rows, cols = linear_sum_assignment(weights, maximize=True)
    return [(int(i), int(j)) for i, j in zip(rows, cols, strict=True) if weights[i, j] > 0]


def f1(hits: int, n_reported: int, n_reference: int) -> float:
    """F1 over one-to-one matches; two empty lists agree perfectly."""
    if n_reported == 0 and n_reference == 0:
        return 1.0
    return 2 * hits / (n_reported + n_reference)


def score(reference: list[dict], report: dict | None) -> Score:
    """Score one film. A missing (None) or invalid report counts as no findings."""
    valid = report is not None and not report_problems(report)
    reported = normalized_lesions(report) if valid else []
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
