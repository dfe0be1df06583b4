"""``python -m bench.visits.real``: visits of one patient as they really are, measured on the real
development films: retrieval plus verification (``curation.visits``) on realistic revisits.

Reads the 145 real films of ``../shared/realfilms-dev`` (120 at 512 px in ``films/``, 25 at
native archive size in ``films-native/``; read in place, never copied) and says plainly that
it skipped when they are absent. At each size ("512": every film at 512 x 512; "archive":
the 512-px films upscaled to archive sizes, the native films as they are) it draws from
each film a realistic revisit (``curation.drawing.revisits.revisit``: the projection bent,
restorations, braces or an extraction, another machine's exposure with new noise) and the
old simulated visit (the easy tier, ``simulated_visit``: the source's own pixels
warped), plants shared
burned-in labels, rulers and markers on pairs of distinct films, and measures:

- retrieval recall: each visit among its film's nearest films;
- verification of every pair of the 145 distinct films (10,440), every visit and every
  labelled pair; the ROC of visits against distinct pairs and its AUC;
- the limit chosen on one half of the films (every other film by name) and reported on the
  other half: the geometric mean of the chosen half's largest distinct score and smallest
  revisit score;
- cost: describing a film, retrieval, verifying a pair.

Writes ``bench/visits/visits.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from itertools import combinations
from multiprocessing import get_context
from pathlib import Path

import cv2
import numpy as np

from bench.common.real_films import REAL_FILMS, repositioned, upscaled
from bench.common.roc import auc, roc
from curation.core.atomic import write_json
from curation.drawing.revisits import burned_in, revisit
from curation.visits import verification
from curation.visits.descriptors import WORKING_SIDE, VisitFeatures, visit_features
from curation.visits.find import candidates
from curation.visits.retrieval import PARTNERS

RESULTS = Path(__file__).with_name("visits.json")
NATIVE_FILMS = REAL_FILMS.with_name("films-native")
MARKS = (
    ("label", 0.08), ("label", 0.2), ("label", 0.4), ("ruler", 0.15), ("ruler", 0.45),
    ("marker", 0.04), ("marker", 0.12),
)  # fmt: skip


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


def _grey(path: str, size: str, seed: int) -> np.ndarray:
    grey = cv2.imread(path, cv2.IMREAD_GRAYSCALE)
    if grey is None:
        raise SystemExit(f"{path}: not a readable image.")
    native = max(grey.shape) > 1024
    if size == "512" and native:
        return cv2.resize(grey, (512, 512), interpolation=cv2.INTER_AREA)
    if size == "archive" and not native:
        return upscaled(grey, seed)
    return grey


def _film_job(job: tuple[str, str, int, int]) -> tuple[list[VisitFeatures], float]:
    """The film, its revisit and its easy visit, described at ``side`` px; CPU seconds to
    describe the film."""
    path, size, seed, side = job
    grey = _grey(path, size, seed)
    started = time.process_time()
    film = visit_features(grey, side=side)
    spent = time.process_time() - started
    return [
        film,
        visit_features(revisit(grey, seed), side=side),
        visit_features(simulated_visit(grey, seed), side=side),
    ], spent


def _mark_job(job: tuple[str, str, str, str, float, int, int]) -> list[VisitFeatures]:
    path_a, path_b, size, kind, width, seed, side = job
    marked = [
        burned_in(_grey(p, size, n), kind, width, seed) for n, p in enumerate((path_a, path_b))
    ]
    return [visit_features(g, side=side) for g in marked]


_FEATURES: list[VisitFeatures] = []


def _init(features: list[VisitFeatures]) -> None:
    _FEATURES[:] = features


def _score(pair: tuple[int, int]) -> tuple[int, int, int, float]:
    """Matches, inliers, cells and CPU seconds of one pair."""
    i, j = pair
    started = time.process_time()
    evidence = verification.verify(_FEATURES[i], _FEATURES[j])
    return evidence.matches, evidence.inliers, evidence.cells, time.process_time() - started


def _spread(values: list[int]) -> dict:
    array = np.asarray(values, float)
    return {"count": len(values), "min": float(array.min()), "median": float(np.median(array)),
            "max": float(array.max())} if len(values) else {}  # fmt: skip


def measure_size(paths: list[Path], size: str, workers: int, side: int = WORKING_SIDE) -> dict:
    """Everything at one size of film, described at ``side`` px: see the module's
    docstring."""
    count = len(paths)
    started = time.monotonic()
    context = get_context("spawn")
    with context.Pool(workers) as pool:
        described = pool.map(_film_job, [(str(p), size, n, side) for n, p in enumerate(paths)])
        marks = pool.map(
            _mark_job,
            [(str(paths[2 * k]), str(paths[2 * k + 1]), size, kind, width, 100 + k, side)
             for k, (kind, width) in enumerate(MARKS)],
        )  # fmt: skip
    films = [d[0][0] for d in described]
    revisits = [d[0][1] for d in described]
    easy = [d[0][2] for d in described]
    marked = [f for pair in marks for f in pair]
    features = films + revisits + easy + marked
    described_s = time.monotonic() - started
    started = time.monotonic()
    retrieved = set(candidates(features))
    retrieval_s = time.monotonic() - started
    revisit_pairs = [(n, count + n) for n in range(count)]
    easy_pairs = [(n, 2 * count + n) for n in range(count)]
    base = 3 * count
    mark_pairs = [(base + 2 * k, base + 2 * k + 1) for k in range(len(MARKS))]
    distinct = list(combinations(range(count), 2))
    jobs = revisit_pairs + easy_pairs + mark_pairs + distinct
    started = time.monotonic()
    with context.Pool(workers, _init, (features,)) as pool:
        scores = dict(zip(jobs, pool.map(_score, jobs, chunksize=32), strict=True))
    verify_s = time.monotonic() - started
    cells = {pair: s[2] for pair, s in scores.items()}
    chosen = set(range(0, count, 2))

    def half(pairs: list[tuple[int, int]], inside: bool) -> list[tuple[int, int]]:
        return [
            p
            for p in pairs
            if ((p[0] % count) in chosen) == inside and ((p[1] % count) in chosen) == inside
        ]

    halves = {}
    for name, inside in (("chosen", True), ("held_out", False)):
        distinct_cells = [cells[p] for p in half(distinct, inside)]
        revisit_cells = [cells[p] for p in half(revisit_pairs, inside)]
        halves[name] = {
            "films": sum(((n in chosen) == inside) for n in range(count)),
            "distinct_max": max(distinct_cells),
            "revisit_min": min(revisit_cells),
            "easy_min": min(cells[p] for p in half(easy_pairs, inside)),
        }
    limit = math.ceil(
        math.sqrt(max(1, halves["chosen"]["distinct_max"]) * halves["chosen"]["revisit_min"])
    )
    at = verification.MIN_CELLS
    for part in halves.values():
        part["closest_distinct_over_limit"] = round(part["distinct_max"] / max(1, limit), 3)
        part["closest_distinct_over_limit_in_use"] = round(part["distinct_max"] / at, 3)

    def linked(pairs: list[tuple[int, int]], least: int = at) -> int:
        return sum(cells[p] >= least and p in retrieved for p in pairs)

    distinct_rows = sorted(distinct, key=lambda p: -cells[p])[:5]
    positives = [cells[p] for p in revisit_pairs]
    negatives = [cells[p] for p in distinct]
    return {
        "films": count,
        "size": size,
        "working_side": side,
        "pairs_distinct": len(distinct),
        "limit_in_use": at,
        "limit_chosen_on_half": limit,
        "halves": halves,
        "revisits_retrieved": sum(p in retrieved for p in revisit_pairs),
        "easy_retrieved": sum(p in retrieved for p in easy_pairs),
        "revisits_verified": sum(cells[p] >= at for p in revisit_pairs),
        "revisits_linked": linked(revisit_pairs),
        "easy_linked": linked(easy_pairs),
        "distinct_verified": sum(cells[p] >= at for p in distinct),
        "distinct_linked": linked(distinct),
        "marks_linked": linked(mark_pairs),
        "at_limit_chosen_on_half": {
            "revisits_linked": linked(revisit_pairs, limit),
            "easy_linked": linked(easy_pairs, limit),
            "distinct_verified": sum(cells[p] >= limit for p in distinct),
            "marks_linked": linked(mark_pairs, limit),
        },
        "marks": [
            {"kind": kind, "width": width, "cells": cells[p], "inliers": scores[p][1]}
            for (kind, width), p in zip(MARKS, mark_pairs, strict=True)
        ],
        "auc_revisits": round(auc(positives, negatives), 6),
        "auc_easy": round(auc([cells[p] for p in easy_pairs], negatives), 6),
        "revisit_cells": _spread(positives),
        "easy_cells": _spread([cells[p] for p in easy_pairs]),
        "distinct_cells": _spread(negatives),
        "revisit_inliers": _spread([scores[p][1] for p in revisit_pairs]),
        "distinct_inliers": _spread([scores[p][1] for p in distinct]),
        "distinct_highest": [
            {
                "first": paths[i].stem,
                "second": paths[j].stem,
                "cells": cells[(i, j)],
                "inliers": scores[(i, j)][1],
                "retrieved": (i, j) in retrieved,
            }
            for i, j in distinct_rows
        ],
        "revisits_lowest": [
            {"film": paths[i].stem, "cells": cells[(i, j)], "inliers": scores[(i, j)][1]}
            for i, j in sorted(revisit_pairs, key=lambda p: cells[p])[:5]
        ],
        "roc": roc(positives, negatives),
        "cost": {
            "describe_film_cpu_ms": round(1000 * float(np.mean([d[1] for d in described])), 1),
            "verify_pair_cpu_ms": round(1000 * float(np.mean([s[3] for s in scores.values()])), 2),
            "retrieval_s": round(retrieval_s, 2),
            "retrieval_films": len(features),
            "describe_wall_s": round(described_s, 1),
            "verify_wall_s": round(verify_s, 1),
            "workers": workers,
        },
    }


def side_summary(done: dict) -> dict:
    """What a working side decides, from ``measure_size``'s figures: the margins (each
    half) and the cost of describing a film."""
    return {
        "working_side": done["working_side"],
        "size": done["size"],
        "describe_film_cpu_ms": done["cost"]["describe_film_cpu_ms"],
        "distinct_most_cells": done["distinct_cells"]["max"],
        "revisit_fewest_cells": done["revisit_cells"]["min"],
        "easy_fewest_cells": done["easy_cells"]["min"],
        "marks_most_cells": max(m["cells"] for m in done["marks"]),
        "halves": done["halves"],
        "revisits_linked": done["revisits_linked"],
        "distinct_verified": done["distinct_verified"],
    }


def measure(
    workers: int = 2,
    films: int = 0,
    sizes: tuple[str, ...] = ("512", "archive"),
    compare_sides: tuple[int, ...] = (),
) -> dict:
    """Both sizes at ``WORKING_SIDE``, and the archive size at each of ``compare_sides`` (the
    512-px films are described as they are at any side of 512 or more); ``{"skipped": ...}``
    when the real films are absent."""
    if not REAL_FILMS.is_dir() or not NATIVE_FILMS.is_dir():
        return {
            "skipped": f"bench.visits.real skipped: {REAL_FILMS.parent} is absent (it needs the "
            "real films)."
        }
    paths = sorted(REAL_FILMS.glob("*.jpg")) + sorted(NATIVE_FILMS.glob("*.jpg"))
    if films:
        paths = paths[: films // 2] + paths[-(films - films // 2) :]
    return {
        "source": "real films, ../shared/realfilms-dev (120 at 512 px, 25 at native archive size)",
        "partners_per_film": PARTNERS,
        "verification": verification.VERIFICATION_VERSION,
        **{f"at_{size}": measure_size(paths, size, workers) for size in sizes},
        "working_sides": [
            side_summary(measure_size(paths, "archive", workers, side)) for side in compare_sides
        ],
    }


def run(
    workers: int = 2,
    films: int = 0,
    compare_sides: tuple[int, ...] = (),
    sizes: tuple[str, ...] = ("512", "archive"),
) -> dict:
    """Measure, write ``bench/visits/visits.json`` (unless skipped; a subset says so in ``films``;
    the sizes not measured are kept from the previous file), say what was done."""
    results = measure(workers, films, sizes, compare_sides)
    if "skipped" in results:
        print(results["skipped"])
        return results
    previous = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
    kept = {k: v for k, v in previous.items() if k.startswith("at_") and k not in results}
    write_json(RESULTS, {"subset_of_films": films or None, **kept, **results})
    for key, done in results.items():
        if key.startswith("at_"):
            print(
                f"bench.visits.real ({done['size']}, {done['films']} films): revisits linked "
                f"{done['revisits_linked']}/{done['films']}, easy "
                f"{done['easy_linked']}/{done['films']}, distinct verified "
                f"{done['distinct_verified']}/{done['pairs_distinct']} (linked "
                f"{done['distinct_linked']}), marks linked "
                f"{done['marks_linked']}/{len(MARKS)}, AUC {done['auc_revisits']}, limit "
                f"{done['limit_in_use']} (chosen on half: {done['limit_chosen_on_half']})"
            )
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--films", type=int, default=0, help="a subset: half from each end of the sorted list"
    )
    parser.add_argument(
        "--compare-sides",
        type=int,
        nargs="*",
        default=[],
        help="working sides (px) to compare at archive size besides WORKING_SIDE, e.g. 768 1024",
    )
    parser.add_argument(
        "--sizes", nargs="+", choices=("512", "archive"), default=["512", "archive"]
    )
    args = parser.parse_args(argv)
    run(args.workers, args.films, tuple(args.compare_sides), tuple(args.sizes))


if __name__ == "__main__":
    main()
