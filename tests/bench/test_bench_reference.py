"""The scale curve's reference work must be the same work every time (the same bytes, so its
cost can be compared between builds), must reach the costly part of the build's own checks (a
copy that the features alone settle would leave the alignment and the tone normalisation out),
and must be sampled on every core without pinning the process that starts the build."""

from __future__ import annotations

import math
import os
import time

from bench.scale import reference
from curation.features.features import film_features, match_features, working_grey
from curation.same_picture.frame_check import without_pixels


def test_the_reference_film_and_its_copy_are_the_same_bytes_every_time() -> None:
    first = reference.reference_pair.__wrapped__()
    assert first == reference.reference_pair.__wrapped__()
    assert first[0] != first[1]


def test_the_reference_unit_reaches_the_aligned_pixel_comparison() -> None:
    film, copy = reference.reference_pair()
    grey_a, size_a = working_grey(film)
    grey_b, size_b = working_grey(copy)
    match = match_features(film_features(grey_a, size_a), film_features(grey_b, size_b))
    assert without_pixels(match) is None  # the features alone do not settle the pair
    assert math.isfinite(reference.reference_unit(film, copy))


def test_the_speedometer_samples_every_core_without_pinning_the_process() -> None:
    """The build's workers are started from this process while the samples run: only the
    sampling thread may be pinned to a core, and every core the process may use is sampled."""
    cores = os.sched_getaffinity(0)
    with reference.Speedometer(every_s=0.05) as speed:
        while len(speed.samples) < 2 * len(cores):
            assert os.sched_getaffinity(0) == cores
            time.sleep(0.05)
    assert {core for core, _ in speed.samples} == cores
    summary = speed.summary()
    assert summary["samples"] == len(speed.samples)
    assert summary["lowest_ms"] <= summary["unit_ms"] <= summary["highest_ms"]
    # the samples' own CPU is at least the units kept (the warm-up round comes on top)
    assert summary["cpu_s"] * 1000 >= sum(ms for _, ms in speed.samples)
