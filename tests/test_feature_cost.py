"""What keeps the feature checks' cost down (issue 22): a crowded key gives no votes, so the
shortlist's work per film does not grow with the number of films; a build computes the
shortlist once and reads the visits from what the same-picture step checked; each long part
advances its own bar. (The cost itself is measured in ``bench.feature_cost``, not here.)"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

from curation.chain import runner as pipeline
from curation.chain.executors import LocalExecutor
from curation.chain.runner import Settings, curate
from curation.features import shortlist
from curation.features.features import FilmFeatures
from curation.features.shortlist import (
    CROWDED,
    HASH_TABLES,
    MIN_VOTES,
    feature_shortlist,
    pair_votes,
)
from curation.lookalikes import visits
from curation.near_identical import frame_step


def _film(descriptors: np.ndarray) -> FilmFeatures:
    points = np.zeros((len(descriptors), 2), np.float32)
    return FilmFeatures(points, np.ascontiguousarray(descriptors, np.uint8), (100, 100))


def _voting(rng: np.random.Generator, count: int) -> np.ndarray:
    """Random descriptors that all take part in the vote (``SAMPLE_MASK`` bits clear)."""
    drawn = rng.integers(0, 256, (count, 32), dtype=np.uint8)
    drawn[:, -1] &= ~np.uint8(shortlist.SAMPLE_MASK)
    return drawn


def test_a_pattern_common_to_many_films_is_no_evidence_but_a_shared_one_is():
    """Forty films share one pattern (the same 200 descriptors: a border, a label); two of
    them also share 200 others. Only those two are voted for: every key of the common pattern
    holds more than ``CROWDED`` descriptors and is passed over, which is what bounds the work
    per descriptor whatever the number of films (a plain index compares them all)."""
    rng = np.random.default_rng(5)
    common, shared = _voting(rng, 200), _voting(rng, 200)
    films = []
    for n in range(40):
        own = [common, _voting(rng, 300)] + ([shared] if n in (3, 17) else [])
        films.append(_film(np.concatenate(own)))
    assert len(films) > CROWDED
    votes = pair_votes(films, MIN_VOTES)
    assert list(votes) == [(3, 17)]
    assert votes[(3, 17)] >= 2 * 200 * 0.9  # both sides vote: nearly every shared descriptor
    assert feature_shortlist(films) == [(3, 17)]


def test_each_film_keeps_at_most_its_partners_however_many_relatives_it_has():
    """Ten films, each with a copy that shares 300 of its 400 descriptors: with one partner
    per film, each film's one partner is its copy."""
    rng = np.random.default_rng(6)
    films = [_film(_voting(rng, 400)) for _ in range(20)]
    for n in range(0, 20, 2):  # pairs (0, 1), (2, 3), ...: each a film and its copy
        films[n + 1] = _film(np.concatenate([films[n].descriptors[:300], _voting(rng, 100)]))
    found = feature_shortlist(films, per_film=1)
    assert found == [(n, n + 1) for n in range(0, 20, 2)]


@pytest.fixture
def recorded(monkeypatch):
    """Every call of the frame step's shortlist (its films, and how many file contents
    they are: a film filed twice shares its features), and each bar's total and progress."""
    calls: list[tuple[int, int]] = []
    bars: dict[str, list[int]] = defaultdict(lambda: [0, 0])

    def counted(features, *args, **kwargs):
        calls.append((len(features), len({id(f) for f in features})))
        return feature_shortlist(features, *args, **kwargs)

    class Bar(pipeline._Bar):
        def total(self, count: int) -> None:
            bars[self.progress.tasks[self.task].description][0] = count
            super().total(count)

        def advance(self, count: int) -> None:
            bars[self.progress.tasks[self.task].description][1] += count
            super().advance(count)

    real_track = pipeline.Progress.add_task

    def add_task(self, description, total=None, **kwargs):
        task = real_track(self, description, total=total, **kwargs)
        bars[description][0] = total or 0
        return task

    monkeypatch.setattr(frame_step, "feature_shortlist", counted)
    monkeypatch.setattr(visits, "feature_shortlist", counted)
    monkeypatch.setattr(pipeline, "_Bar", Bar)
    monkeypatch.setattr(pipeline.Progress, "add_task", add_task)
    return calls, bars


def test_a_build_computes_the_shortlist_once_and_every_long_part_shows_progress(
    sample_source, tmp_path, recorded
):
    calls, bars = recorded
    outcome = curate(sample_source, tmp_path, Settings(), executor=LocalExecutor(1))
    assert len(calls) == 1  # the look-alike step reads the visits from the same-picture step
    pending, contents = calls[0]
    assert 0 < contents < pending  # the sample files some films twice
    assert bars["local features"] == [contents, contents]  # cold: every content computed once
    assert bars["feature shortlist"] == [HASH_TABLES, HASH_TABLES]
    checked = bars["check frames"]
    assert checked[0] > 0 and checked == [checked[0], checked[0]]
    summary = outcome.products["summary"]
    assert summary.counts.verified_visits > 0  # the visits were read from the checked pairs
