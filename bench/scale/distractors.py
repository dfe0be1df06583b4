"""``python -m bench.scale.distractors``: does the feature shortlist find copies as well among many
films as among few?

The real development films (``../shared/realfilms-dev/films``, read in place; the part says so
and stops when they are absent), each with ``KINDS_PER_FILM`` of its 38 relatives (its copies of
``bench.same_picture.alterations`` and two simulated visits,
``bench.same_picture.feature_cost.family``; the kinds taken in turn, so each is planted about
equally often: a film with all 38 in one pool makes each of its corners a key of 39 descriptors,
which no archive has), are planted among 0, 4,000, 16,000 and 64,000 synthetic distractor films,
and ``feature_shortlist`` (``SHORTLIST_PER_FILM`` partners a film, as the frame step asks) runs
over them all. For each size: how many of the planted copies and visits its pairs within the
family join to their original (directly or through other copies, as the build's groups join
confirmed pairs), and how many it proposes with the original itself, overall and per kind; its
process time per film; and the driver's memory for it, measured by ``tracemalloc``: the
descriptors it is handed (the voting quarter, all the shortlist reads) and its own peak, each
per film.

A distractor is a film of the sample's generator (``curation.drawing.anatomy``: a patient
and one shot) exposed at its low resolution, which is about the size the build decodes a
film at (a scaled JPEG decode to at least ``WORKING_SIDE``), with the render's grain, as a
JPEG at quality 90, described by ``film_features``: a film the pipeline could be handed,
without the cost of the full-size render. Distractors are made in chunks of 1,000 films
(one seed each, so the smaller sets are the first chunks of the larger) and cached with the
real films' families under ``bench/corpus/`` (git-ignored), keyed by ``FEATURES_VERSION``.

    uv run --frozen python -m bench.scale.distractors --sizes 0,4000,16000,64000
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import sys
import time
import tracemalloc
from pathlib import Path

import networkx as nx
import numpy as np

from bench.common.corpus import CORPUS_DIR
from bench.common.distractor_films import distractor_jpegs
from bench.common.real_films import REAL_FILMS
from bench.same_picture.alterations import ALTERATIONS
from bench.same_picture.feature_cost import family
from curation.core.atomic import write_bytes
from curation.core.parallel import ordered_map
from curation.features.features import FEATURES_VERSION, FilmFeatures, decoded_grey, film_features
from curation.features.shortlist import SHORTLIST_VERSION, feature_shortlist, voting
from curation.same_picture import frame_check

RESULTS = Path(__file__).with_name("distractors.json")
KINDS_PER_FILM = 4  # relatives planted with each real film (an archive files a few copies)
CHUNK = 1000  # distractor films per cached chunk (one seed each)
SEED = 39
KINDS = [f"{kind} {strength}" for kind, strength in ALTERATIONS] + [
    "visit (bench.frames)",
    "visit (bench.visits)",
]


def _cache(name: str) -> Path:
    version = hashlib.sha256(FEATURES_VERSION.encode()).hexdigest()[:12]
    return CORPUS_DIR / f"distractors-{version}" / name


def _voting_only(features: FilmFeatures) -> np.ndarray:
    """The descriptors the shortlist reads: the voting quarter (``voting``)."""
    return np.ascontiguousarray(features.descriptors[voting(features)])


def _distractor_chunk(chunk: int) -> tuple[np.ndarray, np.ndarray]:
    """Worker side: ``CHUNK`` distractor films' voting descriptors, and each film's count."""
    rng = np.random.default_rng([SEED, chunk])
    films = [
        _voting_only(film_features(*decoded_grey(data))) for data in distractor_jpegs(rng, CHUNK)
    ]
    return np.concatenate(films), np.array([len(f) for f in films], np.int64)


def _write(path: Path, descriptors: np.ndarray, counts: np.ndarray) -> None:
    """Descriptors and per-film counts to ``path``, atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_name(path.name + ".part")
    with scratch.open("wb") as out:
        np.savez(out, descriptors=descriptors, counts=counts)
    scratch.replace(path)


def _read(path: Path) -> tuple[np.ndarray, np.ndarray]:
    with np.load(path) as stored:
        return stored["descriptors"], stored["counts"]


def _films(descriptors: np.ndarray, counts: np.ndarray) -> list[FilmFeatures]:
    """One ``FilmFeatures`` per film (points unused by the shortlist: zeros, shared)."""
    ends = np.cumsum(counts)
    nowhere = np.zeros((0, 2), np.float32)
    return [
        FilmFeatures(nowhere, descriptors[end - count : end], (0, 0))
        for count, end in zip(counts, ends, strict=True)
    ]


def real_families(films: int, workers: int) -> list[FilmFeatures]:
    """Each real film, then its copies (``KINDS`` order), film after film."""
    path = _cache(f"real-{films}.npz")
    if not path.is_file():
        paths = sorted(REAL_FILMS.glob("*.jpg"))[:films]
        jobs = [(str(p), n, False) for n, p in enumerate(paths)]
        members = [_voting_only(f) for kin in ordered_map(family, jobs, workers, 1) for f in kin]
        _write(path, np.concatenate(members), np.array([len(m) for m in members], np.int64))
    return _films(*_read(path))


def distractor_films(count: int, workers: int) -> list[FilmFeatures]:
    """The first ``count`` distractor films, their chunks made (and cached) when missing."""
    paths = [_cache(f"chunk-{SEED}-{c}.npz") for c in range(-(-count // CHUNK))]
    missing = [c for c, path in enumerate(paths) if not path.is_file()]
    made = ordered_map(_distractor_chunk, missing, workers, 1)
    for chunk, (descriptors, counts) in zip(missing, made, strict=True):
        _write(paths[chunk], descriptors, counts)
    films = [film for path in paths for film in _films(*_read(path))]
    return films[:count]


def _joined(pairs: set[tuple[int, int]], first: int, members: int) -> list[bool]:
    """For each member of the family at rows ``first`` to ``first + members`` after its
    original: whether the family's shortlisted pairs join it to the original (directly or
    through other members, as the build's groups join confirmed pairs)."""
    family = range(first, first + members + 1)
    joined = nx.utils.UnionFind(family)
    for i, j in pairs:
        if first <= i and j <= first + members:
            joined.union(i, j)
    return [joined[first + k] == joined[first] for k in range(1, members + 1)]


def planted_families(real: list[FilmFeatures]) -> list[tuple[list[FilmFeatures], list[str]]]:
    """Each real film with ``KINDS_PER_FILM`` of its relatives, the kinds taken in turn from
    film to film (so every kind is planted about equally often), and their kinds."""
    width = len(KINDS) + 1
    families = []
    for n in range(len(real) // width):
        chosen = [(KINDS_PER_FILM * n + j) % len(KINDS) for j in range(KINDS_PER_FILM)]
        members = [real[n * width]] + [real[n * width + 1 + k] for k in chosen]
        families.append((members, [KINDS[k] for k in chosen]))
    return families


def measure(
    size: int,
    families: list[tuple[list[FilmFeatures], list[str]]],
    distractors: list[FilmFeatures],
) -> dict:
    """The shortlist over ``size`` distractors and the planted families: recall, time, memory
    (one run, under ``tracemalloc``)."""
    pool = distractors[:size] + [film for members, _ in families for film in members]
    gc.collect()
    tracemalloc.start()
    started = time.process_time()
    pairs = set(feature_shortlist(pool, frame_check.SHORTLIST_PER_FILM))
    seconds = time.process_time() - started
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    planted = dict.fromkeys(KINDS, 0)
    direct = dict.fromkeys(KINDS, 0)
    joined = dict.fromkeys(KINDS, 0)
    first = size
    for members, kinds in families:
        linked = _joined(pairs, first, len(kinds))
        for k, kind in enumerate(kinds):
            planted[kind] += 1
            joined[kind] += linked[k]
            direct[kind] += (first, first + 1 + k) in pairs
        first += len(members)
    framed = [k for k in KINDS if not k.startswith(("visit", "mirror", "negative"))]
    visits = [k for k in KINDS if k.startswith("visit")]
    return {
        "distractors": size,
        "films": len(pool),
        "copies_planted": sum(planted[k] for k in framed),
        "copies_joined": sum(joined[k] for k in framed),
        "copies_with_original": sum(direct[k] for k in framed),
        "copies_recall": round(
            sum(joined[k] for k in framed) / max(1, sum(planted[k] for k in framed)), 4
        ),
        "visits_planted": sum(planted[k] for k in visits),
        "visits_joined": sum(joined[k] for k in visits),
        "visits_with_original": sum(direct[k] for k in visits),
        "joined_per_kind": {k: f"{joined[k]}/{planted[k]}" for k in KINDS},
        "pairs_per_film": round(len(pairs) / len(pool), 3),
        "cpu_s": round(seconds, 2),
        "ms_per_film": round(1000 * seconds / len(pool), 3),
        "descriptor_bytes_per_film": round(sum(f.descriptors.nbytes for f in pool) / len(pool)),
        "shortlist_peak_bytes_per_film": round(peak / len(pool)),
    }


def run(sizes: list[int], films: int = 120, workers: int = 2) -> dict:
    """Every size's figures, or why none were measured."""
    if not REAL_FILMS.is_dir():
        return {"measured": False, "why": f"skipped: no real films in {REAL_FILMS}"}
    families = planted_families(real_families(films, workers))
    distractors = distractor_films(max(sizes), workers)
    runs = []
    for size in sizes:
        runs.append(measure(size, families, distractors))
        print(json.dumps(runs[-1]), file=sys.stderr)
    return {
        "measured": True,
        "shortlist": SHORTLIST_VERSION,
        "features": FEATURES_VERSION,
        "real_films": films,
        "runs": runs,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.scale.distractors", description=__doc__)
    parser.add_argument("--sizes", default="0,4000,16000,64000", help="distractor counts")
    parser.add_argument("--films", type=int, default=120, help="real films planted")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    found = run([int(s) for s in args.sizes.split(",")], args.films, args.workers)
    if not found["measured"]:
        print(found["why"])
        return
    write_bytes(RESULTS, (json.dumps(found, indent=1, sort_keys=True) + "\n").encode())
    json.dump(found, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
