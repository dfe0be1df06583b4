"""The records ``bench.same_picture.frames`` measures and ``bench.same_picture.halves`` summarises:
one pair of films as the two same-picture checks see it, and a film as they read it."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from curation.core.atomic import write_bytes
from curation.features.features import FilmFeatures
from curation.hashes.hashing import View


@dataclass(frozen=True)
class PairFigures:
    """What the two checks say about one pair of films."""

    kind: str  # the alteration, "visit", or "distinct"
    strength: int
    first: str
    second: str
    best_distance: int  # hash distance in the best orientation
    whole_frame: bool  # confirmed by the whole-frame pixel check
    inliers: int
    inlier_share: float
    overlap: float  # the smaller of the two overlap shares
    difference: float  # aligned, locally normalised difference (inf: not compared)
    shift: float  # median tile shift left after alignment (inf: not compared)
    anatomy: float  # correlation of the aligned films at the anatomy's scale (0: not compared)
    frame_same: bool  # confirmed by the aligned frame check
    frame_kind: str  # what the frame check calls it, when it confirms
    turn: float = 0.0  # degrees, of the features' fit
    scale_change: float = 0.0  # the larger |scale - 1| of the two axes, of the features' fit
    shortlisted: bool | None = None  # None: not asked (distinct pairs)
    # inliers over the smaller share of the frames the films share, counted as at least the
    # frame gate's smallest overlap (as ``FeatureGate.required_inliers`` counts them): the
    # aligned overlap when the pixels were compared, else the features' fit's (``kept_by_fit``)
    per_whole_frame: float = 0.0


@dataclass(frozen=True)
class Film:
    """A film as the checks read it."""

    name: str
    data: bytes
    hashes: dict[View, bytes]
    grey: np.ndarray  # the working-scale grey decode
    size: tuple[int, int]
    features: FilmFeatures


def kept_by_fit(
    transform: np.ndarray | None, size_a: tuple[int, int], size_b: tuple[int, int]
) -> float:
    """The smaller of the two shares of the films' frames that overlap when film B is placed
    in A's frame by the features' fit (B -> A): the part the gate counts inliers over, read
    from the fit alone (the frame check measures it on the aligned pixels). 0 without a fit,
    or for a mirroring or degenerate one."""
    if transform is None:
        return 0.0
    fit = np.asarray(transform, np.float64)
    stretch = float(np.linalg.det(fit[:, :2]))
    if stretch <= 1e-9:
        return 0.0
    (width_a, height_a), (width_b, height_b) = size_a, size_b
    corners_b = np.array([[0, 0], [width_b, 0], [width_b, height_b], [0, height_b]], np.float64)
    placed = (corners_b @ fit[:, :2].T + fit[:, 2]).astype(np.float32)
    frame_a = np.array([[0, 0], [width_a, 0], [width_a, height_a], [0, height_a]], np.float32)
    shared, _ = cv2.intersectConvexConvex(placed, frame_a)
    return min(shared / (width_a * height_a), shared / (width_b * height_b * stretch))


def measured_on_film_sets(
    argv: list[str] | None,
    prog: str,
    doc: str | None,
    measure: Callable[[int, int, int, int], dict],
    results: Path,
    upscaled: int,
) -> dict | None:
    """The command line both real-film benches share (films at their own size, how many of
    them upscaled, archive-sized films, workers): the figures measured and written to
    ``results``; None, said why, when the real films are absent."""
    parser = argparse.ArgumentParser(prog=prog, description=doc)
    parser.add_argument("--films", type=int, default=120, help="real films at their own size")
    parser.add_argument("--upscaled", type=int, default=upscaled, help="of them, upscaled too")
    parser.add_argument("--archive", type=int, default=25, help="archive-sized grey films")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    found = measure(args.films, args.upscaled, args.archive, args.workers)
    if not found["measured"]:
        print(found["why"])
        return None
    write_bytes(results, (json.dumps(found, indent=1, sort_keys=True, default=str) + "\n").encode())
    return found
