"""The same-picture limits against every planted relation of the sample (issue 11): each limit
keeps a quarter of margin from the largest copy and the smallest distinct figure measured."""

from __future__ import annotations

import pytest

from bench.margins.same_picture import MARGIN, measure
from curation.core.vocabulary import SAME_PICTURE_RADIUS
from curation.same_picture.pixels import SAME_PICTURE_LIMIT


@pytest.fixture(scope="module")
def measured(sample_zip, sample_source):
    return measure(sample_source.root, sample_zip[1])


def test_the_sample_measures_every_kind_on_both_sides(measured):
    kinds = {m.kind for m in measured}
    assert {"copy: mirror", "copy: rotation", "copy: scaling", "copy: noise"} <= kinds
    assert {"re-filing", "visits of one patient", "nearest distinct film"} <= kinds


def test_the_pixel_limit_keeps_a_quarter_margin_on_the_sample(measured):
    worst_copy = max(m.difference for m in measured if m.side == "copy")
    closest = min(m.difference for m in measured if m.side == "distinct")
    assert (1 + MARGIN) * worst_copy <= SAME_PICTURE_LIMIT <= (1 - MARGIN) * closest


def test_the_candidate_radius_keeps_a_quarter_margin_from_copies_and_distinct_films(measured):
    worst_copy = max(m.distance for m in measured if m.side == "copy")
    nearest = min(m.distance for m in measured if m.kind == "nearest distinct film")
    assert (1 + MARGIN) * worst_copy <= SAME_PICTURE_RADIUS <= (1 - MARGIN) * nearest
