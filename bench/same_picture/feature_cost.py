"""``python -m bench.same_picture.feature_cost``: what the feature shortlist costs and what
it keeps.

Two parts:

- ``gate`` (real radiographs of ``../shared/realfilms-dev/films``, read in place; skipped
  with one sentence when absent): every real film, each of its copies of issue 22's table
  (``bench.same_picture.alterations``) and two simulated visits
  (``bench.same_picture.alterations`` and ``bench.visits.real``), at the films' own size and
  upscaled to archive sizes, all in one pool of films (about 4,000 at own size). The
  shortlist's vote share (``curation.features.shortlist``: votes
  over the fewer voting descriptors of the two films) of each related pair (a film and its
  copy or visit) against that of every pair of unrelated films, the margin of ``MIN_SHARE``
  on both sides, and how many related pairs the shortlist proposes when each alteration's
  copies are shortlisted with the originals (as ``bench.same_picture.frames`` does).
- ``scale`` (a folder of JPEG films, e.g. the originals folder of the 4,000-film corpus): the
  features' process time per film, then the shortlist's process time and pairs per film
  over the first 1,000, 2,000 and 4,000 films, and over 16,000 made of four copies of each
  film whose descriptors have ``JITTER_BITS`` random bits flipped (no longer close to their
  source: a stand-in for distinct films, labelled so).

- ``matching`` (real radiographs, read in place; skipped when absent): the time per pair of
  ``match_features`` (faiss's exact binary search, then MAGSAC) against OpenCV's
  brute-force matcher on the same descriptors (the way matches were found before round
  twelve), for each real film against its 3 % crop (a copy) and against the next film
  (distinct), in this process, one thread; and how many pairs found the same matches.

    uv run --frozen python -m bench.same_picture.feature_cost gate --films 120 --upscaled 24
    uv run --frozen python -m bench.same_picture.feature_cost scale \
        --folder "CORPUS/Original JPG Images"
    uv run --frozen python -m bench.same_picture.feature_cost matching --films 120
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

import cv2
import numpy as np
from PIL import Image

from bench.common.real_films import REAL_FILMS, upscaled
from bench.same_picture.alterations import ALTERATIONS, QUALITY, jpeg, simulated_visit
from bench.visits import real as visits_bench
from curation.core.atomic import write_bytes
from curation.core.parallel import ordered_map
from curation.features.features import (
    RATIO,
    FilmFeatures,
    decoded_grey,
    film_features,
    match_features,
)
from curation.features.shortlist import MIN_SHARE, feature_shortlist, pair_votes, voting
from curation.same_picture import frame_check

RESULTS = Path(__file__).with_name("feature_cost.json")
JITTER_BITS = 64  # bits flipped per descriptor of a stand-in film, on average (> MAX_HAMMING)


def _features(data: bytes) -> FilmFeatures:
    return film_features(*decoded_grey(data))


def family(job: tuple[str, int, bool]) -> list[FilmFeatures]:
    """Worker side: one real film's features, then each copy's, then its two visits'."""
    path, index, upscale = job
    grey = np.asarray(Image.open(path).convert("L"))
    if upscale:
        grey = upscaled(grey, index)
    films = [_features(jpeg(grey, 92 if upscale else QUALITY))]
    for alter in ALTERATIONS.values():
        picture, quality, mode = alter(grey)
        films.append(_features(jpeg(picture, quality, mode)))
    films.append(_features(jpeg(simulated_visit(grey, index), QUALITY)))
    films.append(_features(jpeg(visits_bench.simulated_visit(grey, index), QUALITY)))
    return films


def _spread(values: list[float]) -> dict:
    if not values:
        return {}
    points = np.percentile(values, [0, 5, 50, 95, 100])
    return dict(
        zip(("p0", "p5", "p50", "p95", "p100"), (round(float(v), 4) for v in points), strict=True)
    )


def measure_gate(paths: list[Path], upscale: bool, workers: int) -> dict:
    """Vote shares of related and unrelated pairs in one pool; shortlist recall per
    alteration."""
    kinds = [f"{k} {s}" for k, s in ALTERATIONS] + ["visit (bench.frames)", "visit (bench.visits)"]
    jobs = [(str(p), n, upscale) for n, p in enumerate(paths)]
    families = list(ordered_map(family, jobs, workers, 1))
    width = len(kinds) + 1
    pool = [f for films in families for f in films]
    voters = [int(voting(f).sum()) for f in pool]
    started = time.process_time()
    votes = pair_votes(pool, 2)  # one vote is a share below 0.003 of any film here
    pool_seconds = time.process_time() - started

    def share(pair: tuple[int, int]) -> float:
        return votes.get(pair, 0) / max(1, min(voters[pair[0]], voters[pair[1]]))

    related: dict[str, list[float]] = {k: [] for k in kinds}
    for n in range(len(paths)):
        for k, kind in enumerate(kinds, 1):
            related[kind].append(share((n * width, n * width + k)))
    unrelated = [share(pair) for pair in votes if pair[0] // width != pair[1] // width]
    count = len(paths)
    per_alteration = {}
    for k, kind in enumerate(kinds, 1):
        films = [f[0] for f in families] + [f[k] for f in families]
        shortlist = set(feature_shortlist(films, frame_check.SHORTLIST_PER_FILM))
        per_alteration[kind] = sum((n, n + count) in shortlist for n in range(count))
    # A mirror is not a reframing: ORB is not mirror-invariant, and the whole-frame check,
    # which compares all 8 orientations, is what drops a mirrored copy.
    gated = [min(v) for kind, v in related.items() if not kind.startswith("mirror")]
    lowest, highest = min(gated), max(unrelated, default=0.0)
    return {
        "films": count,
        "pool": len(pool),
        "pool_votes_cpu_s": round(pool_seconds, 2),
        "unrelated_pairs_with_2_votes": len(unrelated),
        "unrelated_share": _spread(unrelated),
        "unrelated_highest": [round(v, 4) for v in sorted(unrelated)[-5:]],
        "related_lowest_but_mirror": round(lowest, 4),
        "related_share": {k: _spread(v) for k, v in related.items()},
        "min_share": MIN_SHARE,
        "margin": {
            "above_unrelated": round(MIN_SHARE / max(highest, 1e-9), 2),
            "below_related": round(lowest / MIN_SHARE, 2),
        },
        "shortlisted_with_originals": per_alteration,
    }


def gate(films: int, upscaled_films: int, workers: int) -> dict:
    if not REAL_FILMS.is_dir():
        return {"measured": False, "why": f"skipped: no real films in {REAL_FILMS}"}
    paths = sorted(REAL_FILMS.glob("*.jpg"))[:films]
    return {
        "measured": True,
        "native": measure_gate(paths, False, workers),
        "upscaled": measure_gate(paths[:upscaled_films], True, workers),
    }


def _jittered(features: FilmFeatures, seed: int) -> FilmFeatures:
    """The film's features with each descriptor bit flipped at a chance of a quarter (64 of
    256 bits on average, beyond ``MAX_HAMMING``): a stand-in for another film."""
    rng = np.random.default_rng(seed)
    flips = np.packbits(rng.random((len(features.descriptors), 256)) < JITTER_BITS / 256, axis=1)
    return FilmFeatures(features.points, features.descriptors ^ flips, features.size)


def _file_features(path: str) -> FilmFeatures | None:
    """A film's features, None for a file the build would reject (the corpus plants some)."""
    try:
        return _features(Path(path).read_bytes())
    except Exception:  # any refusal: the build rejects the file, the bench passes it over
        return None


def scale(folder: Path, workers: int, sizes: tuple[int, ...] = (1000, 2000, 4000, 16000)) -> dict:
    """Features' and shortlist's process time per film on the JPEG films of ``folder``."""
    paths = sorted(str(p) for p in folder.glob("*.jpg"))
    if not paths:
        return {"measured": False, "why": f"skipped: no JPEG films in {folder}"}
    started = time.monotonic()
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
    films = [f for f in ordered_map(_file_features, paths, workers, 16) if f is not None]
    feature_cpu = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime - before
    found: dict = {
        "measured": True,
        "folder": str(folder),
        "films": len(films),
        "features_wall_s": round(time.monotonic() - started, 2),
        "features_ms_per_film": round(1000 * feature_cpu / len(films), 2),
        "runs": [],
    }
    for size in sizes:
        pool = films[:size]
        label = "films"
        if size > len(films):
            copies = -(-size // len(films))
            pool = films + [
                _jittered(f, n * len(films) + i)
                for n in range(1, copies)
                for i, f in enumerate(films)
            ]
            pool, label = pool[:size], f"films and jittered stand-ins ({JITTER_BITS} bits)"
        started = time.process_time()
        pairs = feature_shortlist(pool)
        seconds = time.process_time() - started
        found["runs"].append(
            {
                "films": len(pool),
                "what": label,
                "cpu_s": round(seconds, 2),
                "ms_per_film": round(1000 * seconds / len(pool), 2),
                "pairs": len(pairs),
                "pairs_per_film": round(len(pairs) / len(pool), 3),
                "descriptors": sum(len(f.descriptors) for f in pool),
            }
        )
        print(json.dumps(found["runs"][-1]), file=sys.stderr)
    found["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return found


def _brute_force_matches(a: FilmFeatures, b: FilmFeatures) -> int:
    """Ratio-test matches of B's descriptors to A's by OpenCV's brute-force matcher."""
    pairs = cv2.BFMatcher(cv2.NORM_HAMMING).knnMatch(b.descriptors, a.descriptors, k=2)
    return sum(len(p) == 2 and p[0].distance < RATIO * p[1].distance for p in pairs)


def matching(films: int) -> dict:
    if not REAL_FILMS.is_dir():
        return {"measured": False, "why": f"skipped: no real films in {REAL_FILMS}"}
    cv2.setNumThreads(1)
    found: dict = {"measured": True}
    originals, crops = [], []
    for path in sorted(REAL_FILMS.glob("*.jpg"))[:films]:
        grey = np.asarray(Image.open(path).convert("L"))
        originals.append(_features(jpeg(grey, QUALITY)))
        cropped, quality, mode = ALTERATIONS[("crop", 2)](grey)
        crops.append(_features(jpeg(cropped, quality, mode)))
    kinds = {
        "copy": list(zip(originals, crops, strict=True)),
        "distinct": list(zip(originals, originals[1:] + originals[:1], strict=True)),
    }
    for kind, pairs in kinds.items():
        started = time.process_time()
        ours = [match_features(a, b).matches for a, b in pairs]
        middle = time.process_time()
        theirs = [_brute_force_matches(a, b) for a, b in pairs]
        ended = time.process_time()
        found[kind] = {
            "pairs": len(pairs),
            "descriptors_per_film": round(float(np.mean([len(a.descriptors) for a, _ in pairs]))),
            "match_features_ms": round(1000 * (middle - started) / len(pairs), 2),
            "brute_force_knn_ms": round(1000 * (ended - middle) / len(pairs), 2),
            "same_matches": sum(x == y for x, y in zip(ours, theirs, strict=True)),
        }
    return found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.same_picture.feature_cost", description=__doc__
    )
    parts = parser.add_subparsers(dest="part", required=True)
    on_real = parts.add_parser("gate", help="votes and shortlist recall on real films")
    on_real.add_argument("--films", type=int, default=120)
    on_real.add_argument("--upscaled", type=int, default=24)
    on_real.add_argument("--workers", type=int, default=2)
    on_corpus = parts.add_parser("scale", help="features' and shortlist's cost per film")
    on_corpus.add_argument("--folder", type=Path, required=True, help="a folder of JPEG films")
    on_corpus.add_argument("--workers", type=int, default=2)
    timed = parts.add_parser("matching", help="time per pair of matching on real films")
    timed.add_argument("--films", type=int, default=120)
    args = parser.parse_args(argv)
    if args.part == "gate":
        found = gate(args.films, args.upscaled, args.workers)
    elif args.part == "matching":
        found = matching(args.films)
    else:
        found = scale(args.folder, args.workers)
    if not found["measured"]:
        print(found["why"])
        return
    recorded = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
    recorded[args.part] = found
    write_bytes(RESULTS, (json.dumps(recorded, indent=1, sort_keys=True) + "\n").encode())
    json.dump(found, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
