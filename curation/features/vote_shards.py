"""The shortlist's votes (``curation.features.shortlist``) as map-reduce over files, so that
no descriptor passes through the caller's process: it holds each film's number of voting
descriptors and the votes that come back, nothing else.

Three rounds of jobs run through the caller's ``map`` (an executor's: local worker processes
or the nodes of a cluster, all of which see the ``work`` folder):

1. **Filing**: each job reads a batch of ``FILMS_PER_BATCH`` films' features from the store
   and files their voting descriptors, for each table and each of its ``KEY_RANGES`` ranges
   of keys (by the key's first byte: a key's descriptors are all in one range), with their
   rows in the whole set (the prefix sums of the voter counts: film order) and their films.
2. **Search**: one job per table and key range reads its range's files in batch order (so
   its rows are in the set's order, and its close pairs the set's:
   ``curation.features.close_pairs``) and files the close pairs by pair of films, in
   ``count_parts`` parts.
3. **Counting**: one job per part counts each pair of films' votes, one per descriptor and
   partner film across all tables, and returns the pairs with at least ``min_votes``.

Up to ``IN_PROCESS_ROWS`` voting descriptors the jobs run in the caller's process: there,
starting workers costs more than the search.
"""

from __future__ import annotations

import math
import shutil
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import numpy as np

from curation.core.parallel import Mapper
from curation.core.store import ArrayStore
from curation.features.close_pairs import HASH_BYTES, HASH_TABLES, close_pairs, voting_rows
from curation.features.features import stored_features
from curation.features.part_files import read_part, records, write_parts

Job = TypeVar("Job")
Result = TypeVar("Result")

KEY_RANGES = 4  # shards of each table's keys, searched apart
# Voting descriptors up to which the search stays in the caller's process: there, starting
# workers and sending them the shards costs more than the search (the sample's 225 films:
# 0.16-0.23 s of CPU in process, 0.59-0.79 s through two local workers; docs/scale.md).
IN_PROCESS_ROWS = 1_000_000
FILMS_PER_BATCH = 1024  # films a filing job reads (its job: their sha256s, ~100 KB)
# Voting descriptors per counting part: a part holds the close pairs of about this many
# descriptors' films (a few per descriptor).
ROWS_PER_COUNT = 1_000_000


def in_process(
    function: Callable[[Job], Result], jobs: Sequence[Job], chunksize: int = 1
) -> Iterator[Result]:
    """The ``Mapper`` of a caller that runs the jobs here: plain ``map``."""
    return (function(job) for job in jobs)


def _filed(work: Path, batch: int) -> Path:
    """A filing job's file: per table, its voting descriptors by key range."""
    return work / "filed" / f"{batch:07d}.npy"


def _close(work: Path, table: int, key_range: int) -> Path:
    """A search job's file: its close pairs by counting part."""
    return work / "close" / f"{table}-{key_range}.npy"


@dataclass(frozen=True)
class Filing:
    """Files a batch of films' voting descriptors: the films ``first_film`` on (their
    sha256s in ``store``, a file with each one's bytes, should its store file have become
    unreadable, and their voter counts), whose first row in the set is ``first_row``."""

    store: ArrayStore
    shas: tuple[str, ...]
    paths: tuple[str, ...]
    voters: tuple[int, ...]
    first_film: int
    first_row: int
    batch: int
    work: Path


def file_films(
    voting: Sequence[np.ndarray], first_film: int, first_row: int, batch: int, work: Path
) -> None:
    """File one batch of films' voting descriptors (``voting``: each film's, the films
    ``first_film`` on, whose first row in the set is ``first_row``) by table and key range."""
    descriptors = np.concatenate([np.zeros((0, 32), np.uint8), *voting])
    counts = [len(film) for film in voting]
    owner = np.repeat(np.arange(first_film, first_film + len(voting), dtype=np.int64), counts)
    rows = np.arange(first_row, first_row + len(descriptors), dtype=np.int64)
    filed = records(row=rows, owner=owner, descriptor=descriptors)
    groups = []
    for table in range(HASH_TABLES):
        key_range = descriptors[:, table * HASH_BYTES].astype(np.int64) * KEY_RANGES // 256
        groups.append((key_range, filed))
    write_parts(_filed(work, batch), groups, KEY_RANGES)


def file_batch(job: Filing) -> None:
    """Worker side: read one batch's features from the store and file their voting
    descriptors (``file_films``)."""
    voting = []
    for sha, path, expected in zip(job.shas, job.paths, job.voters, strict=True):
        descriptors = stored_features(job.store, sha, path).descriptors
        voting.append(descriptors[voting_rows(descriptors)])
        if len(voting[-1]) != expected:
            raise ValueError(
                f"The features of {sha} in {job.store.folder} have {len(voting[-1])} voting "
                f"descriptors, not the {expected} counted."
            )
    file_films(voting, job.first_film, job.first_row, job.batch, job.work)


@dataclass(frozen=True)
class Search:
    """Finds the close pairs of one table's key range among ``films`` films of ``rows``
    voting descriptors, filed by ``batches`` filing jobs, and files them in ``parts`` parts
    by pair of films."""

    table: int
    key_range: int
    batches: int
    films: int
    rows: int
    parts: int
    work: Path


def search_shard(job: Search) -> int:
    """Worker side: one key range's close pairs (as rows of the whole set, with their
    films), filed by the part of their pair of films; their number."""
    filed = np.concatenate(
        [
            read_part(_filed(job.work, batch), job.table, job.key_range)
            for batch in range(job.batches)
        ]
    )
    rows, owner = filed["row"], filed["owner"]
    p, q = close_pairs(filed["descriptor"], owner, job.rows, job.table)
    first, second = owner[p], owner[q]  # first < second: rows are in film order
    part = (first * job.films + second) % job.parts
    found = records(p=rows[p], q=rows[q], first=first, second=second)
    write_parts(_close(job.work, job.table, job.key_range), [(part, found)], job.parts)
    return len(p)


@dataclass(frozen=True)
class Count:
    """Counts the votes of the pairs of films of one ``part``, keeping those with at least
    ``min_votes``."""

    part: int
    films: int
    min_votes: int
    work: Path


def _among(values: np.ndarray, ordered: np.ndarray) -> np.ndarray:
    """Which of ``values`` are in ``ordered`` (sorted, and far fewer): a binary search into
    it. ``np.isin`` sorts both arrays instead, the slower way when ``ordered`` is the far
    smaller (ten keys' 300,000 pairs of films against 7,500 strong ones on a large corpus)."""
    if not len(ordered):
        return np.zeros(len(values), bool)
    at = np.minimum(np.searchsorted(ordered, values), len(ordered) - 1)
    found: np.ndarray = ordered[at] == values
    return found


def _starts(ordered: np.ndarray) -> np.ndarray:
    """Where each run of equal values of a sorted array starts (``np.unique`` hashes
    integers: several times slower on millions of them)."""
    starts: np.ndarray = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]][: len(ordered)])
    return starts


def count_part(job: Count) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Worker side: the pairs of films (first, second, votes) of one part with at least
    ``min_votes`` votes: how many descriptors of either film have a close descriptor of the
    other under a shared key, each descriptor once per partner film over all tables."""
    found = np.concatenate(
        [
            read_part(_close(job.work, table, key_range), 0, job.part)
            for table in range(HASH_TABLES)
            for key_range in range(KEY_RANGES)
        ]
    )
    p, q, first, second = found["p"], found["q"], found["first"], found["second"]
    films = job.films
    pairs = first * films + second
    # Each close pair is at most two votes (one per side), so a pair of films with fewer
    # than ``min_votes / 2`` close pairs (over all tables) cannot reach ``min_votes``: only
    # the others are counted, one vote per descriptor and partner film. Sorted, a pair of
    # films with ``enough`` close pairs is equal to the one ``enough - 1`` places on.
    every = np.sort(pairs)
    enough = max(1, -(-job.min_votes // 2))
    reaching = every[enough - 1 :] == every[: max(0, len(every) - enough + 1)]
    reached = every[enough - 1 :][reaching]
    strong = reached[_starts(reached)]
    del every, reaching
    chosen = _among(pairs, strong)
    p, q, first, second = p[chosen], q[chosen], first[chosen], second[chosen]
    by_descriptor = np.sort(np.concatenate([p * films + second, q * films + first]))
    # Rows are numbered in film order, so sorted by row (then partner), the descriptors'
    # films are in order too: the sorted films are each sorted row's.
    own = np.sort(np.concatenate([first, second]))
    once = _starts(by_descriptor)  # each descriptor once per partner film
    film, other = own[once], by_descriptor[once] % films
    pairs = np.sort(np.minimum(film, other) * films + np.maximum(film, other))
    starts = _starts(pairs)
    keys, votes = pairs[starts], np.diff(np.r_[starts, len(pairs)])
    kept = votes >= job.min_votes
    return keys[kept] // films, keys[kept] % films, votes[kept]


def count_parts(rows: int) -> int:
    """Counting parts for ``rows`` voting descriptors (``ROWS_PER_COUNT`` a part)."""
    return max(1, math.ceil(rows / ROWS_PER_COUNT))


def _search_and_count(
    films: int,
    rows: int,
    batches: int,
    work: Path,
    min_votes: int,
    on_progress: Callable[[int], None],
    map: Mapper,
) -> dict[tuple[int, int], int]:
    """The search and counting rounds over the ``batches`` filed batches of ``rows`` voting
    descriptors of ``films`` films in ``work``: the votes, sorted by pair."""
    parts = count_parts(rows)
    searches = [
        Search(table, key_range, batches, films, rows, parts, work)
        for table in range(HASH_TABLES)
        for key_range in range(KEY_RANGES)
    ]
    for done, _ in enumerate(map(search_shard, searches, chunksize=1), 1):
        if done % KEY_RANGES == 0:  # jobs come back in order: a table's ranges in turn
            on_progress(1)
    counts = [Count(part, films, min_votes, work) for part in range(parts)]
    votes = {
        (int(i), int(j)): int(n)
        for first, second, count in map(count_part, counts, chunksize=1)
        for i, j, n in zip(first, second, count, strict=True)
    }
    return dict(sorted(votes.items()))


def _votes(
    voters: Sequence[int],
    file: Callable[[np.ndarray, Mapper], int],
    work: Path,
    min_votes: int,
    on_progress: Callable[[int], None],
    map: Mapper,
) -> dict[tuple[int, int], int]:
    """The three rounds over films of ``voters`` voting descriptors each, ``file`` filing
    them (given each film's first row and the map; it returns its number of batches)."""
    starts = np.cumsum([0, *voters], dtype=np.int64)
    rows = int(starts[-1])
    if rows == 0:
        on_progress(HASH_TABLES)
        return {}
    if rows <= IN_PROCESS_ROWS:
        map = in_process
    shutil.rmtree(work, ignore_errors=True)  # what a killed run left
    try:
        batches = file(starts, map)
        return _search_and_count(len(voters), rows, batches, work, min_votes, on_progress, map)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def stored_pair_votes(
    store: ArrayStore,
    shas: Sequence[str],
    paths: Sequence[str],
    voters: Sequence[int],
    work: Path,
    min_votes: int = 1,
    on_progress: Callable[[int], None] = lambda count: None,
    map: Mapper = in_process,
) -> dict[tuple[int, int], int]:
    """Votes per pair of films (i < j) with at least ``min_votes`` (sorted by pair), among
    the films whose features ``store`` holds under ``shas`` (``paths``: a file with each
    one's bytes, read only should its store file have become unreadable; ``voters``: each
    film's voting descriptors, ``voting_rows``): how many descriptors of either film have a close
    descriptor of the other under a shared key (each descriptor votes once per partner film,
    so a repeated texture counts once). The jobs run through ``map`` (an executor's: another
    process or node, which sees ``work``), or here for at most ``IN_PROCESS_ROWS`` voting
    descriptors; ``work`` is removed when done. ``on_progress(1)`` after each of the
    ``HASH_TABLES`` tables' search."""
    if not len(voters) == len(paths) == len(shas):
        raise ValueError(
            f"{len(voters)} voter counts and {len(paths)} paths for {len(shas)} films."
        )

    def file(starts: np.ndarray, map: Mapper) -> int:
        filing = [
            Filing(
                store,
                tuple(shas[start : start + FILMS_PER_BATCH]),
                tuple(paths[start : start + FILMS_PER_BATCH]),
                tuple(int(n) for n in voters[start : start + FILMS_PER_BATCH]),
                start,
                int(starts[start]),
                batch,
                work,
            )
            for batch, start in enumerate(range(0, len(shas), FILMS_PER_BATCH))
        ]
        for _ in map(file_batch, filing, chunksize=1):
            pass
        return len(filing)

    return _votes(voters, file, work, min_votes, on_progress, map)


def held_pair_votes(
    voting: Sequence[np.ndarray],
    work: Path,
    min_votes: int = 1,
    on_progress: Callable[[int], None] = lambda count: None,
    map: Mapper = in_process,
) -> dict[tuple[int, int], int]:
    """``stored_pair_votes`` of films whose voting descriptors this process holds
    (``voting``: each film's): they are filed from here, the search and counting run as
    there."""

    def file(starts: np.ndarray, map: Mapper) -> int:
        batches = range(0, len(voting), FILMS_PER_BATCH)
        for batch, start in enumerate(batches):
            chosen = voting[start : start + FILMS_PER_BATCH]
            file_films(chosen, start, int(starts[start]), batch, work)
        return len(batches)

    return _votes([len(film) for film in voting], file, work, min_votes, on_progress, map)
