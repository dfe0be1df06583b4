"""The audit's visit check: films of one patient from different visits that sit in different
splits, found as the build finds them (``curation.visits``), which no hash distance can find.

Every film's anatomy is described from the shard's image bytes (a row group per worker, as
the hashing does) into an ``ArrayStore`` below the audit's work folder, keyed by the film's
sha256: the jobs that describe, summarise and verify carry keys and return small records,
and the vocabulary's training reads the films one at a time, so the auditing process never
holds the descriptors (up to 128 KB a film) of more than one film. Retrieval names each
film's nearest films, and each cross-split pair the verification confirms is then told apart
by the aligned frame check (``curation.same_picture.frame_check``, on ORB features of the
two films): the same picture under another frame is a copy that leaks (a finding like any
other); anything else is a visit of one patient, listed first in the report with the two
films and their matched features drawn (``visits/visit-NNN.png``, for the pairs the report's
page shows). Each batch of aligned checks is kept in the work folder, as the verification's
windows are: a resumed audit checks only the batches it had not.
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import cv2
import numpy as np

from curation.core.atomic import write_bytes
from curation.core.parallel import LocalMap, Mapper
from curation.core.store import Arrays, ArrayStore
from curation.core.vocabulary import VisitSearch
from curation.features.features import (
    FEATURES_VERSION,
    decoded_grey,
    film_features,
    match_features,
)
from curation.leaks.target import RowGroup, read_images, row_groups
from curation.same_picture.frame_check import FRAME_CHECK_VERSION, compare_frames
from curation.visits.descriptors import DESCRIPTORS_VERSION, visit_features_of
from curation.visits.find import (
    NO_POINTS,
    stored_candidate_pairs,
    stored_verified,
    verified_store,
)
from curation.visits.inverted import INVERTED_FROM, LISTS_PER_PROBE
from curation.visits.retrieval import PARTNERS
from curation.visits.stored import VisitStores, as_arrays, stored_features
from curation.visits.verification import (
    GRID,
    MIN_CELLS,
    VERIFICATION_VERSION,
    VisitEvidence,
    verify,
)

if TYPE_CHECKING:
    from curation.core.progress import Track
    from curation.leaks.target import Film

VISITS_FOLDER = "visits"
VERIFIED_FOLDER = "visit-verified"  # the verification's evidence, beside the features' store
ALIGNED_FOLDER = "visit-aligned"  # the aligned checks' findings, beside it
PAIRS_AT_ONCE = 64  # verified pairs whose images the aligned checks hold (about 50 MB)
DRAWN_HEIGHT = 360  # pixels: each film's height in the drawing
DRAWN_MATCHES = 80  # inlier matches drawn per pair (evenly chosen), so the lines stay legible


@dataclass(frozen=True)
class CrossSplitMatch:
    """Two films in different splits verified as one patient's: ``a`` in the earlier split.
    ``same_picture``: the aligned check calls it a copy, not a visit."""

    a: int
    b: int
    matches: int
    inliers: int
    share: float  # inliers over matches
    same_picture: bool
    cells: int = 0  # grid cells holding an inlier, the fewer of the two films
    drawing: str = ""  # file name below the report's folder
    decided: str = ""  # the curator's reason, for films declared one patient (no features)


def _described(data: bytes, store: ArrayStore) -> int:
    """Worker side: the film's visit features put in ``store`` under its sha256 (once per
    content); 1 when described now, 0 when stored already (another row of the same bytes, or
    an audit that stopped midway: a stored file is not read here, a million of them being
    some 20 GB)."""
    key = hashlib.sha256(data).hexdigest()
    if key in store:
        return 0
    store.put(key, as_arrays(visit_features_of(data)))
    return 1


def _describe_group(job: tuple[RowGroup, tuple[int, ...]], image: str, store: ArrayStore) -> int:
    group, rows = job
    return sum(read_images(group, image, rows, partial(_described, store=store)))


def describe_films(
    shards: list[Path],
    image: str,
    films: list[Film],
    store: ArrayStore,
    map: Mapper | None = None,
    on_films: Callable[[int], None] | None = None,
) -> int:
    """The visit features of ``films`` put in ``store`` by workers, read from the shards a row
    group per job through ``map`` (default: one process per core), telling ``on_films`` how
    many films each job described; the jobs carry the row group and the store, and return a
    count: no descriptor reaches this process. The number of films described now, not found
    in the store."""
    groups = row_groups(shards)  # in order of shard, then first row
    starts = [(g.shard, g.first_row) for g in groups]
    rows_of: dict[RowGroup, list[int]] = {}
    for shard, row in sorted({(f.shard, f.row) for f in films}):
        group = groups[bisect.bisect_right(starts, (shard, row)) - 1]  # the one holding the row
        rows_of.setdefault(group, []).append(row)
    jobs = [(group, tuple(rows)) for group, rows in rows_of.items()]
    work = partial(_describe_group, image=image, store=store)
    described = 0
    for (_, rows), count in zip(jobs, (map or LocalMap())(work, jobs, chunksize=1), strict=True):
        described += count
        if on_films:
            on_films(len(rows))
    return described


def visit_candidates(
    store: ArrayStore,
    keys: Sequence[str],
    map: Mapper,
    search: VisitSearch = VisitSearch.lists,
    track: Track | None = None,
) -> np.ndarray:
    """``curation.visits.find.stored_candidate_pairs`` of the films stored under ``keys`` (an
    ``(n, 2)`` array), as the visits step finds them, searched as ``search`` says and shown on
    bars of ``track``: the vectors and the vocabulary's sample in folders beside ``store``."""
    beside = store.root.parent
    stores = VisitStores(store, beside / "visit-vectors", beside / "visit-sample")
    return stored_candidate_pairs(stores, keys, map, search=search, track=track)


def _aligned(job: tuple[ArrayStore, str, str, bytes, bytes]) -> tuple[VisitEvidence, bool]:
    """Worker side: a verified pair's evidence with its inliers (for drawing), and whether the
    aligned check calls the pair one picture under two frames (ORB features of both films
    matched, as the frame step matches them)."""
    store, key_a, key_b, data_a, data_b = job
    evidence = verify(stored_features(store, key_a), stored_features(store, key_b))
    (grey_a, size_a), (grey_b, size_b) = decoded_grey(data_a), decoded_grey(data_b)
    match = match_features(film_features(grey_a, size_a), film_features(grey_b, size_b))
    return evidence, compare_frames(grey_a, grey_b, (size_a, size_b), match).same_picture


def aligned_store(root: Path) -> ArrayStore:
    """The store of the aligned checks' findings below ``root``, a batch of pairs a file:
    versioned by what decides them (the verification, both kinds of features, the frame
    check), so a changed check is never read from an older audit's files."""
    version = (
        f"aligned-v1/{VERIFICATION_VERSION}/{DESCRIPTORS_VERSION}/"
        f"{FEATURES_VERSION}/{FRAME_CHECK_VERSION}"
    )
    return ArrayStore(root, version)


def _batch_key(pairs: Sequence[tuple[str, str]]) -> str:
    """A batch's key in the store: its pairs' contents, in order (no film's sha256)."""
    lines = "\n".join(f"{a} {b}" for a, b in pairs)
    return hashlib.sha256(f"aligned\n{lines}".encode()).hexdigest()


def _checks_as_arrays(checked: Sequence[tuple[VisitEvidence, bool]]) -> Arrays:
    """A batch's findings as the store keeps them: a row a pair (matches, inliers, cells,
    same picture), and the pairs' inlier points one after another."""
    rows = [(e.matches, e.inliers, e.cells, same) for e, same in checked]
    points = [(e.points_a, e.points_b) for e, _ in checked]
    return {
        "pairs": np.array(rows, np.int64).reshape(-1, 4),
        "points_a": np.concatenate([a for a, _ in points] or [NO_POINTS]).astype(np.float32),
        "points_b": np.concatenate([b for _, b in points] or [NO_POINTS]).astype(np.float32),
    }


def _checks_from_arrays(arrays: Arrays) -> list[tuple[VisitEvidence, bool]]:
    """``_checks_as_arrays`` read back."""
    pairs = arrays["pairs"]
    ends = np.cumsum(pairs[:, 1])  # a pair's points are its inliers
    found = []
    for (matches, inliers, cells, same), end in zip(pairs.tolist(), ends, strict=True):
        points_a = arrays["points_a"][end - inliers : end]
        points_b = arrays["points_b"][end - inliers : end]
        found.append((VisitEvidence(matches, inliers, cells, points_a, points_b), bool(same)))
    return found


def cross_split_matches(
    films: list[Film],
    store: ArrayStore,
    splits: list[str],
    image_of: Callable[[int], bytes],
    map: Mapper | None = None,
    search: VisitSearch = VisitSearch.lists,
    track: Track | None = None,
) -> tuple[list[CrossSplitMatch], dict[tuple[int, int], VisitEvidence]]:
    """Every retrieved pair (searched as ``search`` says) of films in different splits that
    verification confirms, sorted by film ids, with the evidence of each (for drawing); the
    films' features are in ``store`` (``describe_films``); the vectors, the search, the
    verification (each reported to a bar of ``track``) and the aligned checks go through
    ``map`` (default: one process per core). The search's pairs, the verification's
    evidence and the aligned checks' findings are kept beside ``store``, for an audit that
    stops midway and runs again."""
    rank = {split: n for n, split in enumerate(splits)}
    mapped = map or LocalMap()
    keys = [f.sha256 for f in films]
    candidates = visit_candidates(store, keys, mapped, search, track)
    split_of = np.array([rank[f.split] for f in films], np.int32)
    pairs = candidates[split_of[candidates[:, 0]] != split_of[candidates[:, 1]]]
    verifying = track("verify pairs", len(pairs)) if track else None
    kept = verified_store(store.root.parent / VERIFIED_FOLDER)
    kept.drop_other_versions()  # an earlier audit's, by another verification
    advance = verifying.advance if verifying else None
    verified = []  # each pair's film of the earlier split first
    for v in stored_verified(store, keys, pairs, mapped, advance, kept):
        earlier = rank[films[v.first].split] < rank[films[v.second].split]
        verified.append((v.first, v.second) if earlier else (v.second, v.first))

    def check(batch: list[tuple[int, int]]) -> Arrays:
        jobs = [(store, keys[a], keys[b], image_of(a), image_of(b)) for a, b in batch]
        return _checks_as_arrays(list(mapped(_aligned, jobs, chunksize=1)))

    checked = aligned_store(store.root.parent / ALIGNED_FOLDER)
    checked.drop_other_versions()  # an earlier audit's, by another check
    found, fitted = [], {}
    for start in range(0, len(verified), PAIRS_AT_ONCE):
        batch = verified[start : start + PAIRS_AT_ONCE]
        key = _batch_key([(keys[a], keys[b]) for a, b in batch])
        checks = _checks_from_arrays(checked.kept(key, partial(check, batch)))
        for (a, b), (e, same) in zip(batch, checks, strict=True):
            share = round(e.inliers / max(1, e.matches), 4)
            found.append(CrossSplitMatch(a, b, e.matches, e.inliers, share, same, e.cells))
            fitted[(a, b)] = e
    found.sort(key=lambda m: (films[m.a].film_id, films[m.b].film_id))
    return found, fitted


def _scaled(data: bytes) -> np.ndarray:
    grey, size = decoded_grey(data)
    width = max(1, round(size[0] * DRAWN_HEIGHT / size[1]))
    small = cv2.resize(grey, (width, DRAWN_HEIGHT), interpolation=cv2.INTER_AREA)
    return cv2.cvtColor(small, cv2.COLOR_GRAY2BGR)


def _key(point: np.ndarray) -> cv2.KeyPoint:
    return cv2.KeyPoint(float(point[0]), float(point[1]), 6.0)


def draw_match(data_a: bytes, data_b: bytes, evidence: VisitEvidence) -> bytes:
    """The two films side by side with their inlier matches drawn (OpenCV), as PNG bytes."""
    picture_a, picture_b = _scaled(data_a), _scaled(data_b)
    frame_a = np.array([picture_a.shape[1], picture_a.shape[0]], np.float32)
    frame_b = np.array([picture_b.shape[1], picture_b.shape[0]], np.float32)
    count = len(evidence.points_a)
    rows = np.unique(np.linspace(0, count - 1, min(DRAWN_MATCHES, count)).round().astype(int))
    keys_a = [_key(evidence.points_a[r] * frame_a) for r in rows] if count else []
    keys_b = [_key(evidence.points_b[r] * frame_b) for r in rows] if count else []
    pairs = [cv2.DMatch(n, n, 0) for n in range(len(keys_a))]
    # OpenCV's stubs do not allow None for outImg, which its documentation allows.
    drawn = cv2.drawMatches(
        picture_a, keys_a, picture_b, keys_b, pairs, None,  # type: ignore[call-overload]
        matchColor=(0, 200, 255), singlePointColor=(0, 200, 255),
        flags=cv2.DrawMatchesFlags_NOT_DRAW_SINGLE_POINTS,
    )  # fmt: skip
    _, png = cv2.imencode(".png", drawn)
    return png.tobytes()


def write_drawings(
    matches: list[CrossSplitMatch],
    drawn: Sequence[CrossSplitMatch],
    fitted: dict[tuple[int, int], VisitEvidence],
    image_of: Callable[[int], bytes],
    out: Path,
) -> list[CrossSplitMatch]:
    """The matches in ``drawn`` (some of ``matches``: those the report's page shows, in its
    order) drawn to ``out/visits/visit-NNN.png``, so that the folder stays the page's size
    however many pairs the audit verifies (drawings of an earlier audit that this one does not
    make again are removed); ``matches`` in their order, the drawn ones with their file names."""
    folder = out / VISITS_FOLDER
    names: dict[tuple[int, int], str] = {}
    for number, found in enumerate((m for m in drawn if not m.decided), 1):
        # The curator's word is not a feature match: nothing to draw for a decided pair.
        name = f"{VISITS_FOLDER}/visit-{number:03d}.png"
        drawing = draw_match(image_of(found.a), image_of(found.b), fitted[(found.a, found.b)])
        write_bytes(out / name, drawing)
        names[(found.a, found.b)] = name
    kept = {out / name for name in names.values()}
    for stale in sorted(folder.glob("visit-*.png")) if folder.is_dir() else []:
        if stale not in kept:
            stale.unlink()
    return [replace(m, drawing=names.get((m.a, m.b), "")) for m in matches]


def visit_entries(films: list[Film], matches: list[CrossSplitMatch]) -> list[dict[str, Any]]:
    """The report's JSON entries, one per cross-split pair verified by features."""
    return [
        {
            "kind": "same picture, reframed"
            if m.same_picture
            else "one patient, the curator's decision"
            if m.decided
            else "visit of one patient",
            "film": {"film_id": films[m.a].film_id, "split": films[m.a].split},
            "other": {"film_id": films[m.b].film_id, "split": films[m.b].split},
            "matches": m.matches,
            "inliers": m.inliers,
            "inlier_share": m.share,
            "cells": m.cells,
            "drawing": m.drawing,
            **({"curator_reason": m.decided} if m.decided else {}),
        }
        for m in matches
    ]


def visit_rule() -> str:
    """The rule in one phrase, for the report."""
    cells = GRID[0] * GRID[1]
    return f"matched anatomy in >= {MIN_CELLS} of {cells} grid cells, fitted per arch region"


def search_phrase(search: VisitSearch) -> str:
    """How the pairs to verify were searched, in one phrase, for the report: a reader must
    know whether the check could have passed over a pair."""
    nearest = f"each film's {PARTNERS} nearest films by its features' vector"
    if search is VisitSearch.exact:
        return f"exact: {nearest}, every film compared with every film"
    return (
        f"lists: {nearest}, from {INVERTED_FROM:,} films on among one list in "
        f"{LISTS_PER_PROBE} (look-alikes whose features share little can be passed over)"
    )
