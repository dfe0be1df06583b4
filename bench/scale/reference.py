"""A fixed unit of the build's own work, timed on each core in turn all through a build of the
scale curve: how much CPU that unit cost on this machine while the build ran.

Two builds of the same 4,000 originals here took 48.6 and 58.9 ms of the machine's CPU an
original, with the host's steal at 0.1 % in both (docs/scale.md): what a unit of work costs
moves with the host in ways steal does not show. Timed once before and once after a build, in
two processes, the unit itself spread 118 to 159 ms within minutes, one process often half as
slow again as the other: the host's state changes in seconds, so a build is read against
samples taken all through it, on each core (``Speedometer``).

The unit is the build's own code on one synthetic film and a cropped, re-encoded copy of it
(deterministic: the same bytes every run): both decoded at the working scale, both described
with ORB (the frame checks' features), matched and fitted, compared pixel by pixel after
alignment (the tiles' phase correlation and the tone normalisation: the frame check), and the
film described with RootSIFT for the visits. The unit follows the code: results recorded before
the frame check's refinement changed (from ECC) were read against a costlier unit.
"""

from __future__ import annotations

import io
import os
import statistics
import threading
import time
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
SAMPLE_EVERY_S = 5.0  # a unit on each core, then this long idle: about 4 % of one core


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


class Speedometer:
    """Inside the block, a thread of this process times one unit on each core in turn (the
    thread alone pinned to it), every ``every_s`` seconds: the CPU milliseconds of each unit,
    and the CPU the samples took, which is not the build's. The first round is a warm-up
    (OpenCV's first calls) and is not kept."""

    def __init__(self, every_s: float = SAMPLE_EVERY_S) -> None:
        self.every_s = every_s
        self.samples: list[tuple[int, float]] = []  # (core, CPU ms of one unit)
        self.cpu_s = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="speedometer", daemon=True)

    def __enter__(self) -> Speedometer:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        film, copy = reference_pair()
        cores = sorted(os.sched_getaffinity(0))
        started = time.thread_time()
        warm = False
        while True:
            for core in cores:
                os.sched_setaffinity(0, {core})  # on Linux, 0 is the calling thread alone
                start = time.thread_time()
                reference_unit(film, copy)
                if warm:
                    self.samples.append((core, 1000 * (time.thread_time() - start)))
            warm = True
            self.cpu_s = time.thread_time() - started
            if self._stop.wait(self.every_s):
                return

    @property
    def unit_ms(self) -> float:
        """The mean CPU milliseconds of a unit over the samples (0 if none was kept)."""
        return round(statistics.fmean(ms for _, ms in self.samples), 2) if self.samples else 0.0

    def summary(self) -> dict[str, float]:
        found = [ms for _, ms in self.samples]
        return {
            "unit_ms": self.unit_ms,
            "samples": len(found),
            "lowest_ms": round(min(found), 2) if found else 0.0,
            "highest_ms": round(max(found), 2) if found else 0.0,
            "cpu_s": round(self.cpu_s, 2),
        }
