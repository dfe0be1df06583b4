"""The same-picture step's second check: same picture under another frame, wired to files.

Every film still in play gets its local features once (``curation.features.features``, decoded at a
reduced JPEG scale, cached by sha256 under ``FEATURES_VERSION``); the feature shortlist
(``curation.features.shortlist``, linear in the number of films) proposes pairs, once per build; the
pairs the whole-frame check has not already joined get the aligned frame check
(``curation.same_picture.frame_check``, cached by the two films' sha256), over worker processes. A
confirmed pair joins the same-picture groups like any other, with its kind (``cropped``,
``padded``, ``rotated``, ``rescaled``, ``re-toned``) and the transform as evidence. Visits of
one patient are not decided here: the visits step finds them among the kept films
(``curation.visits``).
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import networkx as nx
import numpy as np
import pyarrow as pa

from curation.core.cache import read_cache, write_cache
from curation.core.parallel import Mapper, Tracker
from curation.core.records import SourceRecord
from curation.features.features import (
    FEATURES_VERSION,
    FilmFeatures,
    decoded_grey,
    film_features,
    match_features,
)
from curation.features.shortlist import HASH_TABLES, MIN_VOTES, pair_votes, shortlisted
from curation.hashes.hash_films import Hashes
from curation.hashes.hashing import View, hamming
from curation.same_picture import frame_check
from curation.same_picture.candidates import SamePicture, crop_candidates
from curation.same_picture.frame_check import (
    FrameComparison,
    compare_frames,
    frame_kind,
    turn_and_scale,
)
from curation.same_picture.pixels import Comparison

FEATURES_CACHE = "features.parquet"
FRAMES_CACHE = "frames.parquet"
_FEATURES = pa.schema(
    [
        ("sha256", pa.string()),
        ("width", pa.int32()),
        ("height", pa.int32()),
        ("points", pa.binary()),  # float32 x, y pairs
        ("descriptors", pa.binary()),  # 32 bytes per point
    ]
)
_FRAMES = pa.schema(
    [
        ("sha_a", pa.string()),
        ("sha_b", pa.string()),
        ("inliers", pa.int64()),
        ("inlier_share", pa.float64()),
        ("transform", pa.list_(pa.float64())),
        ("overlap_a", pa.float64()),
        ("overlap_b", pa.float64()),
        ("difference", pa.float64()),
        ("shift", pa.float64()),
        ("anatomy", pa.float64()),
        ("matches", pa.int64()),
    ]
)


def film_grey(path: str) -> tuple[np.ndarray, tuple[int, int]]:
    """The film at ``path`` as the frame check reads it (``features.decoded_grey``)."""
    return decoded_grey(Path(path).read_bytes())


# Films a worker keeps decoded for the frame check: a film is in several shortlisted pairs
# (its copies, their copies, its best-voted partners), which come to a worker close together.
FILMS_REMEMBERED = 64


def remembered_grey(path: str) -> tuple[np.ndarray, tuple[int, int]]:
    """``film_grey``, remembered by this process for its last ``FILMS_REMEMBERED`` films,
    keyed by the file's size and modification time too, so a rewritten file is read again.
    Read-only."""
    facts = os.stat(path)
    return _remembered_grey(path, facts.st_size, facts.st_mtime_ns)


@functools.lru_cache(maxsize=FILMS_REMEMBERED)
def _remembered_grey(path: str, _bytes: int, _mtime_ns: int) -> tuple[np.ndarray, tuple[int, int]]:
    grey, size = film_grey(path)
    grey.flags.writeable = False
    return grey, size


def features_of(path: str) -> FilmFeatures:
    """Worker side: the local features of the film at ``path``."""
    grey, size = film_grey(path)
    return film_features(grey, size)


@dataclass(frozen=True)
class FrameJob:
    """One shortlisted pair for a worker: both films' paths and their features, so the
    worker decodes the pixels only when the features do not settle the pair."""

    path_a: str
    path_b: str
    features_a: FilmFeatures
    features_b: FilmFeatures


def frame_job(job: FrameJob) -> FrameComparison:
    """Worker side: match the two films' features, then align and compare their pixels."""
    match = match_features(job.features_a, job.features_b)
    settled = frame_check.without_pixels(match)
    if settled is not None:
        return settled
    (grey_a, size_a), (grey_b, size_b) = remembered_grey(job.path_a), remembered_grey(job.path_b)
    return compare_frames(grey_a, grey_b, (size_a, size_b), match)


class FrameCache:
    """Features by sha256 and frame comparisons by the pair's sha256s (``curation.core.cache``)."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder
        self.features: dict[str, FilmFeatures] = {}
        self.frames: dict[tuple[str, str], FrameComparison] = {}
        self.added = 0
        table = read_cache(self._path(FEATURES_CACHE), FEATURES_VERSION, _FEATURES)
        for row in table.to_pylist() if table is not None else []:
            points = np.frombuffer(row["points"], np.float32).reshape(-1, 2)
            descriptors = np.frombuffer(row["descriptors"], np.uint8).reshape(-1, 32)
            size = (row["width"], row["height"])
            self.features[row["sha256"]] = FilmFeatures(points, descriptors, size)
        table = read_cache(self._path(FRAMES_CACHE), self.frames_version, _FRAMES)
        for row in table.to_pylist() if table is not None else []:
            key = (row.pop("sha_a"), row.pop("sha_b"))
            self.frames[key] = FrameComparison(**{**row, "transform": tuple(row["transform"])})

    frames_version = f"{FEATURES_VERSION}|{frame_check.FRAME_CHECK_VERSION}"

    def features_for(
        self,
        films: dict[str, SourceRecord],
        root: Path,
        map: Mapper,
        bar: Tracker | None = None,
    ) -> list[FilmFeatures]:
        """The features of ``films`` (by id, in id order): cached ones by sha256, the rest
        computed through ``map``, once per file content (films filed twice share their
        bytes), and remembered for ``save``; ``bar`` counts the contents computed."""
        ids = sorted(films)
        todo: dict[str, str] = {}  # sha256 -> the first film with those bytes
        for film in ids:
            if films[film].sha256 not in self.features:
                todo.setdefault(films[film].sha256, film)
        if bar is not None:
            bar.total(len(todo))
        found = map(features_of, [str(root / films[f].path) for f in todo.values()])
        for sha, computed in zip(todo, found, strict=True):
            self.features[sha] = computed
            self.added += 1
            if bar is not None:
                bar.advance(1)
        return [self.features[films[f].sha256] for f in ids]

    def _path(self, name: str) -> Path | None:
        return self.folder / name if self.folder else None

    def save(self) -> None:
        """Write both caches, unless nothing was measured since they were read."""
        if self.folder is None or not self.added:
            return
        shas = sorted(self.features)
        kept = [self.features[sha] for sha in shas]
        columns = {  # column by column: two thirds of the time of a dict per film
            "sha256": shas,
            "width": [f.size[0] for f in kept],
            "height": [f.size[1] for f in kept],
            "points": [np.ascontiguousarray(f.points, np.float32).tobytes() for f in kept],
            "descriptors": [np.ascontiguousarray(f.descriptors, np.uint8).tobytes() for f in kept],
        }
        features = pa.Table.from_pydict(columns, schema=_FEATURES)
        write_cache(self.folder / FEATURES_CACHE, FEATURES_VERSION, features)
        frames = [
            {"sha_a": a, "sha_b": b, **asdict(c)} for (a, b), c in sorted(self.frames.items())
        ]
        table = pa.Table.from_pylist(frames, schema=_FRAMES)
        write_cache(self.folder / FRAMES_CACHE, self.frames_version, table)


def evidence(a: str, b: str, frame: FrameComparison) -> str:
    """The transform and the measures, as the reason of a dropped film records them."""
    turn, sx, sy = turn_and_scale(np.asarray(frame.transform).reshape(2, 3))
    shift = frame.transform[2], frame.transform[5]
    return (
        f"{b} aligned onto {a} by {frame.inliers} feature matches (share {frame.inlier_share:.2f}):"
        f" turn {turn:.2f} degrees, scale {sx:.3f} x {sy:.3f}, shift {shift[0]:.1f}, "
        f"{shift[1]:.1f} px; overlap {frame.overlap_a:.2f} of {a}, {frame.overlap_b:.2f} of {b};"
        f" aligned difference {frame.difference:.3f}, tile shift {frame.shift:.2f} px, "
        f"anatomy correlation {frame.anatomy:.3f}"
    )


def reversed_kind(frame: FrameComparison) -> str:
    """The kind of film A relative to film B (``frame_kind`` reads B relative to A)."""
    transform = np.vstack([np.asarray(frame.transform).reshape(2, 3), [0, 0, 1]])
    inverse = tuple(float(v) for v in np.linalg.inv(transform)[:2].ravel())
    return frame_kind(
        FrameComparison(
            frame.inliers,
            frame.inlier_share,
            inverse,
            frame.overlap_b,
            frame.overlap_a,
            frame.difference,
            frame.shift,
            frame.anatomy,
            frame.matches,
        )
    )


def frame_pairs(
    root: Path,
    films: dict[str, SourceRecord],
    hashes: Hashes,
    confirmed: list[SamePicture],
    cache: FrameCache,
    map: Mapper,
    track: Callable[[str, int | None], Tracker],
) -> list[SamePicture]:
    """The pairs of ``films`` (pending, by id) that the frame check confirms among the
    shortlisted pairs not already joined by the ``confirmed`` whole-frame pairs; each long
    part advances its own bar (``track``: the run's progress tracker)."""
    ids = sorted(films)
    features = cache.features_for(films, root, map, track("local features", None))
    bar = track("feature shortlist", HASH_TABLES)
    votes = pair_votes(features, MIN_VOTES, bar.advance, map)
    shortlist = shortlisted(features, votes, frame_check.SHORTLIST_PER_FILM)
    shortlist += crop_candidates(votes, shortlist)
    joined = nx.utils.UnionFind(ids)
    for pair in confirmed:
        joined.union(pair.a, pair.b)
    pairs = [(ids[i], ids[j]) for i, j in shortlist if joined[ids[i]] != joined[ids[j]]]
    keys = [(films[a].sha256, films[b].sha256) for a, b in pairs]
    # One job per pair of files: byte-identical films make one key of several pairs.
    first = {}
    for (a, b), key in zip(pairs, keys, strict=True):
        if key not in cache.frames and key not in first:
            first[key] = (a, b)
    bar = track("check frames", len(first))
    jobs = [
        FrameJob(
            str(root / films[a].path),
            str(root / films[b].path),
            cache.features[key[0]],
            cache.features[key[1]],
        )
        for key, (a, b) in first.items()
    ]
    for key, frame in zip(first, map(frame_job, jobs, chunksize=4), strict=True):
        cache.frames[key] = frame
        cache.added += 1
        bar.advance(1)
    same = []
    for (a, b), key in zip(pairs, keys, strict=True):
        frame = cache.frames[key]
        if not frame.same_picture:
            continue
        distance = hamming(hashes[a][View.identity], hashes[b][View.identity])
        difference = frame.difference if math.isfinite(frame.difference) else 0.0
        same.append(
            SamePicture(
                a,
                b,
                View.identity,
                distance,
                Comparison(difference, None, same_size=False),
                frame_kinds=(frame_kind(frame), reversed_kind(frame)),
                frame_evidence=evidence(a, b, frame),
            )
        )
    return same
