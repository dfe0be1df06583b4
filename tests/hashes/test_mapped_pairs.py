"""Range searches as a table of the multi-index a job: the rows of one search in one process,
each pair found by one table only, the codes read from files, never carried by a job."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from curation.hashes import mapped_pairs, pairs
from curation.hashes.hashing import View
from curation.hashes.mapped_pairs import TableJob, mapped_range_pairs
from curation.hashes.multi_index import multi_index_pairs, substrings, table_pairs
from curation.hashes.orientations import (
    mapped_pairs_in_any_orientation,
    negative_pairs,
    pairs_in_any_orientation,
)
from tests.hashes.test_multi_index import EVERY, NEVER, _film_like, _reference

RADIUS = 30


class JobsSeen:
    """A map in this process that keeps the jobs it ran."""

    def __init__(self) -> None:
        self.jobs: list[Any] = []

    def __call__(
        self, function: Callable[[Any], Any], jobs: Sequence[Any], chunksize: int = 1
    ) -> Iterator[Any]:
        for job in jobs:
            self.jobs.append(job)
            yield function(job)


def _near(codes: np.ndarray, seed: int) -> np.ndarray:
    """Each code with a few of its bits flipped: many rows within the radius of another's."""
    rng = np.random.default_rng(seed)
    flips = rng.random((len(codes), 512)) < rng.uniform(0, 0.06, (len(codes), 1))
    return codes ^ np.packbits(flips, axis=1)


def test_a_large_search_runs_a_table_a_job_and_gives_the_rows_of_one_search(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    codes = _film_like(300, seed=3)
    queries = [None, _near(codes, 1), _near(codes[::-1], 2)]
    monkeypatch.setattr(mapped_pairs, "INDEX_PAIRS", EVERY)  # the search counts as large
    seen = JobsSeen()
    found = mapped_range_pairs(codes, iter(queries), RADIUS, tmp_path, seen)
    tables = substrings(codes, RADIUS)
    assert tables is not None
    assert [job.table for job in seen.jobs] == list(range(len(tables)))  # one job a table
    for job in seen.jobs:  # files and bit positions: no codes travel with a job
        assert isinstance(job, TableJob)
        assert job.queries[0] is None and all(isinstance(q, Path) for q in job.queries[1:])
    monkeypatch.setattr(pairs, "INDEX_PAIRS", NEVER)  # the rows of brute force, in one search
    assert np.array_equal(found[0], pairs.self_pairs(codes, RADIUS))
    for rows, query in zip(found[1:], queries[1:], strict=True):
        assert query is not None
        assert np.array_equal(rows, _reference(codes, query, RADIUS))


def test_a_small_search_runs_here_with_the_same_rows(tmp_path: Path):
    codes = _film_like(120, seed=5)
    near = _near(codes, 4)
    seen = JobsSeen()
    found = mapped_range_pairs(codes, [None, near], RADIUS, tmp_path, seen)
    assert seen.jobs == []
    assert np.array_equal(found[0], pairs.self_pairs(codes, RADIUS))
    assert np.array_equal(found[1], _reference(codes, near, RADIUS))


def test_a_small_search_draws_no_tables_for_the_multi_index(tmp_path: Path):
    """A search small enough for brute force runs in the driver and draws no multi-index
    tables: counting each bit's share unpacks 512 bytes a code (up to ``BLOCK`` codes), which
    set the driver's peak of the build's look-alike search at 10,000 films (3.8 times that of
    the search in one process). Measured here: 3.1 times the codes' bytes without the tables,
    9.3 times with them."""
    codes = np.random.default_rng(6).integers(0, 256, (4000, 64), dtype=np.uint8)
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        found = mapped_range_pairs(codes, [None, codes[::-1].copy()], RADIUS, tmp_path, JobsSeen())
        peak = tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()
    assert len(found[1]) == len(codes)  # each code found once, reversed
    assert peak < 5 * codes.nbytes


@pytest.mark.parametrize("same_codes", [True, False])
def test_each_pair_is_found_by_one_table_and_the_tables_find_them_all(same_codes: bool):
    codes = _film_like(300, seed=8)
    queries = codes if same_codes else _near(codes, 9)
    tables = substrings(codes, 32)
    assert tables is not None
    by_table = [
        table_pairs(codes, [(queries, same_codes)], 32, tables, table)[0]
        for table in range(len(tables))
    ]
    rows = [tuple(row) for found in by_table for row in found.tolist()]
    assert len(rows) == len(set(rows))  # no pair twice
    whole = multi_index_pairs(codes, queries, 32, tables, same_codes=same_codes)
    assert sorted(rows) == [tuple(row) for row in whole.tolist()]
    assert len(whole) > len(codes) // 2  # the codes sit near one another: many pairs to find


@pytest.mark.parametrize("index_pairs", [EVERY, NEVER])
def test_every_orientation_and_the_negatives_equal_the_search_in_one_process(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, index_pairs: int
):
    """Turned films are never paired with themselves, upright and negative pairs come once."""
    rng = np.random.default_rng(11)
    upright = _film_like(200, seed=12)
    codes = {view: _near(upright[rng.permutation(200)], n) for n, view in enumerate(View)}
    codes[View.identity] = upright
    codes[View.mirror][:20] = upright[:20]  # symmetric films: near themselves turned
    upright[100:110] = np.bitwise_not(_near(upright[:10], 13))  # negatives of films 0-9
    monkeypatch.setattr(mapped_pairs, "INDEX_PAIRS", index_pairs)
    monkeypatch.setattr(pairs, "INDEX_PAIRS", index_pairs)
    asked: list[View] = []

    def codes_in(view: View) -> np.ndarray:
        asked.append(view)
        return codes[view]

    found = mapped_pairs_in_any_orientation(
        codes_in, 32, View, tmp_path, JobsSeen(), negatives=True
    )
    turned_views = [view for view in View if view is not View.identity]
    assert asked == [View.identity, *turned_views]  # each view's codes made once
    expected = [
        *pairs_in_any_orientation(codes.__getitem__, 32),
        (None, negative_pairs(upright, 32)),
    ]
    assert [view for view, _ in found] == [view for view, _ in expected]
    for (_, rows), (_, want) in zip(found, expected, strict=True):
        assert np.array_equal(rows, want)
    turned = dict(found)[View.mirror]
    assert len(turned) and not (turned[:, 0] == turned[:, 1]).any()
    assert len(dict(found)[None]) >= 10


class TablesSearched:
    """``table_pairs`` counting the tables it searched."""

    def __init__(self) -> None:
        self.tables: list[int] = []

    def __call__(self, *args: Any) -> list[np.ndarray]:
        self.tables.append(args[4])
        return table_pairs(*args)


class StopsAfter(JobsSeen):
    """A map that stops (as a killed run does) once it has run ``count`` jobs."""

    def __init__(self, count: int) -> None:
        super().__init__()
        self.count = count

    def __call__(
        self, function: Callable[[Any], Any], jobs: Sequence[Any], chunksize: int = 1
    ) -> Iterator[Any]:
        for job in jobs:
            if len(self.jobs) == self.count:
                raise KeyboardInterrupt
            self.jobs.append(job)
            yield function(job)


def test_a_search_run_again_reads_the_tables_kept_and_another_search_runs_them(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    codes = _film_like(300, seed=21)
    near = _near(codes, 22)
    monkeypatch.setattr(mapped_pairs, "INDEX_PAIRS", EVERY)  # the search counts as large
    searched = TablesSearched()
    monkeypatch.setattr(mapped_pairs, "table_pairs", searched)
    first = mapped_range_pairs(codes, [None, near], RADIUS, tmp_path, JobsSeen())
    tables = len(searched.tables)
    assert tables > 1
    again = mapped_range_pairs(codes, [None, near], RADIUS, tmp_path, JobsSeen())
    assert len(searched.tables) == tables  # none searched again
    for rows, kept in zip(first, again, strict=True):
        assert np.array_equal(rows, kept)
    assert np.array_equal(again[1], _reference(codes, near, RADIUS))
    for sets, radius in (
        ([None, near], RADIUS - 2),  # another radius
        ([None, _near(codes, 23)], RADIUS),  # other queries
        ([near, None], RADIUS),  # the same sets in another order
    ):
        before = len(searched.tables)
        mapped_range_pairs(codes, sets, radius, tmp_path, JobsSeen())
        assert searched.tables[before:] == list(range(len(substrings(codes, radius))))


def test_a_search_stopped_midway_searches_again_only_the_tables_it_had_not(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    codes = _film_like(300, seed=24)
    near = _near(codes, 25)
    monkeypatch.setattr(mapped_pairs, "INDEX_PAIRS", EVERY)
    searched = TablesSearched()
    monkeypatch.setattr(mapped_pairs, "table_pairs", searched)
    with pytest.raises(KeyboardInterrupt):
        mapped_range_pairs(codes, [near], RADIUS, tmp_path, StopsAfter(3))
    assert searched.tables == [0, 1, 2]
    (rows,) = mapped_range_pairs(codes, [near], RADIUS, tmp_path, JobsSeen())
    assert searched.tables == list(range(len(substrings(codes, RADIUS))))  # each table once
    assert np.array_equal(rows, _reference(codes, near, RADIUS))


def test_a_small_search_run_again_is_read_kept(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    codes = _film_like(120, seed=26)
    calls: list[int] = []

    def counted(indexed: np.ndarray, max_distance: int) -> np.ndarray:
        calls.append(len(indexed))
        return pairs.self_pairs(indexed, max_distance)

    monkeypatch.setattr(mapped_pairs, "self_pairs", counted)
    (first,) = mapped_range_pairs(codes, [None], RADIUS, tmp_path, JobsSeen())
    (again,) = mapped_range_pairs(codes, [None], RADIUS, tmp_path, JobsSeen())
    assert calls == [120]
    assert np.array_equal(first, again) and len(first)
    for kept in (tmp_path / mapped_pairs.KEPT_FOLDER).rglob("*.arrays"):
        kept.write_bytes(kept.read_bytes()[:-8])  # cut short: not what a search writes
    (damaged,) = mapped_range_pairs(codes, [None], RADIUS, tmp_path, JobsSeen())
    assert calls == [120, 120] and np.array_equal(damaged, first)
