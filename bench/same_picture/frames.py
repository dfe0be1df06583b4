"""``python -m bench.same_picture.frames``: same picture under another frame, measured on
real radiographs.

Reads the 120 real panoramic radiographs of ``../shared/realfilms-dev/films`` (512 x 512 RGB
JPEG, squashed from their wider frames) and the 25 grey archive-sized ones of
``films-native`` (2,943 x 1,435), never copied into the repository, and skips with one
sentence when that folder is absent. From each film it makes every alteration of the table
(``ALTERATIONS``) and one simulated visit of the same patient, at the films' own size, for a
subset (``--upscaled``) upscaled to real archive sizes (2,440-2,950 x 1,270-1,435, grey), and
on the archive-sized films (``--archive``). Each copy is then put through what the
same-picture step does:

- the whole-frame check (``curation.same_picture.pixels``) for every orientation whose hash lies
  within ``SAME_PICTURE_RADIUS`` bits, and upright when the inverted hash does (a negative);
- the feature shortlist (``curation.features.shortlist``, over the originals and that alteration's
  copies) and the aligned frame check (``curation.same_picture.frame_check``) of the shortlisted
  pairs.

A copy is *dropped* when either check confirms it, *linked* when not but its hash lies within
the look-alike distance (same component), else *kept apart*. The distinct side is every pair
of distinct real films (7,140; and the upscaled subset's pairs) and each film against its
simulated visit: none may be confirmed; nor may two distinct films be joined as look-alikes
through a dropped copy's hash (``joined_through_a_copy``: the copies the whole-frame check
drops keep their hash in the look-alike search, those dropped under another frame do not).
Every figure is given for the whole set and for each half of the films (even-numbered: where
limits are chosen; odd-numbered: held out). The figures (distributions, margins, outcome
counts) go to ``bench/same_picture/frames.json`` and, from ``bench.run``, to ``bench/results.json``.

    uv run --frozen python -m bench.same_picture.frames   # about 20 minutes on 2 loaded cores
    uv run --frozen python -m bench.same_picture.frames --films 24 --upscaled 8 --archive 6  # quick
"""

from __future__ import annotations

import io
import json
import math
import sys
import tempfile
from dataclasses import asdict, dataclass
from itertools import combinations
from pathlib import Path

import numpy as np
from PIL import Image

from bench.common.real_films import REAL_FILMS, upscaled
from bench.same_picture.alterations import ALTERATIONS, QUALITY, jpeg, simulated_visit
from bench.same_picture.halves import half, joined_through_a_copy
from bench.same_picture.records import Film, PairFigures, kept_by_fit, measured_on_film_sets
from bench.same_picture.summary import summarise
from curation.core.parallel import ordered_map
from curation.core.vocabulary import SAME_PICTURE_RADIUS
from curation.features.features import film_features, match_features, working_grey
from curation.features.shortlist import MIN_VOTES, pair_votes, shortlisted, voter_counts
from curation.hashes.hashing import AverageHash512, View, hamming
from curation.same_picture import frame_check, pixels
from curation.same_picture.candidates import crop_candidates

RESULTS = Path(__file__).with_name("frames.json")
ARCHIVE_FILMS = REAL_FILMS.parent / "films-native"  # grey, at an archive's size
MARGIN = 0.25


def _film(name: str, data: bytes) -> Film:
    grey, size = working_grey(data)
    hashes = AverageHash512().hash_views(io.BytesIO(data))
    return Film(name, data, hashes, grey, size, film_features(grey, size))


def _frame(a: Film, b: Film) -> frame_check.FrameComparison:
    match = match_features(a.features, b.features)
    return frame_check.compare_frames(a.grey, b.grey, (a.size, b.size), match)


def _whole_frame(a: Film, b: Film, folder: Path) -> tuple[int, bool]:
    """Best hash distance, and whether the whole-frame check confirms the pair in any
    orientation within the same-picture radius, or upright when A's inverted hash lies
    within it (a negative), as the step's candidates are."""
    distances = {view: hamming(a.hashes[view], b.hashes[View.identity]) for view in View}
    inverted = bytes(255 - byte for byte in a.hashes[View.identity])
    views = {view for view in View if distances[view] <= SAME_PICTURE_RADIUS}
    if hamming(inverted, b.hashes[View.identity]) <= SAME_PICTURE_RADIUS:
        views.add(View.identity)
    path_a, path_b = folder / f"{a.name}.jpg", folder / f"{b.name}.jpg"
    path_a.write_bytes(a.data)
    path_b.write_bytes(b.data)
    confirmed = any(
        pixels.compare(path_a, path_b, view, (a.size, b.size)).same_picture
        for view in View
        if view in views
    )
    return min(distances.values()), confirmed


def _geometry(frame: frame_check.FrameComparison) -> dict:
    if not frame.transform:
        return {}
    turn, sx, sy = frame_check.turn_and_scale(np.asarray(frame.transform).reshape(2, 3))
    return {"turn": round(turn, 4), "scale_change": round(max(abs(sx - 1), abs(sy - 1)), 5)}


def _figures(kind: str, strength: int, a: Film, b: Film, folder: Path) -> PairFigures:
    best, whole = _whole_frame(a, b, folder)
    return _pair_figures(kind, strength, a, b, best, whole, _frame(a, b), described=True)


def _pair_figures(
    kind: str,
    strength: int,
    a: Film,
    b: Film,
    distance: int,
    whole: bool,
    frame: frame_check.FrameComparison,
    described: bool,
) -> PairFigures:
    """The figures of one pair; ``described``: the frame check's kind and the features' fit
    are recorded too (copies; distinct pairs keep only the measures)."""
    geometry = _geometry(frame) if described and frame.features_agree else {}
    compared = math.isfinite(frame.difference)
    kept = (
        min(frame.overlap_a, frame.overlap_b)
        if compared
        else kept_by_fit(
            np.asarray(frame.transform).reshape(2, 3) if frame.transform else None, a.size, b.size
        )
    )
    return PairFigures(
        kind,
        strength,
        a.name,
        b.name,
        distance,
        whole,
        frame.inliers,
        frame.inlier_share,
        min(frame.overlap_a, frame.overlap_b),
        frame.difference,
        frame.shift,
        frame.anatomy,
        frame.same_picture,
        frame_check.frame_kind(frame) if described and frame.same_picture else "",
        **geometry,
        per_whole_frame=round(frame.inliers / max(kept, frame_check.FRAMING.min_overlap), 1),
    )


@dataclass(frozen=True)
class FilmJob:
    index: int
    path: str
    upscale: bool
    prefix: str = "film"


def measure_film(job: FilmJob) -> tuple[list[PairFigures], Film, dict[tuple[str, int], Film]]:
    """One original against each of its copies and its simulated visit (worker side)."""
    data = Path(job.path).read_bytes()
    grey = np.asarray(Image.open(io.BytesIO(data)).convert("L"))
    if job.upscale:
        grey = upscaled(grey, job.index)
        data = jpeg(grey, 92)
    name = f"{'up' if job.upscale else job.prefix}{job.index:03d}"
    original = _film(name, data)
    copies = {}
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-frames-") as scratch:
        for (kind, strength), alter in ALTERATIONS.items():
            picture, quality, mode = alter(grey)
            copy = _film(f"{name}-{len(copies):02d}", jpeg(picture, quality, mode))
            copies[(kind, strength)] = copy
            rows.append(_figures(kind, strength, original, copy, Path(scratch)))
        visit = _film(f"{name}-visit", jpeg(simulated_visit(grey, job.index), QUALITY))
        rows.append(_figures("visit", 2, original, visit, Path(scratch)))
    slim = {
        k: Film(c.name, b"", c.hashes, c.grey[:0], c.size, c.features) for k, c in copies.items()
    }
    return (
        rows,
        Film(name, b"", original.hashes, original.grey, original.size, original.features),
        slim,
    )


_ORIGINALS: list[Film] = []  # set before the distinct pairs' workers fork


def _distinct(pair: tuple[int, int]) -> PairFigures:
    a, b = _ORIGINALS[pair[0]], _ORIGINALS[pair[1]]
    distance = min(hamming(a.hashes[view], b.hashes[View.identity]) for view in View)
    # The whole-frame check on distinct pairs is measured by bench.margins.same_picture.
    return _pair_figures("distinct", 0, a, b, distance, False, _frame(a, b), described=False)


def _shortlisted(originals: list[Film], copies: list[dict], rows: list[PairFigures]) -> list:
    """Mark each copy pair by whether the frame step proposes it: the feature shortlist or
    the crop path, from one count of the votes."""
    proposed: set[tuple[str, str]] = set()
    for key in ALTERATIONS:
        films = originals + [c[key] for c in copies]
        features = [f.features for f in films]
        votes = pair_votes(features, MIN_VOTES)
        shortlist = shortlisted(voter_counts(features), votes, frame_check.SHORTLIST_PER_FILM)
        for i, j in shortlist + crop_candidates(votes, shortlist):
            proposed.add((films[i].name, films[j].name))
    return [
        row
        if row.kind in ("visit", "distinct")
        else PairFigures(**{**asdict(row), "shortlisted": (row.first, row.second) in proposed})
        for row in rows
    ]


def measure(
    films: int = 120, upscaled_films: int = 12, archive_films: int = 25, workers: int = 2
) -> dict:
    """Both sides at the films' own size, upscaled and on archive-sized films; see the module
    docstring."""
    if not REAL_FILMS.is_dir():
        return {"measured": False, "why": f"skipped: no real films in {REAL_FILMS}"}
    paths = sorted(REAL_FILMS.glob("*.jpg"))[:films]
    archive = sorted(ARCHIVE_FILMS.glob("*.jpg"))[:archive_films]
    found: dict = {"measured": True, "source": str(REAL_FILMS), "films": len(paths)}
    for label, chosen, upscale, prefix in (
        ("native", paths, False, "film"),
        ("upscaled", paths[:upscaled_films], True, "film"),
        ("archive-sized", archive, False, "arch"),
    ):
        jobs = [FilmJob(i, str(p), upscale, prefix) for i, p in enumerate(chosen)]
        rows: list[PairFigures] = []
        originals: list[Film] = []
        copies: list[dict] = []
        for found_rows, original, copied in ordered_map(measure_film, jobs, workers, 1):
            rows.extend(found_rows)
            originals.append(original)
            copies.append(copied)
        rows = _shortlisted(originals, copies, rows)
        _ORIGINALS[:] = originals
        pairs = list(combinations(range(len(originals)), 2))
        rows.extend(ordered_map(_distinct, pairs, workers, 64))
        found[label] = {
            "films": len(jobs),
            **summarise(rows),
            "halves": {
                name: {
                    k: v
                    for k, v in summarise(half(rows, parity)).items()
                    if k in ("outcomes", "distinct_confirmed", "margins")
                }
                for name, parity in (("even (chosen on)", 0), ("odd (held out)", 1))
            },
            "joined_through_a_copy": joined_through_a_copy(originals, copies, rows),
        }
    return found


def main(argv: list[str] | None = None) -> None:
    found = measured_on_film_sets(
        argv, "python -m bench.same_picture.frames", __doc__, measure, RESULTS, 12
    )
    if found is not None:
        json.dump(found, sys.stdout, indent=1, default=str)


if __name__ == "__main__":
    main()
