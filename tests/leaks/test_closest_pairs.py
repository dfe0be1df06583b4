"""The audit's closest cross-split pairs: the same pairs as every search result sorted, made
from the few results that can be among them (a 1,000,000-row audit's searches give 7.2
million, which the driver held as pairs). The nearest distances to train are read from the
same searches: one exhaustive search a pair of splits, not a second one from train. The
searches are per-file work: blocks of films through the executor's map, each job reading the
earlier split's codes from the work folder, with the results of one search of all the films."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import faiss
import numpy as np
import pytest

from curation.audit.audit import run_audit
from curation.leaks import leakage, nearest
from curation.leaks.leakage import (
    CLOSEST_PAIRS,
    Pair,
    closest_pairs,
    nearest_to_train,
    sorted_pairs,
)
from curation.leaks.nearest import CODES_FOLDER, SplitSearches, split_searches
from curation.leaks.target import Film
from tests.audit.test_audit_at_scale import RecordingMap, write_target

SPLITS = ["train", "validation", "test"]


def films_with_ties(count: int = 300) -> list[Film]:
    """Random codes, a tenth of them copies of a train film (distance 0, many ties), some
    film ids used twice."""
    rng = np.random.default_rng(7)
    codes = rng.integers(0, 256, (count, 64), dtype=np.uint8)
    for n in range(0, count, 10):
        codes[n] = codes[n % 40]
    splits = ["train"] * (count // 2) + ["validation"] * (count // 4) + ["test"] * (count // 4)
    return [
        Film(f"f{n % 250:04d}", splits[n], 0, n, "", None, codes[n].tobytes()) for n in range(count)
    ]


def in_process(function: Any, jobs: Sequence[Any], chunksize: int = 1) -> Iterator[Any]:
    return map(function, jobs)


def stops_after_one(function: Any, jobs: Sequence[Any], chunksize: int = 1) -> Iterator[Any]:
    """A map that runs the first job, then stops as a killed run does."""
    yield function(jobs[0])
    raise KeyboardInterrupt


def searched(films: list[Film], count: int = CLOSEST_PAIRS) -> SplitSearches:
    with tempfile.TemporaryDirectory() as folder:
        return split_searches(films, SPLITS, Path(folder), count, in_process)


def every_result(films: list[Film], count: int) -> list[Pair]:
    """Every search result made a pair, in search order (the old way)."""
    members = {s: [i for i, f in enumerate(films) if f.split == s] for s in SPLITS}
    pairs = []
    for i, first in enumerate(SPLITS):
        for second in SPLITS[i + 1 :]:
            index = faiss.IndexBinaryFlat(512)
            index.add(np.stack([np.frombuffer(films[n].ahash, np.uint8) for n in members[first]]))
            queries = np.stack([np.frombuffer(films[n].ahash, np.uint8) for n in members[second]])
            distances, labels = index.search(queries, min(count, len(members[first])))
            for q, (row_d, row_l) in enumerate(zip(distances, labels, strict=True)):
                for d, r in zip(row_d, row_l, strict=True):
                    pairs.append(Pair("ahash", int(d), members[first][r], members[second][q]))
    return pairs


@pytest.mark.parametrize("count", [1, 5, CLOSEST_PAIRS, 200])
def test_the_closest_pairs_are_those_of_every_result_sorted(count: int):
    films = films_with_ties()
    assert (
        closest_pairs(films, SPLITS, searched(films, count), count)
        == sorted_pairs(films, every_result(films, count))[:count]
    )


def test_only_results_that_can_be_among_the_closest_become_pairs(monkeypatch):
    made = []

    class CountedPair(Pair):
        def __init__(self, *fields: object) -> None:
            made.append(fields)
            super().__init__(*fields)  # type: ignore[arg-type]

    films = films_with_ties()
    monkeypatch.setattr(leakage, "Pair", CountedPair)
    closest_pairs(films, SPLITS, searched(films, 5), 5)
    # In each search at least 5 results are copies, at distance 0: they alone can be among the
    # 5 closest. The old way made a pair of each of the 1,125 results.
    zero = [(p.method, p.distance, p.a, p.b) for p in every_result(films, 5) if p.distance == 0]
    assert made == zero and len(zero) < 1125 / 10


def test_the_nearest_distances_to_train_are_each_films_least_distance_to_a_train_film():
    films = films_with_ties()
    bits = np.unpackbits(np.stack([np.frombuffer(f.ahash, np.uint8) for f in films]), axis=1)
    train = bits[[f.split == "train" for f in films]]
    expected = {
        split: sorted(
            int((train != bits[n]).sum(axis=1).min())
            for n, f in enumerate(films)
            if f.split == split
        )
        for split in SPLITS[1:]
    }
    assert nearest_to_train(searched(films)) == expected
    assert expected["validation"][:8] == [0] * 8  # the copies are there


def test_searching_in_blocks_gives_the_results_of_one_search(monkeypatch):
    films = films_with_ties()
    monkeypatch.setattr(nearest, "QUERY_BLOCK", 7)  # 75 films a later split: 11 blocks
    codes = {
        s: np.stack([np.frombuffer(f.ahash, np.uint8) for f in films if f.split == s])
        for s in SPLITS
    }
    for (first, second), (distances, labels) in searched(films).items():
        index = faiss.IndexBinaryFlat(512)
        index.add(codes[first])
        whole = index.search(codes[second], CLOSEST_PAIRS)
        assert np.array_equal(distances, whole[0]) and np.array_equal(labels, whole[1])


def test_an_audit_searches_each_pair_of_splits_once_in_jobs_that_read_the_codes(tmp_path):
    recording = RecordingMap()
    audit = run_audit(
        str(write_target(tmp_path / "t")), permutations=9, visits=False, map=recording
    )
    jobs = [job for what, job in recording.seen if what == "_nearest_block job"]
    # Train against test, once: the closest pairs and the nearest distances read it; the job
    # carries the test films' codes and the path of the train films', not the codes.
    assert [(type(path), len(block), k) for path, block, k, *_ in jobs] == [
        (type(tmp_path), 640, 10)
    ]
    assert audit.nearest["test"][0] == 0 and audit.closest[0].distance == 0


def test_the_codes_of_every_split_but_the_last_are_written_for_the_jobs(tmp_path: Path):
    """The last split is searched against the others, never searched in: no job reads its
    codes (at 1,000,000 rows, 6.4 MB written for nothing)."""
    split_searches(films_with_ties(120), SPLITS, tmp_path, CLOSEST_PAIRS, in_process)
    written = sorted(p.name for p in (tmp_path / CODES_FOLDER).iterdir())
    assert written == [f"split-{n}.codes" for n in range(len(SPLITS) - 1)]


def test_a_search_run_again_reads_each_block_kept_and_a_stopped_one_searches_the_rest(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    """Each block's results are kept in the work folder: run again, no block is searched;
    stopped after one block, the rerun searches only the others; another count searches
    them all. The results are those of one whole search each time."""
    monkeypatch.setattr(nearest, "QUERY_BLOCK", 16)  # 30 validation and 30 test films
    films = films_with_ties(120)
    searches: list[int] = []
    one_thread = nearest.one_openmp_thread

    @contextmanager
    def counted() -> Iterator[None]:
        searches.append(1)
        with one_thread():
            yield

    monkeypatch.setattr(nearest, "one_openmp_thread", counted)
    whole = searched(films)
    blocks = len(searches)
    assert blocks == 6  # train-validation, train-test and validation-test, two blocks each

    with pytest.raises(KeyboardInterrupt):
        split_searches(films, SPLITS, tmp_path, CLOSEST_PAIRS, stops_after_one)
    assert len(searches) == blocks + 1
    again = split_searches(films, SPLITS, tmp_path, CLOSEST_PAIRS, in_process)
    assert len(searches) == 2 * blocks  # the five others
    split_searches(films, SPLITS, tmp_path, CLOSEST_PAIRS, in_process)
    assert len(searches) == 2 * blocks  # none
    split_searches(films, SPLITS, tmp_path, CLOSEST_PAIRS - 1, in_process)
    assert len(searches) == 3 * blocks  # another count: every block
    assert whole.keys() == again.keys()
    for pair, (distances, labels) in whole.items():
        assert np.array_equal(distances, again[pair][0]) and np.array_equal(labels, again[pair][1])
