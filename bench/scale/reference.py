"""A fixed reference workload, timed around each build of the scale curve: how much CPU one
unit of the build's own per-film work cost on this machine at that time.

Two builds of the same 4,000 originals here took 48.6 and 58.9 ms of the machine's CPU an
original, with the host's steal at 0.1 % in both (docs/scale.md): what a unit of work costs
moves with the host in ways steal does not show. So each build is bracketed by the same unit
of work, and its cost is also read in those units: if the machine was slower, both move.

The unit is the build's own code on one synthetic film and a cropped, re-encoded copy of it
(deterministic: the same bytes every run): both decoded at the working scale, both described
with ORB (the frame checks' features), matched and fitted, compared pixel by pixel after
alignment (OpenCV's ECC and the tone normalisation: the frame check), and the film described
with RootSIFT for the visits. It runs in as many processes at once as the build has workers, so
it meets the same contention for the cores' caches and memory.
"""

from __future__ import annotations

import io
import multiprocessing
import statistics
import time
from dataclasses import dataclass
from functools import cache

import cv2
import numpy as np
from PIL import Image

from curation.features.features import film_features, match_features, working_grey
from curation.same_picture.frame_check import compare_frames
from curation.visits.descriptors import visit_features_of

FILM_SIZE = (2400, 1200)  # width, height: a panoramic film's shape at the archive's scale
CROP = 0.06  # the copy loses this share of the film on each side
SEED = 20261205
UNITS = 24  # timed units per process (about 3 s)
WARM_UP = 1  # units run first and not timed (imports, OpenCV's first calls)


@cache
def reference_pair() -> tuple[bytes, bytes]:
    """A synthetic film (smooth shapes and grain, drawn from a fixed seed) and a cropped copy
    of it, as JPEG bytes: always the same bytes for the same libraries."""
    rng = np.random.default_rng(SEED)
    width, height = FILM_SIZE
    film = np.zeros((height, width), np.float32)
    for cells, weight in ((8, 1.0), (64, 0.5), (400, 0.25)):
        coarse = rng.normal(size=(cells // 2, cells)).astype(np.float32)
        film += weight * cv2.resize(coarse, (width, height), interpolation=cv2.INTER_CUBIC)
    film = (film - film.min()) / (film.max() - film.min())
    grey = np.clip(255 * film, 0, 255).astype(np.uint8)
    dx, dy = round(width * CROP), round(height * CROP)
    return _jpeg(grey, 92), _jpeg(grey[dy : height - dy, dx : width - dx], 85)


def _jpeg(grey: np.ndarray, quality: int) -> bytes:
    written = io.BytesIO()
    Image.fromarray(grey).save(written, "JPEG", quality=quality)
    return written.getvalue()


def reference_unit(film: bytes, copy: bytes) -> float:
    """One unit of work; returns the frame check's difference, so the work cannot be skipped."""
    grey_a, size_a = working_grey(film)
    grey_b, size_b = working_grey(copy)
    features_a, features_b = film_features(grey_a, size_a), film_features(grey_b, size_b)
    match = match_features(features_a, features_b)
    compared = compare_frames(grey_a, grey_b, (size_a, size_b), match)
    visit_features_of(film)
    return compared.difference


def _timed_units(units: int) -> float:
    """Child side: CPU seconds of this process for ``units`` units, after the warm-up."""
    film, copy = reference_pair()
    for _ in range(WARM_UP):
        reference_unit(film, copy)
    start = time.process_time()
    for _ in range(units):
        reference_unit(film, copy)
    return time.process_time() - start


@dataclass(frozen=True)
class ReferenceTiming:
    """CPU ms a unit took, per process that ran them at once; their mean is the figure."""

    per_process_ms: tuple[float, ...]

    @property
    def unit_ms(self) -> float:
        return round(statistics.fmean(self.per_process_ms), 2)


def time_reference(processes: int, units: int = UNITS) -> ReferenceTiming:
    """``units`` units in each of ``processes`` fresh processes at once (spawned: nothing of
    the caller's state comes along)."""
    with multiprocessing.get_context("spawn").Pool(processes) as pool:
        seconds = pool.map(_timed_units, [units] * processes)
    return ReferenceTiming(tuple(round(1000 * s / units, 2) for s in seconds))
