"""The frame check in rounds (``curation.same_picture.candidates.next_round``): each group's
strongest shortlisted pair first, and never a pair whose two films confirmed pairs already
join, so a picture with several framed copies costs one check per copy, not one per pair,
and its group is the one checking every pair would give."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import pytest

from curation.api import _read_folder
from curation.core.store import ArrayStore
from curation.core.vocabulary import SAME_PICTURE_RADIUS
from curation.features.features import FEATURES_VERSION
from curation.same_picture import film_memo, frame_step
from curation.same_picture.candidates import next_round
from curation.same_picture.detect import Progress, find_same_pictures
from curation.same_picture.frame_step import FrameJob, frame_job
from curation.same_picture.pixel_cache import ComparisonCache
from support import film_kit as kit

# One picture and two framed copies of it (a triangle of copies), and another film: every
# pair shortlisted, with these votes.
FILMS = ("10", "11", "12", "20")  # the original, its crop, its pad, another film
VOTES = {
    ("10", "11"): 90,
    ("10", "12"): 80,
    ("11", "12"): 70,
    ("10", "20"): 60,
    ("11", "20"): 5,
    ("12", "20"): 5,
}


def test_each_group_takes_its_strongest_open_pair_and_joined_pairs_wait_for_nothing():
    ids = sorted(FILMS)
    pairs = np.array([(ids.index(a), ids.index(b)) for a, b in sorted(VOTES)])
    strength = np.array([VOTES[pair] for pair in sorted(VOTES)])
    unchecked = np.ones(len(pairs), bool)
    apart = np.arange(len(ids))
    # The original's and the crop's strongest pair, the pad's, and the other film's.
    assert next_round(pairs, strength, apart, unchecked).tolist() == [0, 1, 2]
    unchecked[[0, 1, 2]] = False
    copies_joined = np.array([0, 0, 0, 3])
    # The crop-pad pair (row 3) is never checked: its films are joined. The two groups'
    # two pairs left are tied: both groups take the first, and the other waits for it.
    assert next_round(pairs, strength, copies_joined, unchecked).tolist() == [4]
    unchecked[4] = False
    assert next_round(pairs, strength, copies_joined, unchecked).tolist() == [5]
    unchecked[5] = False
    assert next_round(pairs, strength, copies_joined, unchecked).tolist() == []


def test_films_already_joined_check_a_framed_copy_they_share_once():
    """An original and its re-encoded copy (joined by the whole-frame check) both shortlist
    one framed copy: one check, the group's strongest pair; confirmed, the other pair is
    never checked, refused, it is checked next."""
    pairs = np.array([(0, 2), (1, 2)])
    strength = np.array([90, 80])
    unchecked = np.ones(len(pairs), bool)
    joined = np.array([0, 0, 2])
    assert next_round(pairs, strength, joined, unchecked).tolist() == [0]
    unchecked[0] = False
    assert next_round(pairs, strength, np.zeros(3, np.int64), unchecked).tolist() == []
    assert next_round(pairs, strength, joined, unchecked).tolist() == [1]


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    found = tmp_path_factory.mktemp("triangle")
    picture = kit.film(5)
    kit.save(picture, found / "10.jpg")
    kit.save(kit.cropped(picture, 0.06), found / "11.jpg")
    kit.save(kit.padded(picture, 0.10), found / "12.jpg")
    kit.save(kit.film(105), found / "20.jpg")
    return found


class _Bar:
    def total(self, count: int) -> None:
        pass

    def advance(self, count: int) -> None:
        pass


class CheckingMap:
    """Runs jobs in this process, noting the two films of every frame check, by round."""

    def __init__(self) -> None:
        self.rounds: list[list[tuple[str, str]]] = []

    def __call__(
        self, function: Callable[[Any], Any], jobs: Sequence[Any], chunksize: int = 16
    ) -> Iterator[Any]:
        if function is frame_step.confirmed_frame:
            self.rounds.append(
                [(Path(j.frame.path_a).stem, Path(j.frame.path_b).stem) for j in jobs]
            )
        return iter([function(job) for job in jobs])


@pytest.fixture
def every_pair_shortlisted(monkeypatch) -> None:
    """The shortlist proposes every pair of ``FILMS`` with the votes of ``VOTES``."""
    ids = sorted(FILMS)
    votes = {(ids.index(a), ids.index(b)): n for (a, b), n in VOTES.items()}
    monkeypatch.setattr(frame_step, "stored_pair_votes", lambda *args: votes)
    monkeypatch.setattr(frame_step, "shortlisted", lambda voters, found, per_film: sorted(found))
    monkeypatch.setattr(frame_step, "crop_candidates", lambda found, proposed: [])


def _found(
    folder: Path, tmp_path: Path, apart: Sequence[frozenset[str]] = ()
) -> tuple[CheckingMap, Any]:
    """The frame step over ``folder`` through a map that records each round's pairs."""
    films = _read_folder(folder, 1)
    checking = CheckingMap()
    confirmed = find_same_pictures(
        films.root,
        films.records,
        films.hashes,
        SAME_PICTURE_RADIUS,
        ComparisonCache(tmp_path / "pixels.parquet"),
        checking,
        Progress(_Bar().total, _Bar().advance, lambda _what, _total: _Bar()),
        apart=list(apart),
    )
    return checking, confirmed


def test_a_pair_already_joined_is_not_checked_and_the_groups_are_those_of_every_pair(
    folder, tmp_path, every_pair_shortlisted
):
    checking, confirmed = _found(folder, tmp_path)
    # A round's films decoded in this process (one pair: no workers) are not kept here.
    assert frame_step._remembered_grey.cache_info().currsize == 0
    assert film_memo.remembered() == 0
    checked = [pair for found in checking.rounds for pair in found]
    assert sorted(checked) == sorted(set(VOTES) - {("11", "12")})
    assert checking.rounds[0] == [("10", "11"), ("10", "12"), ("10", "20")]
    groups = {frozenset(c) for c in nx.connected_components(_graph(confirmed.pairs))}
    # Every pair checked, without rounds: the same groups.
    store = ArrayStore(tmp_path / "features", FEATURES_VERSION)
    every = [
        pair
        for pair in VOTES
        if frame_job(
            FrameJob(str(folder), f"{pair[0]}.jpg", f"{pair[1]}.jpg", *pair, store)
        ).same_picture
    ]
    assert ("11", "12") in every  # the pair left unchecked is a copy pair: only its edge is lost
    assert groups == {frozenset(c) for c in nx.connected_components(nx.Graph(every))}
    assert groups == {frozenset({"10", "11", "12"})}


def _graph(pairs: Sequence[Any]) -> nx.Graph:
    return nx.Graph((p.a, p.b) for p in pairs)


def test_a_pair_declared_apart_is_never_checked_and_its_films_are_kept_apart(
    folder, tmp_path, every_pair_shortlisted
):
    checking, confirmed = _found(folder, tmp_path, apart=[frozenset(("10", "11"))])
    checked = [pair for found in checking.rounds for pair in found]
    # The original's best pair is declared apart: the pad's pairs join the crop instead.
    assert ("10", "11") not in checked
    assert checking.rounds[0] == [("10", "12"), ("10", "20"), ("11", "12")]
    groups = [set(c) for c in nx.connected_components(_graph(confirmed.pairs))]
    assert not any({"10", "11"} <= group for group in groups)
