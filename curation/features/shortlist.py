"""Which pairs of films are worth matching by local features: a shortlist whose cost per
film is bounded, and whose recall holds, whatever the number of films.

Matching every pair of films by features is quadratic; most pairs share nothing. Every ORB
descriptor of every film is filed under ``HASH_TABLES`` keys, each ``HASH_BYTES`` of its
bytes (locality-sensitive hashing: two close descriptors agree on some key with a high
probability). Descriptors of different films under one key, within ``MAX_HAMMING`` bits of
each other, are a vote for the pair of films; each descriptor votes once per partner film.
Every pair of descriptors in a key of up to ``WINDOW`` is compared; in a wider key, the
descriptors are taken in the order of their bytes (then of their rows), and each is
compared with the ``NEAREST`` after it: close descriptors sit next to each other in that
order, and the work per descriptor and table stays below ``WINDOW`` comparisons, whatever
the number of films. A key is common, no evidence (a flat area, a border, a label
on every film), when it holds more descriptors than ``COMMON_SHARE`` of the number of films
(and more than ``WINDOW``), and is passed over: the bound grows with the archive, so a key
that is evidence among 1,000 films is still evidence among 100,000 (a fixed bound passes
over ever more keys, and the copies they vote for, as films are added: docs/scale.md).
A crop, a pad, a turn or a re-toned copy of a film, or another visit of the same patient,
shares many corners with it (ORB is rotation-invariant), so it collects far more votes than
an unrelated film: a pair needs ``MIN_VOTES`` and votes from ``MIN_SHARE`` of the voting
descriptors of the film with fewer (measured on real films by ``python -m
bench.same_picture.feature_cost``, margins in docs/margins.md, "Shortlist"), and each film keeps its
``per_film`` best-voted partners. Each table's search is split into ``KEY_RANGES`` shards
by key (``key_shards``; a key's descriptors are all in one shard), run wherever the
caller's ``map`` runs work, and their close pairs merged. Only a quarter of each film's
descriptors vote (``voting``): sixteen times fewer pairs of descriptors to compare, and the
real films' margin holds.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from curation.core.parallel import Mapper
from curation.features.features import FilmFeatures

Job = TypeVar("Job")
Result = TypeVar("Result")

PER_FILM = 8  # best-voted partners kept per film
HASH_TABLES = 10  # keys per descriptor: 10 x 3 of its 32 bytes
HASH_BYTES = 3  # 24-bit keys
WINDOW = 24  # keys of up to this many descriptors: every pair of them is compared
NEAREST = 3  # in a wider key, each descriptor is compared with this many after it
# A key with more descriptors than this share of the films is common: 24 up to 4,800 films,
# which keeps the pool the gate's margins were measured on as it was (docs/scale.md).
COMMON_SHARE = 0.005
SAMPLE_MASK = 3  # descriptors whose last byte has these bits clear vote (a quarter)
KEY_RANGES = 4  # shards of each table's keys, searched apart (``map``)
# Voting descriptors up to which the search stays in the caller's process: there, starting
# workers and sending them the shards costs more than the search (the sample's 225 films:
# 0.16-0.23 s of CPU in process, 0.59-0.79 s through two local workers; docs/scale.md).
IN_PROCESS_ROWS = 1_000_000
MAX_HAMMING = 40  # of 256 bits: a vote only for a close descriptor
MIN_VOTES = 10  # a few coincidences are no evidence
MIN_SHARE = 0.12  # votes over the fewer voting descriptors (bench.same_picture.feature_cost)
SHORTLIST_VERSION = (
    f"shortlist-v3/lsh{HASH_TABLES}x{8 * HASH_BYTES}-sample{SAMPLE_MASK}-window{WINDOW}-"
    f"nearest{NEAREST}-"
    f"common{COMMON_SHARE}-"
    f"h{MAX_HAMMING}-votes{MIN_VOTES}-share{MIN_SHARE}"
)


def voting(features: FilmFeatures) -> np.ndarray:
    """Which of a film's descriptors vote: those whose last byte has the ``SAMPLE_MASK``
    bits clear (a quarter; a copy's and its original's matching descriptors mostly agree)."""
    votes: np.ndarray = (features.descriptors[:, -1] & SAMPLE_MASK) == 0
    return votes


def common_bound(films: int) -> int:
    """Descriptors under one key beyond which the key is common among ``films`` films."""
    return max(WINDOW, math.ceil(COMMON_SHARE * films))


def _neighbours(
    rows: np.ndarray,
    buckets: np.ndarray,
    offsets: range,
    firsts: list[np.ndarray],
    seconds: list[np.ndarray],
) -> None:
    """Append the pairs of ``rows`` ``offset`` places apart within one key, for each of
    ``offsets`` (``buckets``: each row's key; a key's rows are together)."""
    for offset in offsets:
        if offset >= len(rows):
            return
        same = buckets[offset:] == buckets[:-offset]
        if not same.any():
            return
        firsts.append(rows[:-offset][same])
        seconds.append(rows[offset:][same])


def _close_pairs(
    descriptors: np.ndarray, words: np.ndarray, owner: np.ndarray, films: int, table: int
) -> tuple[np.ndarray, np.ndarray]:
    """Descriptor rows (p, q), ``p < q``, of different films that share ``table``'s key, in
    a key that is not common (any two in a key of up to ``WINDOW``; at most ``NEAREST``
    places apart in the key's order, descriptor bytes then row, in a wider key), and within
    ``MAX_HAMMING`` bits (``words``: the descriptors as four big-endian 64-bit words, word
    by word)."""
    count = len(descriptors)
    row_bits = max(1, (count - 1).bit_length())  # a 24-bit key leaves 40 bits: 10^12 rows
    key = np.zeros(count, np.uint64)
    for column in range(table * HASH_BYTES, (table + 1) * HASH_BYTES):
        key = (key << np.uint64(8)) | descriptors[:, column]
    # Key and row in one word: one plain sort orders by key, then by row, which is a stable
    # argsort's order in two thirds of its time, and puts each key's rows in ascending order.
    packed = np.sort((key << np.uint64(row_bits)) | np.arange(count, dtype=np.uint64))
    order = (packed & np.uint64((1 << row_bits) - 1)).astype(np.intp)
    ordered = packed >> np.uint64(row_bits)
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    sizes = np.diff(np.r_[starts, len(ordered)])
    usable = (sizes >= 2) & (sizes <= common_bound(films))
    rows = np.repeat(usable, sizes)  # rows of ``order`` in a usable key
    bucket = np.repeat(np.arange(len(starts)), sizes)
    kept = order[rows]
    kept_bucket = bucket[rows]
    wide = np.repeat(sizes[usable] > WINDOW, sizes[usable])  # keys whose order matters
    if wide.any():
        # A wide key's rows in the order of their bytes (then rows): they stay in the same
        # places of ``kept``, which holds each key's rows together.
        members = kept[wide]
        by_bytes = np.lexsort((members, *words[::-1, members], kept_bucket[wide]))
        kept[wide] = members[by_bytes]
    firsts: list[np.ndarray] = []
    seconds: list[np.ndarray] = []
    # Every key's nearest ``NEAREST`` rows after each row, then the further ones of the
    # narrow keys alone (removing whole keys keeps each remaining key's rows together).
    _neighbours(kept, kept_bucket, range(1, NEAREST + 1), firsts, seconds)
    narrow = ~wide
    _neighbours(kept[narrow], kept_bucket[narrow], range(NEAREST + 1, WINDOW), firsts, seconds)
    if not firsts:
        empty = np.zeros(0, np.intp)
        return empty, empty
    p, q = np.concatenate(firsts), np.concatenate(seconds)
    p, q = np.minimum(p, q), np.maximum(p, q)
    apart = owner[p] != owner[q]
    p, q = p[apart], q[apart]
    distance = np.zeros(len(p), np.int64)
    for word in words:  # one word of every pair at a time: no (pairs x 4) copies to gather
        distance += np.bitwise_count(word[p] ^ word[q])
    close = distance <= MAX_HAMMING
    return p[close], q[close]


@dataclass(frozen=True)
class KeyShard:
    """One table's descriptors whose key falls in one range of keys, with their rows in the
    whole set (ascending) and their films: a key's descriptors are all in one shard, so the
    shards' close pairs together are the table's."""

    table: int
    rows: np.ndarray  # (n,) int64
    descriptors: np.ndarray  # (n, 32) uint8
    owner: np.ndarray  # (n,) int64: each row's film
    films: int  # films in the whole set (``common_bound``)


def key_shards(
    descriptors: np.ndarray, owner: np.ndarray, films: int, table: int
) -> list[KeyShard]:
    """``table``'s ``KEY_RANGES`` shards, by the first byte of its key."""
    first = descriptors[:, table * HASH_BYTES].astype(np.int64) * KEY_RANGES // 256
    shards = []
    for key_range in range(KEY_RANGES):
        rows = np.flatnonzero(first == key_range)
        shards.append(
            KeyShard(table, rows, np.ascontiguousarray(descriptors[rows]), owner[rows], films)
        )
    return shards


def close_pairs_of(shard: KeyShard) -> tuple[np.ndarray, np.ndarray]:
    """Worker side: the close pairs of one shard (``_close_pairs``), as rows of the whole
    set. Its rows keep their order, so a key's order of rows is the whole set's."""
    # A descriptor's 32 bytes as four 64-bit words, each word a row: bit counts by
    # ``np.bitwise_count`` a word at a time, 10x faster than over the (pairs x 4) array.
    # Big-endian, so the words in turn order the descriptors as their bytes do.
    words = np.ascontiguousarray(shard.descriptors.view(">u8").T.astype(np.uint64))
    p, q = _close_pairs(shard.descriptors, words, shard.owner, shard.films, shard.table)
    return shard.rows[p], shard.rows[q]


def in_process(
    function: Callable[[Job], Result], jobs: Sequence[Job], chunksize: int = 1
) -> Iterator[Result]:
    """The ``Mapper`` of a caller that runs the search here: plain ``map``."""
    return (function(job) for job in jobs)


def _among(values: np.ndarray, ordered: np.ndarray) -> np.ndarray:
    """Which of ``values`` are in ``ordered`` (sorted, and far fewer): a binary search into
    it. ``np.isin`` sorts both arrays instead, the slower way when ``ordered`` is the far
    smaller (ten keys' 300,000 pairs of films against 7,500 strong ones on a large corpus)."""
    if not len(ordered):
        return np.zeros(len(values), bool)
    at = np.minimum(np.searchsorted(ordered, values), len(ordered) - 1)
    found: np.ndarray = ordered[at] == values
    return found


def pair_votes(
    features: Sequence[FilmFeatures],
    min_votes: int = 1,
    on_progress: Callable[[int], None] = lambda count: None,
    map: Mapper = in_process,
) -> dict[tuple[int, int], int]:
    """Votes per pair of films (i < j) with at least ``min_votes``: how many descriptors of
    either film have a close descriptor of the other under a shared key (each descriptor
    votes once per partner film, so a repeated texture counts once). Each table's search
    runs as ``KEY_RANGES`` shards through ``map`` (an executor's: another process or node),
    or here for fewer than ``IN_PROCESS_ROWS`` voting descriptors."""
    sampled = [f.descriptors[voting(f)] for f in features]
    counts = [len(d) for d in sampled]
    if sum(counts) == 0:
        on_progress(HASH_TABLES)
        return {}
    films = len(features)
    owner = np.repeat(np.arange(films, dtype=np.int64), counts)  # rows are in film order
    descriptors = np.ascontiguousarray(np.concatenate(sampled))
    if len(descriptors) <= IN_PROCESS_ROWS:
        map = in_process
    tables = []  # per table: the close rows p < q, and their films' pair (i < j) as i * films + j
    for table in range(HASH_TABLES):
        shards = key_shards(descriptors, owner, films, table)
        found = list(map(close_pairs_of, shards, chunksize=1))
        p = np.concatenate([rows for rows, _ in found])
        q = np.concatenate([rows for _, rows in found])
        tables.append((p, q, owner[p] * films + owner[q]))
        on_progress(1)
    # Each close pair is at most two votes (one per side), so a pair of films with fewer
    # than ``min_votes / 2`` close pairs cannot reach ``min_votes``: only the others are
    # counted again, one vote per descriptor and partner film. The tables' pairs stay apart
    # and one sorted array of their films' pairs finds the strong ones, rather than arrays
    # of every table's pairs at once, each in fresh memory, which slow a process's first call.
    every = np.concatenate([pairs for _, _, pairs in tables])
    every.sort()
    enough = max(1, -(-min_votes // 2))  # close pairs a pair of films needs
    # Sorted, a pair of films with ``enough`` close pairs is equal to the one ``enough - 1``
    # places on: one comparison, no array of counts.
    reaching = every[enough - 1 :] == every[: max(0, len(every) - enough + 1)]
    strong = np.unique(every[enough - 1 :][reaching])
    del every, reaching
    voted = [np.zeros(0, np.int64)]
    for p, q, pairs in tables:
        chosen = _among(pairs, strong)
        p, q = p[chosen], q[chosen]
        voted += [p * films + owner[q], q * films + owner[p]]
    by_descriptor = np.unique(np.concatenate(voted))  # each descriptor once per partner film
    film, other = owner[by_descriptor // films], by_descriptor % films
    keys, votes = np.unique(
        np.minimum(film, other) * films + np.maximum(film, other), return_counts=True
    )
    kept = votes >= min_votes
    return {
        (int(k // films), int(k % films)): int(n)
        for k, n in zip(keys[kept], votes[kept], strict=True)
    }


def best_partners(votes: Mapping[tuple[int, int], int], per_film: int) -> set[tuple[int, int]]:
    """Each film's ``per_film`` best-voted partners among ``votes`` (ties by index), as
    index pairs (i < j)."""
    partners: dict[int, list[tuple[int, int]]] = {}
    for (i, j), count in votes.items():
        partners.setdefault(i, []).append((-count, j))
        partners.setdefault(j, []).append((-count, i))
    return {
        (min(film, other), max(film, other))
        for film, ranked in partners.items()
        for _, other in sorted(ranked)[:per_film]
    }


def shortlisted(
    features: Sequence[FilmFeatures],
    votes: Mapping[tuple[int, int], int],
    per_film: int = PER_FILM,
) -> list[tuple[int, int]]:
    """Index pairs (i < j), sorted, of ``votes`` (``pair_votes``) worth verifying: each
    film's ``per_film`` best-voted partners among those with ``MIN_SHARE`` of the fewer
    voting descriptors of the two."""
    voters = [int(voting(f).sum()) for f in features]
    worth = {
        (i, j): count
        for (i, j), count in votes.items()
        if count >= MIN_SHARE * min(voters[i], voters[j])
    }
    return sorted(best_partners(worth, per_film))


def feature_shortlist(
    features: Sequence[FilmFeatures],
    per_film: int = PER_FILM,
    on_progress: Callable[[int], None] = lambda count: None,
    map: Mapper = in_process,
) -> list[tuple[int, int]]:
    """Index pairs (i < j), sorted, worth verifying by
    ``curation.features.features.match_features``:
    each film's ``per_film`` best-voted partners among those with at least ``MIN_VOTES``
    votes and ``MIN_SHARE`` of the fewer voting descriptors of the two (ties by index). At
    most ``per_film * len(features)`` pairs. ``on_progress(1)`` after each of the
    ``HASH_TABLES`` keys."""
    return shortlisted(features, pair_votes(features, MIN_VOTES, on_progress, map), per_film)
