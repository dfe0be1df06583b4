"""The same-picture step's second check: same picture under another frame, wired to files.

Every film still in play gets its local features once per file content
(``curation.features.features``, decoded at a reduced JPEG scale): a worker computes them
straight into the features store (``BUILD/cache/features/``, one file per sha256, version
``FEATURES_VERSION``; ``curation.same_picture.frame_store``) and hands back a small record
(size, voting descriptors), which the driver keeps in a parquet cache, so a rerun reads no
store file. The feature shortlist
(``curation.features.shortlist``, linear in the number of films) proposes pairs, once per build.
They get the aligned frame check (``curation.same_picture.frame_check``) in rounds: each round
takes each film's best-voted pair whose two films no confirmed pair (whole-frame or framed)
joins yet (``candidates.next_round``), so a pair already joined is never checked: the groups
are those of checking every pair, at about one check per copy (docs/scale.md, "Where a cold
build's CPU goes, on real films"). A round runs over worker processes, which read both films'
features from the store and keep each comparison in a store of its own
(``BUILD/cache/frames/``, keyed by the two films' sha256): a worker hands back a comparison only
when it confirms the pair. The rounds depend on the comparisons only, never on which worker
finished first. The driver holds no descriptor and no comparison of an unconfirmed pair, and its
bookkeeping is numpy arrays (film numbers, votes, the checked pairs of contents, each confirmed
comparison a float64 row). A confirmed pair joins
the same-picture groups like any other, with its kind (``cropped``, ``padded``, ``rotated``,
``rescaled``, ``re-toned``) and the transform as evidence. Visits of one patient are not
decided here: the visits step finds them among the kept films (``curation.visits``).
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path

import networkx as nx
import numpy as np

from curation.core.parallel import Mapper, Tracker
from curation.core.records import SourceRecord
from curation.core.store import ArrayStore
from curation.features.features import match_features, stored_features
from curation.features.shortlist import HASH_TABLES, MIN_VOTES, shortlisted, stored_pair_votes
from curation.hashes.hash_films import Hashes
from curation.hashes.hashing import View, hamming
from curation.same_picture import film_memo, frame_check
from curation.same_picture.candidates import SamePicture, crop_candidates, next_round
from curation.same_picture.frame_check import (
    FrameComparison,
    compare_frames,
    frame_kind,
    turn_and_scale,
)
from curation.same_picture.frame_store import (
    FIGURES,
    FrameCache,
    comparison_arrays,
    comparison_of,
    film_grey,
    pair_key,
    read_comparison,
)
from curation.same_picture.pixels import Comparison

# Films a worker keeps decoded for the frame check: a film is in several shortlisted pairs
# (its copies, their copies, its best-voted partners), which come to a worker close together.
FILMS_REMEMBERED = 64
SHORTLIST_WORK = "shortlist-work"  # below the cache folder: the shortlist's jobs' files


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


@dataclass(frozen=True, slots=True)
class FrameJob:
    """One shortlisted pair for a worker: both films' paths (below ``root``: the driver's
    records' own strings, so a job costs it no copy of them) and sha256, and the store
    holding their features, so the worker decodes the pixels only when the features do not
    settle the pair."""

    root: str
    path_a: str
    path_b: str
    sha_a: str
    sha_b: str
    features: ArrayStore


def frame_job(job: FrameJob) -> FrameComparison:
    """Worker side: match the two films' features, then align and compare their pixels."""
    path_a, path_b = os.path.join(job.root, job.path_a), os.path.join(job.root, job.path_b)
    match = match_features(
        stored_features(job.features, job.sha_a, path_a),
        stored_features(job.features, job.sha_b, path_b),
    )
    settled = frame_check.without_pixels(match)
    if settled is not None:
        return settled
    (grey_a, size_a), (grey_b, size_b) = remembered_grey(path_a), remembered_grey(path_b)
    return compare_frames(grey_a, grey_b, (size_a, size_b), match)


@dataclass(frozen=True, slots=True)
class PairCheck:
    """A frame job whose comparison is kept in (or already in) the frames store."""

    frame: FrameJob
    comparisons: ArrayStore


def confirmed_frame(check: PairCheck) -> FrameComparison | None:
    """Worker side: the pair's comparison (from the frames store, else made and stored),
    handed back only when it confirms the pair: the driver keeps no other."""
    job = check.frame
    key = pair_key(job.sha_a, job.sha_b)
    frame = read_comparison(check.comparisons, key)
    if frame is None:
        frame = frame_job(job)
        check.comparisons.put(key, comparison_arrays(frame))
    return frame if frame.same_picture else None


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


# A confirmed comparison as the driver holds it: ``comparison_arrays``' figures, then the
# transform, in one float64 row.
ROW = len(FIGURES) + 6


def _content_numbers(records: list[SourceRecord]) -> np.ndarray:
    """Each film's content as a number: the first film with its sha256."""
    first: dict[str, int] = {}
    return np.array([first.setdefault(r.sha256, n) for n, r in enumerate(records)], np.int64)


def _checked_in_rounds(
    root: Path,
    records: list[SourceRecord],
    pairs: np.ndarray,
    strength: np.ndarray,
    joined: nx.utils.UnionFind,
    cache: FrameCache,
    map: Mapper,
    bar: Tracker,
) -> tuple[np.ndarray, np.ndarray]:
    """The rows of ``pairs`` (numbers of ``records``) the frame check confirms and their
    comparisons (one ``ROW`` each), checked in rounds of each group's strongest pair not yet
    joined (``next_round``), each round over ``map``; ``joined`` grows with every confirmed
    pair. One job per pair of contents: byte-identical films make one key of several pairs,
    checked once. The bookkeeping is numpy arrays: a few bytes per checked pair."""
    folder, count = str(root), len(records)
    content = _content_numbers(records)
    checked_keys, checked_rows = np.empty(0, np.int64), np.empty(0, np.int64)
    comparisons: list[np.ndarray] = []  # the confirmed ones, a row each
    unchecked = np.ones(len(pairs), bool)
    confirmed: list[tuple[int, int]] = []  # (row of pairs, row of comparisons)
    planned = 0
    while True:
        groups = np.fromiter((joined[n] for n in range(count)), np.int64, count)
        chosen = next_round(pairs, strength, groups, unchecked)
        if not len(chosen):
            break
        unchecked[chosen] = False
        keys = content[pairs[chosen, 0]] * count + content[pairs[chosen, 1]]
        first = np.sort(np.unique(keys, return_index=True)[1])  # in the shortlist's order
        new = first[~np.isin(keys[first], checked_keys)]
        checks = [
            PairCheck(
                FrameJob(
                    folder,
                    records[a].path,
                    records[b].path,
                    records[a].sha256,
                    records[b].sha256,
                    cache.features,
                ),
                cache.comparisons,
            )
            for a, b in pairs[chosen[new]].tolist()
        ]
        planned += len(checks)
        bar.total(planned)  # the checks known so far: a round's are known when it starts
        found = []
        for frame in map(confirmed_frame, checks, chunksize=4):
            found.append(-1 if frame is None else len(comparisons))
            if frame is not None:
                arrays = comparison_arrays(frame)
                comparisons.append(np.concatenate([arrays["figures"], arrays["transform"]]))
            bar.advance(1)
        checked_keys = np.concatenate([checked_keys, keys[new]])
        checked_rows = np.concatenate([checked_rows, np.array(found, np.int64)])
        order = np.argsort(checked_keys, kind="stable")
        checked_keys, checked_rows = checked_keys[order], checked_rows[order]
        outcome = checked_rows[np.searchsorted(checked_keys, keys)]
        for row, comparison in zip(chosen.tolist(), outcome.tolist(), strict=True):
            if comparison >= 0:
                joined.union(*pairs[row].tolist())
                confirmed.append((row, comparison))
    # A round of one pair runs in this process (``ordered_map``): its decoded films, and what
    # the check made of them, must not stay in the driver.
    _remembered_grey.cache_clear()
    film_memo.forget_films()
    confirmed.sort()
    rows = np.array([row for row, _ in confirmed], np.int64)
    if not comparisons:
        return rows, np.empty((0, ROW))
    return rows, np.stack(comparisons)[[c for _, c in confirmed]]


def frame_pairs(
    root: Path,
    films: dict[str, SourceRecord],
    hashes: Hashes,
    confirmed: list[SamePicture],
    cache: FrameCache,
    map: Mapper,
    track: Callable[[str, int | None], Tracker],
    apart: Collection[frozenset[str]] = (),
) -> list[SamePicture]:
    """The pairs of ``films`` (pending, by id) that the frame check confirms among the
    shortlisted pairs, checked in rounds (``_checked_in_rounds``) from what the ``confirmed``
    whole-frame pairs already join; each long part advances its own bar (``track``: the
    run's progress tracker). A pair the curator
    declared ``apart`` is never checked: confirmed, it would count as joining its films in
    the rounds, then be dropped (``curation.decisions.apply.keep_apart``), leaving unchecked
    the pairs that join them another way."""
    ids = sorted(films)
    cache.features_for(films, root, map, track("local features", None))
    shas = [films[film].sha256 for film in ids]
    bar = track("feature shortlist", HASH_TABLES)
    votes = stored_pair_votes(
        cache.features,
        shas,
        [str(root / films[film].path) for film in ids],
        [cache.films[sha].voters for sha in shas],
        cache.folder / SHORTLIST_WORK,
        MIN_VOTES,
        bar.advance,
        map,
    )
    shortlist = shortlisted(
        [cache.films[sha].voters for sha in shas], votes, frame_check.SHORTLIST_PER_FILM
    )
    shortlist += crop_candidates(votes, shortlist)
    shortlist = [(i, j) for i, j in shortlist if frozenset((ids[i], ids[j])) not in apart]
    pairs = np.array(shortlist, np.int64).reshape(-1, 2)
    strength = np.array([votes[i, j] for i, j in shortlist], np.int64)
    del votes, shortlist  # the votes of every pair: not held while the frames are checked
    number = {film: n for n, film in enumerate(ids)}
    joined = nx.utils.UnionFind(range(len(ids)))
    for pair in confirmed:
        joined.union(number[pair.a], number[pair.b])
    rows, comparisons = _checked_in_rounds(
        root,
        [films[film] for film in ids],
        pairs,
        strength,
        joined,
        cache,
        map,
        track("check frames", None),
    )
    same = []
    for (i, j), values in zip(pairs[rows].tolist(), comparisons, strict=True):
        a, b = ids[i], ids[j]
        frame = comparison_of(values[: len(FIGURES)], values[len(FIGURES) :])
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
