"""What keeps the feature checks' cost down (issue 22): a crowded key gives no votes, so the
shortlist's work per film does not grow with the number of films; a build computes the
shortlist once and its visits step describes each file content once; each long part
advances its own bar. (The cost itself is measured
in ``bench.same_picture.feature_cost``, not here.)"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

from curation.chain.executors import LocalExecutor
from curation.chain.runner import Settings, curate
from curation.core import progress as bars_module
from curation.core.parallel import LocalMap
from curation.features import close_pairs, shortlist, vote_shards
from curation.features.close_pairs import HASH_TABLES, WINDOW, key_bits
from curation.features.features import FilmFeatures
from curation.features.shortlist import (
    MIN_VOTES,
    feature_shortlist,
    pair_votes,
    stored_pair_votes,
)
from curation.same_picture import frame_step


def _film(descriptors: np.ndarray) -> FilmFeatures:
    points = np.zeros((len(descriptors), 2), np.float32)
    return FilmFeatures(points, np.ascontiguousarray(descriptors, np.uint8), (100, 100))


def _voting(rng: np.random.Generator, count: int) -> np.ndarray:
    """Random descriptors that all take part in the vote (``SAMPLE_MASK`` bits clear)."""
    drawn = rng.integers(0, 256, (count, 32), dtype=np.uint8)
    drawn[:, -1] &= ~np.uint8(close_pairs.SAMPLE_MASK)
    return drawn


def test_a_pattern_common_to_many_films_is_no_evidence_but_a_shared_one_is():
    """Forty films share one pattern (the same 200 descriptors: a border, a label); two of
    them also share 200 others. Only those two are voted for: every key of the common pattern
    holds more than ``WINDOW`` descriptors and is passed over (a plain index would count the
    pattern as evidence for every pair)."""
    rng = np.random.default_rng(5)
    common, shared = _voting(rng, 200), _voting(rng, 200)
    films = []
    for n in range(40):
        own = [common, _voting(rng, 300)] + ([shared] if n in (3, 17) else [])
        films.append(_film(np.concatenate(own)))
    assert len(films) > WINDOW
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


def _votes_by_definition(films: list[FilmFeatures], min_votes: int) -> dict[tuple[int, int], int]:
    """``pair_votes`` as the module's docstring defines it, one descriptor at a time."""
    rows = [(n, d) for n, f in enumerate(films) for d in f.descriptors[shortlist.voting(f)]]
    bits = key_bits(len(rows))
    close: list[tuple[int, int]] = []  # descriptor rows, once per key they share
    for table in range(HASH_TABLES):
        keys: dict[bytes, list[int]] = defaultdict(list)
        for row, (_, descriptor) in enumerate(rows):
            first_bits = np.unpackbits(descriptor[table * close_pairs.HASH_BYTES :])[:bits]
            keys[first_bits.tobytes()].append(row)
        for members in keys.values():
            if len(members) > WINDOW:
                continue
            for at, p in enumerate(members):
                for q in members[at + 1 :]:
                    differing = int(np.unpackbits(rows[p][1] ^ rows[q][1]).sum())
                    if rows[p][0] != rows[q][0] and differing <= close_pairs.MAX_HAMMING:
                        close.append((p, q))

    def films_of(p: int, q: int) -> tuple[int, int]:
        first, second = sorted((rows[p][0], rows[q][0]))
        return first, second

    raw: dict[tuple[int, int], int] = defaultdict(int)
    for p, q in close:
        raw[films_of(p, q)] += 1
    voters: dict[tuple[int, int], set[tuple[int, int]]] = defaultdict(set)
    for p, q in close:
        if 2 * raw[films_of(p, q)] >= min_votes:
            voters[films_of(p, q)].update({(p, rows[q][0]), (q, rows[p][0])})
    return {pair: len(v) for pair, v in sorted(voters.items()) if len(v) >= min_votes}


@pytest.mark.parametrize("min_votes", [1, 2, 7, MIN_VOTES])
@pytest.mark.parametrize("load_bits", [close_pairs.KEY_LOAD_BITS, 18])
def test_the_votes_are_those_of_the_definition(min_votes, load_bits, monkeypatch):
    """Thirty films, some sharing descriptors exactly or nearly (a few bits flipped), with
    crowded and lone keys, and keys of 24 bits or (their load made smaller) wider: the
    sorted, vectorised count gives the plain count's votes."""
    rng = np.random.default_rng(11)
    pool, common = _voting(rng, 120), _voting(rng, 5)  # common: in every film, so crowded
    films = []
    for _ in range(30):
        shared = pool[rng.choice(len(pool), rng.integers(0, 40), replace=False)].copy()
        flips = rng.random(shared.shape) < 0.02  # near, not equal: within MAX_HAMMING
        shared[flips] ^= np.uint8(1 << int(rng.integers(0, 7)))
        shared[:, -1] &= ~np.uint8(close_pairs.SAMPLE_MASK)
        films.append(_film(np.concatenate([shared, common, _voting(rng, 30)])))
    films[0] = _film(np.concatenate([films[0].descriptors, films[0].descriptors[-1:]]))
    for n in range(1, 6):  # pool descriptors 50 bits away, only their first key kept: too far
        far = pool[:12].copy()
        for row in far:
            bits = rng.choice(np.arange(3 * 8, 30 * 8), 50, replace=False)
            row[bits // 8] ^= (1 << (bits % 8)).astype(np.uint8)
        films[n] = _film(np.concatenate([films[n].descriptors, far]))
    narrow = _votes_by_definition(films, min_votes)
    monkeypatch.setattr(close_pairs, "KEY_LOAD_BITS", load_bits)
    rows = sum(int(shortlist.voting(f).sum()) for f in films)
    expected = _votes_by_definition(films, min_votes)
    assert len(expected) > 20 and max(expected.values()) > min_votes  # the test has teeth
    assert (expected != narrow) == (key_bits(rows) > close_pairs.KEY_BITS)
    assert pair_votes(films, min_votes) == expected


def test_fewer_close_pairs_than_a_pair_of_films_needs_are_no_votes():
    """Two films whose three descriptors are each close to the other's under one key only:
    three close pairs in all, fewer than ``MIN_VOTES`` can come from, so no votes (and no
    failure: a handful of films, as a small folder gives)."""
    rng = np.random.default_rng(4)
    first = _voting(rng, 3)
    second = first.copy()
    for table in range(1, HASH_TABLES):
        second[:, table * close_pairs.HASH_BYTES] ^= 0x01
    films = [_film(first), _film(second)]
    assert pair_votes(films, 1) == {(0, 1): 6}
    assert pair_votes(films, MIN_VOTES) == {}


def _near_pair(rng: np.random.Generator, count: int) -> list[FilmFeatures]:
    """Two films of ``count`` descriptors, each close to the other's (one bit off in every
    key but the first): only the first table joins them."""
    first = _voting(rng, count)
    second = first.copy()
    for table in range(1, HASH_TABLES):
        second[:, table * close_pairs.HASH_BYTES] ^= 0x01
    return [_film(first), _film(second)]


def test_the_search_runs_in_shards_through_the_callers_map(monkeypatch):
    """Each table's search goes through the given map (an executor's workers) in shards,
    one per table and key range, then the counting, and the votes are those of one search
    in this process (a worker pool's, here); a set this small searches in process unless
    told."""
    rng = np.random.default_rng(12)
    films = [_film(_voting(rng, 40)) for _ in range(20)] + _near_pair(rng, 12)
    seen: list[tuple[str, int, int]] = []

    def recorded_map(function, jobs, chunksize=1):
        seen.extend((type(job).__name__, *vars(job).values())[:3] for job in jobs)
        return LocalMap(2)(function, jobs, chunksize)

    assert pair_votes(films, 2, map=recorded_map) and not seen
    monkeypatch.setattr(vote_shards, "IN_PROCESS_ROWS", 0)
    votes = pair_votes(films, 2, map=recorded_map)
    shards = [("Search", t, r) for t in range(HASH_TABLES) for r in range(vote_shards.KEY_RANGES)]
    assert seen[: len(shards)] == shards
    assert [kind for kind, *_ in seen[len(shards) :]] == ["Count"]
    assert votes == pair_votes(films, 2, map=vote_shards.in_process)
    assert (len(films) - 2, len(films) - 1) in votes


@pytest.fixture
def recorded(monkeypatch):
    """Every call of the frame step's shortlist votes (its films, and how many file contents
    they are: a film filed twice shares its features), and each bar's total and progress."""
    calls: list[tuple[int, int]] = []
    bars: dict[str, list[int]] = defaultdict(lambda: [0, 0])

    def counted(store, shas, *args, **kwargs):
        calls.append((len(shas), len(set(shas))))
        return stored_pair_votes(store, shas, *args, **kwargs)

    class Bar(bars_module.Bar):
        def total(self, count: int) -> None:
            bars[self.progress.tasks[self.task].description][0] = count
            super().total(count)

        def advance(self, count: int) -> None:
            bars[self.progress.tasks[self.task].description][1] += count
            super().advance(count)

    real_track = bars_module.Progress.add_task

    def add_task(self, description, total=None, **kwargs):
        task = real_track(self, description, total=total, **kwargs)
        bars[description][0] = total or 0
        return task

    monkeypatch.setattr(frame_step, "stored_pair_votes", counted)
    monkeypatch.setattr(bars_module, "Bar", Bar)
    monkeypatch.setattr(bars_module.Progress, "add_task", add_task)
    return calls, bars


def test_a_build_computes_the_shortlist_once_and_every_long_part_shows_progress(
    sample_source, tmp_path, recorded
):
    calls, bars = recorded
    outcome = curate(sample_source, tmp_path, Settings(), executor=LocalExecutor(1))
    assert len(calls) == 1  # only the frame step shortlists (the visits step retrieves)
    pending, contents = calls[0]
    assert 0 < contents < pending  # the sample files some films twice
    assert bars["local features"] == [contents, contents]  # cold: every content computed once
    assert bars["feature shortlist"] == [HASH_TABLES, HASH_TABLES]
    checked = bars["check frames"]
    assert checked[0] > 0 and checked == [checked[0], checked[0]]
    described = bars["describe anatomy"]
    # The visits step describes each kept film's content once (fewer: copies were dropped).
    assert 0 < described[0] < contents and described == [described[0], described[0]]
    assert bars["film vectors"] == described  # a vector for each described film
    searched = bars["search nearest films"]
    assert searched[0] > 0 and searched == [searched[0], searched[0]]
    assert bars["verify visits"][0] > 0 and bars["verify visits"][0] == bars["verify visits"][1]
    summary = outcome.products["summary"]
    assert summary.counts.verified_visits > 0
