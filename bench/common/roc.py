"""How well a score tells two kinds of pairs apart: the ROC and its area, for the benches that
set a limit on a score measured on real pairs."""

from __future__ import annotations

import numpy as np


def auc(positives: list[int], negatives: list[int]) -> float:
    """The ROC's area: the chance a positive scores above a negative (ties count half)."""
    pos, neg = np.asarray(positives, float), np.sort(np.asarray(negatives, float))
    below = np.searchsorted(neg, pos, "left")
    ties = np.searchsorted(neg, pos, "right") - below
    return float((below + ties / 2).sum() / (len(pos) * len(neg)))


def roc(positives: list[int], negatives: list[int]) -> list[dict]:
    """The ROC at each distinct score: true and false positive rates at limit >= score."""
    return [
        {
            "limit": int(s),
            "visits_linked": round(float(np.mean(np.asarray(positives) >= s)), 4),
            "distinct_linked": round(float(np.mean(np.asarray(negatives) >= s)), 6),
        }
        for s in sorted(set(positives) | set(negatives))
    ]
