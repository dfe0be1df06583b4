"""``python -m bench.same_picture.crop_gate``: the frame check's feature gate on crops that keep
50-60 % of each side of a real film, against every pair of distinct real films.

A crop's inliers are bounded by the features its original has in the part it keeps (36 % of
the frame at 60 % of each side, 25 % at half of each side), found at another scale than the
crop's own: the gate counts inliers per whole frame shared
(``FeatureGate.required_inliers``). This part measures both sides of that count on the real
radiographs of ``../shared/realfilms-dev`` (read in place; skipped with one sentence when
absent): each film at its own size (512 x 512), upscaled to an archive size
(``bench.common.real_films.upscaled``), and the grey archive-sized ones, each cropped to 50, 55
and 60 % of each side (centred) and put through the whole frame check
(``curation.same_picture.frame_check.compare_frames``); and every pair of distinct films of
each set, whose features' fit gives the part the two frames would share (``kept_by_fit``).
Both halves of the films are reported (even-numbered: where the limit is chosen; odd: held
out); a distinct pair belongs to a half when both its films do. The figures go to
``bench/same_picture/crop_gate.json``.

    uv run --frozen python -m bench.same_picture.crop_gate   # about 6 minutes on 2 loaded cores
    uv run --frozen python -m bench.same_picture.crop_gate --films 24 --archive 6  # quick
"""

from __future__ import annotations

import io
import json
import sys
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path

import numpy as np
from PIL import Image

from bench.common.real_films import REAL_FILMS, upscaled
from bench.same_picture.alterations import jpeg
from bench.same_picture.records import kept_by_fit, measured_on_film_sets
from curation.core.parallel import ordered_map
from curation.features.features import FilmFeatures, film_features, match_features, working_grey
from curation.same_picture import frame_check
from support.film_kit import cropped

RESULTS = Path(__file__).with_name("crop_gate.json")
ARCHIVE_FILMS = REAL_FILMS.parent / "films-native"
KEPT_SIDES = (0.5, 0.55, 0.6)  # share of each side a crop keeps


@dataclass(frozen=True)
class CropJob:
    index: int
    path: str
    upscale: bool


def per_whole_frame(inliers: int, kept: float) -> float:
    """Inliers per whole frame shared, as the gate counts them (``required_inliers``)."""
    return inliers / max(kept, frame_check.FRAMING.min_overlap)


def measure_crops(job: CropJob) -> tuple[FilmFeatures, list[dict]]:
    """One film's features, and its crops through the whole frame check (worker side)."""
    data = Path(job.path).read_bytes()
    grey = np.asarray(Image.open(io.BytesIO(data)).convert("L"))
    if job.upscale:
        grey = upscaled(grey, job.index)
        data = jpeg(grey, 92)
    original = working_grey(data)
    features = film_features(*original)
    rows = []
    for side in KEPT_SIDES:
        copy = working_grey(jpeg(cropped(grey, (1 - side) / 2)))
        match = match_features(features, film_features(*copy))
        frame = frame_check.compare_frames(original[0], copy[0], (original[1], copy[1]), match)
        kept = min(frame.overlap_a, frame.overlap_b)
        rows.append(
            {
                "film": job.index,
                "kept_side": side,
                "inliers": frame.inliers,
                "inlier_share": frame.inlier_share,
                "kept": kept,
                "per_whole_frame": round(per_whole_frame(frame.inliers, kept), 1),
                "features_agree": frame.features_agree,
                "same_picture": frame.same_picture,
                "old_gate (120 inliers)": frame.inliers >= 120,
            }
        )
    return features, rows


_FEATURES: list[FilmFeatures] = []  # set before the distinct pairs' workers fork


def _distinct(pair: tuple[int, int]) -> dict:
    a, b = _FEATURES[pair[0]], _FEATURES[pair[1]]
    match = match_features(a, b)
    kept = kept_by_fit(match.transform, a.size, b.size)
    return {
        "films": pair,
        "inliers": match.inliers,
        "inlier_share": round(match.inlier_share, 4),
        "kept_by_fit": round(kept, 4),
        "per_whole_frame": round(per_whole_frame(match.inliers, kept), 1),
        "settled_without_pixels": frame_check.without_pixels(match) is not None,
    }


def _sides(crops: list[dict], distinct: list[dict]) -> dict:
    """Each crop size's fewest inliers and fewest per whole frame, the distinct pairs' most."""
    found: dict = {}
    for side in KEPT_SIDES:
        rows = [r for r in crops if r["kept_side"] == side]
        found[f"crops to {side:.0%} of each side"] = {
            "pairs": len(rows),
            "fewest_inliers": min(r["inliers"] for r in rows),
            "fewest_per_whole_frame": min(r["per_whole_frame"] for r in rows),
            "smallest_share": min(r["inlier_share"] for r in rows),
            "features_agree": sum(r["features_agree"] for r in rows),
            "same_picture": sum(r["same_picture"] for r in rows),
            "old_gate_inliers_pass": sum(r["old_gate (120 inliers)"] for r in rows),
        }
    found["distinct films"] = {
        "pairs": len(distinct),
        "most_inliers": max(r["inliers"] for r in distinct),
        "most_per_whole_frame": max(r["per_whole_frame"] for r in distinct),
        "largest_share": max(r["inlier_share"] for r in distinct),
        "reach_the_pixels": sum(not r["settled_without_pixels"] for r in distinct),
    }
    return found


def _halves(crops: list[dict], distinct: list[dict]) -> dict:
    return {
        name: _sides(
            [r for r in crops if r["film"] % 2 == parity],
            [r for r in distinct if all(f % 2 == parity for f in r["films"])],
        )
        for name, parity in (("even (chosen on)", 0), ("odd (held out)", 1))
    }


def measure(films: int = 120, upscaled_films: int = 120, archive_films: int = 25, workers: int = 2):
    """Crops and distinct pairs of each set; see the module docstring."""
    if not REAL_FILMS.is_dir():
        return {"measured": False, "why": f"skipped: no real films in {REAL_FILMS}"}
    paths = sorted(REAL_FILMS.glob("*.jpg"))[:films]
    archive = sorted(ARCHIVE_FILMS.glob("*.jpg"))[:archive_films]
    found: dict = {
        "measured": True,
        "limit (min_inliers per whole frame shared)": frame_check.FEATURES.min_inliers,
    }
    for label, chosen, upscale in (
        ("native", paths, False),
        ("upscaled", paths[:upscaled_films], True),
        ("archive-sized", archive, False),
    ):
        jobs = [CropJob(i, str(p), upscale) for i, p in enumerate(chosen)]
        measured = list(ordered_map(measure_crops, jobs, workers, 1))
        _FEATURES[:] = [features for features, _ in measured]
        crops = [row for _, rows in measured for row in rows]
        pairs = list(combinations(range(len(jobs)), 2))
        distinct = list(ordered_map(_distinct, pairs, workers, 64))
        found[label] = {
            "films": len(jobs),
            **_sides(crops, distinct),
            "halves": _halves(crops, distinct),
            "crops the gate refuses": [r for r in crops if not r["same_picture"]],
        }
    return found


def main(argv: list[str] | None = None) -> None:
    found = measured_on_film_sets(
        argv, "python -m bench.same_picture.crop_gate", __doc__, measure, RESULTS, 120
    )
    if found is not None:
        json.dump({k: v for k, v in found.items() if k != "measured"}, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
