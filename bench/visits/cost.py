"""``python -m bench.visits.cost FOLDER``: what the visits step costs a film, measured on a
subset of a folder of archive-size films (e.g. the corpus's originals) and projected to the
corpus, against the cold build's own time.

The step's own parts are timed in this one process (CPU seconds, so the machine's load does
not count): describing each film (``curation.visits.step.describe_file``), the vocabulary and
every film's VLAD vector, the nearest-film search, and the verification of every retrieved
pair. The projection to ``--corpus-films`` kept films is linear in the films for describing,
the vectors and verifying (a film keeps at most ``PARTNERS`` partners), and quadratic for the
exact nearest-film search, which is timed on as many random unit vectors of the same width
(a stand-in for the corpus's vectors, labelled so). Memory: what the driver holds per film
(descriptors and points, the VLAD vector) and this process's peak RSS. With
``--compare-sides``, describing is also timed at other working sides, film by film in turn
with ``WORKING_SIDE`` (one interleaved run: the machine's load falls on every side alike).

    uv run --frozen python -m bench.visits.cost "CORPUS/Original JPG Images" --films 300
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path

import numpy as np

from curation.core.atomic import write_json
from curation.core.jpeg_check import check_decodable
from curation.visits.descriptors import WORKING_SIDE, visit_features_of
from curation.visits.find import film_vectors
from curation.visits.retrieval import PARTNERS, nearest_films
from curation.visits.step import describe_file
from curation.visits.verification import MIN_CELLS, verify

RESULTS = Path(__file__).with_name("cost.json")
BASELINE = Path(__file__).parents[1] / "results.json"


def _cpu() -> float:
    return time.process_time()


def _cold_build() -> dict:
    """The cold corpus build without the visits step, as ``bench/results.json`` records it
    (``checks_cost``, measured before the step existed); empty when not recorded."""
    if not BASELINE.is_file():
        return {}
    median = json.loads(BASELINE.read_text()).get("checks_cost", {}).get("median", {})
    current = median.get("current", {})
    return {"wall_s": current.get("build"), "cpu_s": current.get("build_cpu_s")}


def search_cpu(films: int, width: int, seed: int = 0) -> float:
    """CPU seconds of the nearest-film search over ``films`` random unit vectors of
    ``width`` components (the exact search's cost depends on the sizes only)."""
    vectors = np.random.default_rng(seed).standard_normal((films, width), np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    started = _cpu()
    nearest_films(vectors)
    return _cpu() - started


def describe_cpu_by_side(paths: list[Path], sides: list[int]) -> dict[str, float]:
    """CPU ms a film to describe at ``WORKING_SIDE`` and at each of ``sides``, each film at
    every side in turn; films the build refuses are left out."""
    spent = dict.fromkeys([WORKING_SIDE, *sides], 0.0)
    described = 0
    for path in paths:
        data = path.read_bytes()
        try:
            for side in spent:
                started = _cpu()
                visit_features_of(data, side)
                spent[side] += _cpu() - started
        except OSError:
            continue
        described += 1
    return {str(side): round(1000 * s / max(1, described), 2) for side, s in spent.items()}


def measure(folder: Path, films: int, corpus_films: int, sides: list[int] | None = None) -> dict:
    """The step's CPU per film and per pair on the first ``films`` films of ``folder`` by
    name, the driver's memory per film, and the projection to ``corpus_films``; describing
    compared with ``sides`` when given."""
    listed = sorted(p for p in folder.iterdir() if p.suffix.lower() in (".jpg", ".jpeg"))
    refused = {p.name: why for p in listed[:films] if (why := check_decodable(p.read_bytes()))}
    paths = [p for p in listed[:films] if p.name not in refused]  # the build refuses these too
    if len(paths) < 2:
        raise SystemExit(f"{folder}: fewer than two decodable JPEG films to measure.")
    started = _cpu()
    described = {}
    for path in paths:
        try:
            described[path.name] = describe_file(str(path))
        except OSError as error:  # a truncated film: the build refuses it before this step
            refused[path.name] = str(error)
    describe_s = _cpu() - started
    features = list(described.values())
    started = _cpu()
    vectors = film_vectors(features)
    vectors_s = _cpu() - started
    search_s = search_cpu(len(vectors), vectors.shape[1])
    pairs = nearest_films(vectors)
    verify_times, cells = [], []
    for i, j in pairs:
        started = _cpu()
        evidence = verify(features[i], features[j])
        verify_times.append(_cpu() - started)
        cells.append(evidence.cells)
    count = len(features)
    per_film = {
        "describe_cpu_ms": 1000 * describe_s / count,
        "vector_cpu_ms": 1000 * vectors_s / count,
        "pairs": len(pairs) / count,
        "verify_pair_cpu_ms": 1000 * float(np.mean(verify_times)),
    }
    per_film["verify_cpu_ms"] = per_film["pairs"] * per_film["verify_pair_cpu_ms"]
    corpus_search_s = search_cpu(corpus_films, vectors.shape[1])
    linear_s = (
        corpus_films
        * (per_film["describe_cpu_ms"] + per_film["vector_cpu_ms"] + per_film["verify_cpu_ms"])
        / 1000
    )
    descriptors = [f.descriptors.nbytes + f.points.nbytes for f in features]
    cold = _cold_build()
    projected = linear_s + corpus_search_s
    over = round(projected / cold["cpu_s"], 2) if cold.get("cpu_s") else None
    compared = {"describe_cpu_ms_by_side": describe_cpu_by_side(paths, sides)} if sides else {}
    return {
        "folder": str(folder),
        "films": count,
        "refused_as_the_build_refuses": refused,
        "partners_per_film": PARTNERS,
        "working_side": WORKING_SIDE,
        "per_film": {k: round(v, 2) for k, v in per_film.items()},
        "search_cpu_s": round(search_s, 3),
        "retrieved_pairs_with_a_counted_match": sum(c > 0 for c in cells),
        "retrieved_pairs_verified": sum(c >= MIN_CELLS for c in cells),
        "memory": {
            "descriptors_kib_per_film": round(float(np.mean(descriptors)) / 1024, 1),
            "vector_kib_per_film": round(vectors[0].nbytes / 1024, 1),
            "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        },
        "projection": {
            "corpus_films": corpus_films,
            "describe_vectors_verify_cpu_s": round(linear_s, 1),
            "search_cpu_s_random_stand_in": round(corpus_search_s, 1),
            "visits_step_cpu_s": round(projected, 1),
            "driver_descriptors_mib": round(corpus_films * float(np.mean(descriptors)) / 2**20),
            "cold_build_without_visits": cold,
            "over_cold_build_cpu": over,
        },
        **compared,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--films", type=int, default=300, help="films measured (first by name)")
    parser.add_argument("--corpus-films", type=int, default=4000, help="kept films projected to")
    parser.add_argument(
        "--compare-sides",
        type=int,
        nargs="*",
        default=[],
        help="working sides (px) whose describing CPU is timed in turn with WORKING_SIDE",
    )
    args = parser.parse_args(argv)
    if not args.folder.is_dir():
        parser.error(f"{args.folder}: not a folder of films.")
    results = measure(args.folder, args.films, args.corpus_films, args.compare_sides)
    write_json(RESULTS, results)
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
