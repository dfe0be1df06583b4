"""Each frame check limit lies between what real films measured on its two sides: the figures
``python -m bench.same_picture.frames`` (``bench/same_picture/frames.json``: development
films at their own size, upscaled, and archive-sized, each against its altered copies and
every other film) and ``python -m bench.same_picture.crop_gate`` (``crop_gate.json``: crops to
55 % of each side, the largest the frame gate admits, against every distinct pair) recorded.
A limit moved past the nearest film of either side fails here; where no distinct pair reached
the pixels, only the copies' side bounds the limit."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from curation.same_picture.frame_limits import ALIGNED, FEATURES

BENCH = Path(__file__).resolve().parents[2] / "bench" / "same_picture"
PARTS = ("native", "upscaled", "archive-sized")  # the films' own size, upscaled, archive-sized


def _frames(measure: str, side: str) -> list[float]:
    recorded = json.loads((BENCH / "frames.json").read_text())
    return [recorded[part]["margins"][measure][side] for part in PARTS]


def _crop_gate(case: str, figure: str) -> list[float]:
    recorded = json.loads((BENCH / "crop_gate.json").read_text())
    return [recorded[part][case][figure] for part in PARTS]


CROPS = "crops to 55% of each side"


def _inliers() -> tuple[float, float]:
    """Inliers per whole frame shared: the most a distinct pair reached, the fewest a copy."""
    measure = "inliers per whole frame shared"
    distinct = _frames(measure, "largest_distinct") + _crop_gate(
        "distinct films", "most_per_whole_frame"
    )
    copies = _frames(measure, "smallest_copy") + _crop_gate(CROPS, "fewest_per_whole_frame")
    return max(distinct), min(copies)


def _inlier_share() -> tuple[float, float]:
    distinct = _frames("inlier_share", "largest_distinct") + _crop_gate(
        "distinct films", "largest_share"
    )
    copies = _frames("inlier_share", "smallest_copy") + _crop_gate(CROPS, "smallest_share")
    return max(distinct), min(copies)


def _at_most(measure: str) -> tuple[float, float]:
    """A limit copies stay under: the largest copy, the smallest distinct pair."""
    copies = _frames(measure, "largest_copy (features agree)")
    distinct = _frames(measure, "smallest_distinct (features agree)")
    return max(copies), min(distinct)


def _at_least(measure: str) -> tuple[float, float]:
    """A limit copies stay above: the largest distinct pair, the smallest copy."""
    distinct = _frames(measure, "largest_distinct (features agree)")
    copies = _frames(measure, "smallest_copy (features agree)")
    return max(distinct), min(copies)


# limit: (its value, whether copies lie at or above it, the two sides measured: below, above)
LIMITS = {
    "FeatureGate.min_inliers": (FEATURES.min_inliers, True, _inliers),
    "FeatureGate.min_inlier_share": (FEATURES.min_inlier_share, True, _inlier_share),
    "AlignedGate.aligned_limit": (
        ALIGNED.aligned_limit,
        False,
        lambda: _at_most("aligned_difference"),
    ),
    "AlignedGate.shift_limit": (ALIGNED.shift_limit, False, lambda: _at_most("tile_shift")),
    "AlignedGate.min_anatomy_correlation": (
        ALIGNED.min_anatomy_correlation,
        True,
        lambda: _at_least("anatomy_correlation"),
    ),
}


@pytest.mark.parametrize("name", LIMITS)
def test_each_limit_lies_between_the_real_films_on_its_two_sides(name: str) -> None:
    limit, copies_above, sides = LIMITS[name]
    below, above = sides()
    if copies_above:  # distinct pairs below, copies at or above
        assert below < limit <= above, (name, below, limit, above)
    else:  # copies at or below, distinct pairs above (none reached: infinite)
        assert below <= limit < above, (name, below, limit, above)
        assert math.isfinite(below), (name, "no copy measured")
