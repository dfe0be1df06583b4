"""The records ``bench.same_picture.frames`` measures and ``bench.same_picture.halves`` summarises:
one pair of films as the two same-picture checks see it, and a film as they read it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

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


@dataclass(frozen=True)
class Film:
    """A film as the checks read it."""

    name: str
    data: bytes
    hashes: dict[View, bytes]
    grey: np.ndarray  # the working-scale grey decode
    size: tuple[int, int]
    features: FilmFeatures
