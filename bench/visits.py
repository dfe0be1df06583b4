"""``python -m bench.visits``: visits of one patient verified by local features, measured on
real radiographs.

Reads the 120 real panoramic radiographs of ``../shared/realfilms-dev/films`` (512 x 512 RGB
JPEG, squashed from the archives' wider frame; read here, never copied into the repository)
and says plainly that it skipped when the folder is absent. From each film it simulates
another visit of the same patient at typical strength (``simulated_visit``) and measures both
sides of ``curation.lookalikes.visits``: every visit against its film (goal: >= 95% verified, and
shortlisted), and every pair of distinct real films, 7,140 (goal: 0 verified). The same again
on a subset upscaled to real archive sizes (~2,440-2,950 x 1,270-1,435). Writes
``bench/visits.json`` with the distributions and margins.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import asdict, dataclass
from itertools import combinations
from multiprocessing import get_context
from pathlib import Path

import cv2
import numpy as np

from bench.real_films import REAL_FILMS, repositioned, upscaled
from curation.core.atomic import write_json
from curation.features.features import FilmFeatures, film_features, match_features
from curation.features.shortlist import feature_shortlist
from curation.lookalikes.visits import MIN_INLIER_SHARE, MIN_INLIERS, SHORTLIST_PER_FILM, verified

RESULTS = Path(__file__).with_name("visits.json")


def _jpeg_round_trip(grey: np.ndarray, quality: int) -> np.ndarray:
    _, data = cv2.imencode(".jpg", grey, [cv2.IMWRITE_JPEG_QUALITY, quality])
    return np.asarray(cv2.imdecode(data, cv2.IMREAD_GRAYSCALE))


def _positioned(grey: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The patient stands differently: scale 2-5%, shift 1-3%, turn 1-3 degrees, and the
    arch's curve bends by 0.5-1.5% of the height (a smooth non-rigid warp)."""
    height, width = grey.shape
    scale = 1 + rng.choice([-1, 1]) * rng.uniform(0.02, 0.05)
    turn = rng.choice([-1, 1]) * rng.uniform(1.0, 3.0)
    shift = rng.uniform(0.01, 0.03, 2) * (width, height) * rng.choice([-1, 1], 2)
    bend = rng.choice([-1, 1]) * rng.uniform(0.005, 0.015) * height
    return repositioned(grey, scale, turn, shift, bend, border=cv2.BORDER_REFLECT)


def _treated(grey: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A new restoration (a bright filled blob on a tooth) or an extraction (a tooth's
    region filled with the surrounding tone)."""
    height, width = grey.shape
    x = int(rng.integers(width // 4, 3 * width // 4))
    y = int(rng.integers(height * 2 // 5, height * 3 // 5))
    axes = (max(2, width // 60), max(3, height // 22))
    treated = grey.copy()
    if rng.random() < 0.5:
        cv2.ellipse(treated, (x, y), axes, 0, 0, 360, 245, -1)
        return treated
    mask = np.zeros_like(grey)
    cv2.ellipse(mask, (x, y), (axes[0] * 2, axes[1]), 0, 0, 360, 255, -1)
    return cv2.inpaint(treated, mask, 5, cv2.INPAINT_TELEA)


def simulated_visit(grey: np.ndarray, seed: int) -> np.ndarray:
    """Another visit of the same patient at typical strength: repositioned and bent
    (``_positioned``), another exposure (gamma 0.8-1.25, contrast 0.9-1.1), another crop
    (1-4% of each border) and resolution (x0.8-1.25), treated (``_treated``), and written at
    JPEG quality 60-95."""
    rng = np.random.default_rng(seed)
    visit = _positioned(grey, rng)
    tone = (visit / 255.0) ** rng.uniform(0.8, 1.25) * 255
    tone = (tone - 128) * rng.uniform(0.9, 1.1) + 128 + rng.uniform(-10, 10)
    visit = np.clip(tone, 0, 255).astype(np.uint8)
    visit = _treated(visit, rng)
    height, width = visit.shape
    top, bottom = (rng.uniform(0.01, 0.04, 2) * height).astype(int)
    left, right = (rng.uniform(0.01, 0.04, 2) * width).astype(int)
    visit = visit[top : height - bottom, left : width - right]
    factor = rng.uniform(0.8, 1.25)
    size = (round(visit.shape[1] * factor), round(visit.shape[0] * factor))
    visit = cv2.resize(visit, size, interpolation=cv2.INTER_AREA)
    return _jpeg_round_trip(visit, int(rng.integers(60, 96)))


@dataclass(frozen=True)
class PairFigures:
    kind: str  # "visit" or "distinct"
    first: str
    second: str
    matches: int
    inliers: int
    share: float
    verified: bool


def _pair_figures(kind: str, names: tuple[str, str], a: FilmFeatures, b: FilmFeatures):
    match = match_features(a, b)
    return PairFigures(
        kind, *names, match.matches, match.inliers, round(match.inlier_share, 4), verified(match)
    )


_FEATURES: list[FilmFeatures] = []
_NAMES: list[str] = []


def _init(features: list[FilmFeatures], names: list[str]) -> None:
    _FEATURES[:], _NAMES[:] = features, names


def _distinct(pair: tuple[int, int]) -> PairFigures:
    i, j = pair
    return _pair_figures("distinct", (_NAMES[i], _NAMES[j]), _FEATURES[i], _FEATURES[j])


def _film_job(job: tuple[str, int, bool]) -> tuple[FilmFeatures, FilmFeatures]:
    path, seed, upscale = job
    grey = cv2.imread(path, cv2.IMREAD_GRAYSCALE)
    if grey is None:
        raise SystemExit(f"{path}: not a readable image.")
    if upscale:
        grey = upscaled(grey, seed)
    return film_features(grey), film_features(simulated_visit(grey, seed))


def _spread(values: list[float]) -> dict:
    if not values:
        return {}
    array = np.asarray(values, dtype=float)
    return {
        "count": len(values),
        "min": float(array.min()),
        "p5": float(np.percentile(array, 5)),
        "median": float(np.median(array)),
        "p95": float(np.percentile(array, 95)),
        "max": float(array.max()),
    }


def measure_set(paths: list[Path], upscale: bool, workers: int) -> dict:
    """Visits and all distinct pairs of ``paths`` (at their size or upscaled)."""
    names = [p.stem for p in paths]
    jobs = [(str(p), n, upscale) for n, p in enumerate(paths)]
    started = time.monotonic()
    with get_context("spawn").Pool(workers) as pool:
        pairs = pool.map(_film_job, jobs)
    originals = [a for a, _ in pairs]
    visits = [b for _, b in pairs]
    rows = [
        _pair_figures("visit", (name, name + "-visit"), a, b)
        for name, a, b in zip(names, originals, visits, strict=True)
    ]
    shortlist = set(feature_shortlist(originals + visits, SHORTLIST_PER_FILM))
    count = len(paths)
    shortlisted = sum((n, n + count) in shortlist for n in range(count))
    with get_context("spawn").Pool(workers, _init, (originals, names)) as pool:
        rows += pool.map(_distinct, list(combinations(range(count), 2)), chunksize=64)
    visit_rows = [r for r in rows if r.kind == "visit"]
    distinct = [r for r in rows if r.kind == "distinct"]
    return {
        "films": count,
        "upscaled": upscale,
        "seconds": round(time.monotonic() - started, 1),
        "visits_verified": sum(r.verified for r in visit_rows),
        "visits_shortlisted": shortlisted,
        "distinct_pairs": len(distinct),
        "distinct_verified": sum(r.verified for r in distinct),
        "visit_inliers": _spread([r.inliers for r in visit_rows]),
        "visit_share": _spread([r.share for r in visit_rows]),
        "distinct_inliers": _spread([r.inliers for r in distinct]),
        "distinct_share": _spread([r.share for r in distinct]),
        "distinct_highest": [asdict(r) for r in sorted(distinct, key=lambda r: -r.inliers)[:5]],
        "visits_lowest": [asdict(r) for r in sorted(visit_rows, key=lambda r: r.inliers)[:5]],
    }


def measure(films: int = 120, upscaled_films: int = 24, workers: int = 2) -> dict:
    """Both sides at the films' size (all of them) and upscaled (the first ``upscaled_films``
    by name); ``{"skipped": ...}`` when the real films are absent."""
    if not REAL_FILMS.is_dir():
        return {
            "skipped": f"bench.visits skipped: {REAL_FILMS} is absent (it needs the 120 real "
            "films)."
        }
    paths = sorted(REAL_FILMS.glob("*.jpg"))[:films]
    return {
        "source": "real films, ../shared/realfilms-dev (512 x 512 RGB JPEG, squashed)",
        "thresholds": {"min_inliers": MIN_INLIERS, "min_inlier_share": MIN_INLIER_SHARE},
        "at_film_size": measure_set(paths, False, workers),
        "upscaled": measure_set(paths[:upscaled_films], True, workers),
    }


def run(films: int = 120, upscaled_films: int = 24, workers: int = 2) -> dict:
    """Measure, write ``bench/visits.json`` (unless skipped) and say what was done."""
    results = measure(films, upscaled_films, workers)
    if "skipped" in results:
        print(results["skipped"])
        return results
    write_json(RESULTS, results)
    for part in ("at_film_size", "upscaled"):
        done = results[part]
        print(
            f"bench.visits ({part}, {done['films']} real films): visits verified "
            f"{done['visits_verified']}/{done['films']}, distinct pairs verified "
            f"{done['distinct_verified']}/{done['distinct_pairs']}; {RESULTS}"
        )
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--films", type=int, default=120)
    parser.add_argument("--upscaled-films", type=int, default=24)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    run(args.films, args.upscaled_films, args.workers)


if __name__ == "__main__":
    main()
