"""What ``bench.same_picture.frames`` makes of its pairs' figures: each copy's outcome (dropped,
linked or kept apart) per alteration and strength, the distributions of every gate's figure on
both sides, and each gate's margin between the smallest copy and the largest distinct pair."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import asdict

import numpy as np

from bench.same_picture.records import PairFigures
from curation.core.vocabulary import LOOKALIKE_DISTANCE
from curation.same_picture import frame_check


def _outcome(row: PairFigures) -> str:
    frame = row.frame_same and row.shortlisted is not False
    if row.whole_frame or frame:
        return "dropped"
    return "linked" if row.best_distance <= LOOKALIKE_DISTANCE else "kept apart"


def _counted(row: PairFigures) -> bool:
    """Enough inliers for the part of the frames the pair shares (``required_inliers``)."""
    return row.per_whole_frame >= frame_check.FEATURES.min_inliers


def summarise(rows: list[PairFigures]) -> dict:
    """Outcomes per alteration and strength; distributions and margins of both sides."""
    outcomes: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for row in rows:
        if row.kind not in ("visit", "distinct"):
            outcomes[f"{row.kind} {row.strength}"][_outcome(row)] += 1
    needing = [r for r in rows if r.kind not in ("visit", "distinct") and not r.whole_frame]
    distinct = [r for r in rows if r.kind in ("visit", "distinct")]

    def spread(values: list[float]) -> dict:
        finite = sorted(v for v in values if math.isfinite(v))
        if not finite:
            return {"count": len(values), "finite": 0}
        pick = np.percentile(finite, [0, 5, 50, 95, 100])
        return {
            "count": len(values),
            "finite": len(finite),
            "p0_5_50_95_100": pick.round(4).tolist(),
        }

    sides = {
        "copies the whole-frame check misses": needing,
        "simulated visits": [r for r in rows if r.kind == "visit"],
        "distinct films": [r for r in rows if r.kind == "distinct"],
    }
    distributions = {
        name: {
            "pairs": len(side),
            "inliers": spread([r.inliers for r in side]),
            "inlier_share": spread([r.inlier_share for r in side]),
            "overlap": spread([r.overlap for r in side]),
            "aligned_difference": spread([r.difference for r in side]),
            "tile_shift": spread([r.shift for r in side]),
            "anatomy_correlation": spread([r.anatomy for r in side]),
        }
        for name, side in sides.items()
    }
    films = [r for r in distinct if r.kind == "distinct"]  # visits fail on their geometry
    lowest_copy = {
        "inliers": min((r.inliers for r in needing), default=0),
        "per_whole_frame": min((r.per_whole_frame for r in needing), default=0.0),
        "inlier_share": min((r.inlier_share for r in needing), default=0.0),
    }
    highest_distinct = {
        "inliers": max((r.inliers for r in films), default=0),
        "per_whole_frame": max((r.per_whole_frame for r in films), default=0.0),
        "inlier_share": max((r.inlier_share for r in films), default=0.0),
    }
    copy_differences = [r.difference for r in needing if _counted(r)]
    distinct_differences = [
        r.difference for r in distinct if _counted(r) and math.isfinite(r.difference)
    ]
    margins = {
        "inliers": {
            "largest_distinct": highest_distinct["inliers"],
            "smallest_copy": lowest_copy["inliers"],
        },
        "inliers per whole frame shared": {
            "limit": frame_check.FEATURES.min_inliers,
            "largest_distinct": highest_distinct["per_whole_frame"],
            "smallest_copy": lowest_copy["per_whole_frame"],
        },
        "inlier_share": {
            "limit": frame_check.FEATURES.min_inlier_share,
            "largest_distinct": round(highest_distinct["inlier_share"], 4),
            "smallest_copy": round(lowest_copy["inlier_share"], 4),
        },
        "aligned_difference": {
            "limit": frame_check.ALIGNED.aligned_limit,
            "largest_copy (features agree)": round(max(copy_differences, default=0.0), 4),
            "smallest_distinct (features agree)": round(
                min(distinct_differences, default=math.inf), 4
            ),
        },
    }
    copy_shifts = [r.shift for r in needing if _counted(r)]
    distinct_shifts = [r.shift for r in distinct if _counted(r) and math.isfinite(r.shift)]
    margins["tile_shift"] = {
        "limit": frame_check.ALIGNED.shift_limit,
        "largest_copy (features agree)": round(max(copy_shifts, default=0.0), 4),
        "smallest_distinct (features agree)": round(min(distinct_shifts, default=math.inf), 4),
    }
    copy_ranks = [r.anatomy for r in needing if _counted(r)]
    distinct_ranks = [r.anatomy for r in distinct if _counted(r)]
    margins["anatomy_correlation"] = {
        "limit": frame_check.ALIGNED.min_anatomy_correlation,
        "smallest_copy (features agree)": round(min(copy_ranks, default=0.0), 4),
        "largest_distinct (features agree)": round(max(distinct_ranks, default=0.0), 4),
    }
    by_kind: dict[str, dict] = {}
    for row in needing:
        seen = by_kind.setdefault(
            f"{row.kind} {row.strength}",
            {
                "min_inliers": row.inliers,
                "max_difference": 0.0,
                "max_shift": 0.0,
                "min_anatomy": 1.0,
            },
        )
        seen["min_anatomy"] = round(min(seen["min_anatomy"], row.anatomy), 4)
        seen["max_turn"] = round(max(seen.get("max_turn", 0.0), abs(row.turn)), 4)
        seen["max_scale_change"] = round(
            max(seen.get("max_scale_change", 0.0), row.scale_change), 5
        )
        seen["min_inliers"] = min(seen["min_inliers"], row.inliers)
        seen["min_per_whole_frame"] = min(
            seen.get("min_per_whole_frame", row.per_whole_frame), row.per_whole_frame
        )
        seen["max_difference"] = round(max(seen["max_difference"], row.difference), 4)
        seen["max_shift"] = round(max(seen["max_shift"], row.shift), 4)
    failures = [asdict(r) for r in needing if _outcome(r) != "dropped"][:40]
    return {
        "outcomes": {k: dict(v) for k, v in sorted(outcomes.items())},
        "distinct_confirmed": sum(r.frame_same for r in distinct),
        "distributions": distributions,
        "margins": margins,
        "copies_by_kind (the whole-frame check misses)": dict(sorted(by_kind.items())),
        "not_dropped_examples": failures,
        "visits": [
            {
                k: asdict(r)[k]
                for k in (
                    "first",
                    "inliers",
                    "difference",
                    "shift",
                    "turn",
                    "scale_change",
                    "frame_same",
                )
            }
            for r in rows
            if r.kind == "visit"
        ][:200],
    }
