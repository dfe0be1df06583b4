"""The scale curve's reference work must be the same work every time (the same bytes, so its
cost can be compared between builds) and must reach the costly part of the build's own checks:
a copy that the features alone settle would leave ECC and the tone normalisation out."""

from __future__ import annotations

import math

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


def test_the_reference_is_timed_in_as_many_processes_as_asked() -> None:
    timing = reference.time_reference(2, units=1)
    assert len(timing.per_process_ms) == 2
    assert all(ms > 0 for ms in timing.per_process_ms)
    assert timing.unit_ms == round(sum(timing.per_process_ms) / 2, 2)
