"""Each film's nearest films through an inverted file, once the films are many.

The exact search compares every film with every film: its cost a film grows with the archive
(3.6 ms at 64,000 films, about 70 ms projected at 1,000,000: docs/scale.md, "The visits'
search at scale"). An inverted file files each film in the nearest of its lists, about one
list per ``FILMS_PER_LIST`` films, and compares a film only with the films of its nearest
lists: one list in ``LISTS_PER_PROBE`` (8 of 256 at 4,096 films, 128 of 4,096 at 64,000), so
that a film is compared with the same share of the archive, through lists of the same size,
at every size. A fixed number of lists searched lost look-alikes as the archive grew, and so
did lists as many as 4 x sqrt(films), which each held more films as it grew: of the audit's
320 planted look-alikes among 64,000 films they found 202, lists of 16 films 307
(docs/scale.md, "The visits' search through an inverted file").

Each list starts from one of the films, evenly chosen, on its first ``LIST_WIDTH`` components
(faiss's k-means there, in one job, would cost that job the films times the lists: by the count
of its products, about an hour of one core at 1,000,000 films; it found 308 of the 320),
then each list's centre is the mean direction, at the full width, of the films nearest its
start on those components, read a block at a time: lists on 64 components alone lost real
visits.

Distributed as shards (``curation.visits.shards``): consecutive lists holding at most
``SHARD_FILMS`` films between them. Each block's probed lists are stored by list; a shard's
job reads its films and, by list, the films that probe any of its lists (``VectorBlocks.films``)
and keeps each such query's best among the probed lists it holds; the driver merges a query's
best over the shards. Each film is filed in exactly one list, decided once (``_file_block``),
so no film is met twice and no list is searched by a film that did not probe it. The products
of a list are hand-written (numpy) rather than faiss's inverted file: faiss files each vector
again by its own search of the centres, which in a near tie can name another list than the one
the shards were cut by.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable

import faiss
import numpy as np
from threadpoolctl import threadpool_limits

from curation.core.parallel import CountingMap, Mapper, Tracker
from curation.core.store import Arrays
from curation.hashes.mapped_pairs import one_openmp_thread
from curation.visits.blocks import VectorBlocks, range_rows
from curation.visits.retrieval import PAIR_INDEX, evenly_chosen
from curation.visits.shards import (
    SHARD_FILMS,
    in_shard,
    padded,
    probes_of_pairs,
    shard_lists,
)
from curation.visits.stored import stored_arrays, stored_rows

INVERTED_FROM = 4096  # films from which the search goes through lists
FILMS_PER_LIST = 16  # lists: about one per this many films, a power of two (256 at 4,096)
LISTS_PER_PROBE = 32  # a film searches one list in this many (8 of 256 at INVERTED_FROM)
LIST_WIDTH = 64  # the vectors' first (strongest) components the lists are drawn on
REFINED_AT_ONCE = 1024  # films read, or lists made unit, at the full width at a time
FILED = "the films' probed lists are"  # what a block's filed lists are, named when gone
QUERIES_AT_ONCE = 4096  # a shard's queries read and searched at a time
SHARDS_KEPT = 64  # shards merged between two keepings of the best so far (72 MB at 1,000,000)
INVERTED_VERSION = (
    f"ivf-films{FILMS_PER_LIST}-chosen-refined-on-all-probe1in{LISTS_PER_PROBE}-w{LIST_WIDTH}"
)

Best = tuple[np.ndarray, np.ndarray]  # per query, the best similarities and films (-1: none)
Read = Callable[[np.ndarray, int | None], np.ndarray]  # films' vectors: films, leading columns


def list_count(films: int) -> int:
    """The number of lists for ``films``: the power of two nearest films / ``FILMS_PER_LIST``
    (one at least), so that a list holds about as many films at every size."""
    return int(2 ** max(0, round(np.log2(max(films, 1) / FILMS_PER_LIST))))


def starting_centres(leading: np.ndarray) -> np.ndarray:
    """The lists' starting centres: ``leading``, the first ``LIST_WIDTH`` components of one
    film a list, each made of unit length."""
    norms = np.linalg.norm(leading, axis=1, keepdims=True)
    return np.ascontiguousarray(leading / np.maximum(norms, 1e-12), np.float32)


def list_centres(drawn: np.ndarray, width: int, chunks: Iterable[np.ndarray]) -> np.ndarray:
    """The lists' centres at the vectors' full ``width``: the films (``chunks`` of their full
    vectors, in order) each put in the nearest list ``drawn`` on their leading components,
    and each list's sum made of unit length (an empty list: a zero centre). One step of k-means
    at the full width: lists drawn on 64 leading components alone lost real revisits, refined
    so they lost none (docs/scale.md). The sums are made unit in place, some lists at a time:
    the norms' squares and the quotient beside them held 1 GiB more in the training job at
    1,000,000 films."""
    sums = np.zeros((len(drawn), width), np.float64)
    for chunk in chunks:
        nearest = _nearest(drawn, chunk[:, : drawn.shape[1]], 1)[:, 0]
        order = np.argsort(nearest, kind="stable")
        starts = np.flatnonzero(np.diff(nearest[order], prepend=-1))
        sums[nearest[order][starts]] += np.add.reduceat(chunk[order], starts, axis=0)
    for at in range(0, len(sums), REFINED_AT_ONCE):
        lists = sums[at : at + REFINED_AT_ONCE]
        lists /= np.maximum(np.linalg.norm(lists, axis=1, keepdims=True), 1e-12)
    return sums.astype(np.float32)


def _nearest(centres: np.ndarray, vectors: np.ndarray, count: int) -> np.ndarray:
    """Each vector's ``count`` nearest centres by faiss's search without an index: an index
    would hold a copy of the centres beside the stored ones (537 MB at 1,000,000 films)."""
    query = np.ascontiguousarray(vectors, np.float32)
    with one_openmp_thread():
        found = faiss.knn(query, centres, min(count, len(centres)), faiss.METRIC_INNER_PRODUCT)
    return np.asarray(found[1], np.int32)


def probe_count(lists: int) -> int:
    """How many of ``lists`` lists a film searches: a share of them, not a fixed number."""
    return max(1, lists // LISTS_PER_PROBE)


def nearest_lists(centres: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    """Each vector's ``probe_count`` nearest lists, nearest first (the first: where it is
    filed)."""
    return _nearest(centres, vectors, probe_count(len(centres)))


def train_lists(count: int, width: int, read: Read) -> np.ndarray:
    """The centres of ``list_count(count)`` lists for ``count`` films whose vectors (``width``
    components) ``read`` gives (films, and how many leading components, or all): started on the
    leading components of one film a list, evenly chosen, then refined at the full width over
    every film, ``REFINED_AT_ONCE`` at a time (over 4 films a list instead, the audit's
    look-alikes among 64,000 films were found 227 times of 320, against 307)."""
    lists = list_count(count)
    drawn = starting_centres(read(evenly_chosen(count, lists), LIST_WIDTH))
    parts = (
        np.arange(at, min(at + REFINED_AT_ONCE, count)) for at in range(0, count, REFINED_AT_ONCE)
    )
    return list_centres(drawn, width, (read(part, None) for part in parts))


def best_of(similarity: np.ndarray, films: np.ndarray, keep: int) -> Best:
    """Per row, the ``keep`` best (similarity, then smallest film; no film, -1 at -inf, last)."""
    order = np.lexsort((films, -similarity), axis=1)[:, :keep]
    return np.take_along_axis(similarity, order, 1), np.take_along_axis(films, order, 1)


def shard_best(
    filed: np.ndarray,
    films: np.ndarray,
    lists: np.ndarray,
    queries: np.ndarray,
    probes: np.ndarray,
    keep: int,
) -> Best:
    """The ``keep`` best of each query among the filed films of the lists it probes:
    ``filed`` vectors of ``films`` (indexes) filed in ``lists``, ``queries`` vectors probing
    ``probes`` (one row of lists each)."""
    best = (
        np.full((len(queries), keep), -np.inf, np.float32),
        np.full((len(queries), keep), -1, PAIR_INDEX),
    )
    # Each list's queries at once: the queries and the lists they probe here, by list (a
    # query probes a list once, so each list's queries stay ascending).
    held = np.unique(lists)
    rows, columns = np.nonzero(np.isin(probes, held))
    probed = probes[rows, columns]
    order = np.argsort(probed, kind="stable")
    rows, probed = rows[order], probed[order]
    with threadpool_limits(limits=1):  # once: each call reads the process's libraries
        for number in held:
            asking = rows[
                np.searchsorted(probed, number) : np.searchsorted(probed, number, "right")
            ]
            filed_here = np.flatnonzero(lists == number)
            for start in range(0, len(filed_here) if len(asking) else 0, SHARD_FILMS):
                members = filed_here[start : start + SHARD_FILMS]  # a crowded list, in parts
                similarity = queries[asking] @ filed[members].T
                found = np.broadcast_to(films[members], similarity.shape)
                merged = best_of(
                    np.hstack([best[0][asking], similarity]),
                    np.hstack([best[1][asking], found]),
                    keep,
                )
                best[0][asking], best[1][asking] = merged
    return best


def search_shard(
    queries: np.ndarray, probes: np.ndarray, shard: range, read: Read, keep: int
) -> tuple[np.ndarray, Best]:
    """Each of ``queries`` (the films that probe any list of ``shard``, ascending; ``probes``:
    each one's list, then its probed lists in the shard, ``in_shard``) and its ``keep``
    best among the shard's films (those filed in its lists), the films' vectors given by
    ``read``, ``QUERIES_AT_ONCE`` queries at a time."""
    filed_rows = np.flatnonzero((probes[:, 0] >= shard.start) & (probes[:, 0] < shard.stop))
    films = queries[filed_rows]
    filed = read(films, None)
    parts = [
        shard_best(
            filed,
            films.astype(PAIR_INDEX),
            probes[filed_rows, 0],
            read(queries[at], None),
            probes[at, 1:],
            keep,
        )
        for at in np.array_split(
            np.arange(len(queries)), max(1, -(-len(queries) // QUERIES_AT_ONCE))
        )
    ]
    similarity, found = (np.concatenate([part[n] for part in parts]) for n in (0, 1))
    return queries.astype(PAIR_INDEX), (similarity, found)


def merge_shard(best: Best, queries: np.ndarray, found: Best, keep: int) -> None:
    """One shard's ``found`` (the best of its ``queries``) merged into ``best``: per film, the
    ``keep`` best over the shards merged so far."""
    similarity, films = found
    merged = best_of(
        np.hstack([best[0][queries], similarity]), np.hstack([best[1][queries], films]), keep
    )
    best[0][queries], best[1][queries] = merged


def no_best(count: int, keep: int) -> Best:
    """The best of ``count`` films before any shard is merged: none."""
    return np.full((count, keep), -np.inf, np.float32), np.full((count, keep), -1, PAIR_INDEX)


def best_pairs(best: Best) -> np.ndarray:
    """The pairs ``(i, j)``, ``i < j``, of each film ``i`` and the films of its ``best`` (itself
    aside), each once, sorted: an ``(n, 2)`` array."""
    films = best[1]
    firsts = np.broadcast_to(np.arange(len(films), dtype=PAIR_INDEX)[:, None], films.shape)
    chosen = (films >= 0) & (films != firsts)
    pairs = np.sort(np.column_stack([firsts[chosen], films[chosen]]), axis=1)
    return np.unique(pairs, axis=0) if len(pairs) else np.zeros((0, 2), PAIR_INDEX)


def merged_pairs(count: int, found: Iterable[tuple[np.ndarray, Best]], keep: int) -> np.ndarray:
    """The pairs of each film ``i`` and the ``keep`` best films it found over the shards
    (``best_pairs``)."""
    best = no_best(count, keep)
    for queries, its_best in found:
        merge_shard(best, queries, its_best, keep)
    return best_pairs(best)


# The same search over the stored vectors, as jobs: the lists trained by one job on evenly
# chosen films, each block of films filed by a job (its films' probed lists stored beside its
# vectors), each shard searched by a job; the driver holds the lists' sizes and the merge.


def _key(*parts: str) -> str:
    return hashlib.sha256("\n".join([INVERTED_VERSION, *parts]).encode()).hexdigest()


def _train(job: tuple[VectorBlocks, str]) -> str:
    """Worker side: the lists trained on the stored vectors, stored under ``key``."""
    blocks, key = job
    count, width, read = blocks.count, blocks.width, blocks.films
    blocks.store.kept(key, lambda: {"centres": train_lists(count, width, read)})
    return key


def _file_block(job: tuple[VectorBlocks, str, int]) -> np.ndarray:
    """Worker side: block ``number``'s films filed, stored beside the block by list (each
    film's list, ``filed``; the films probing each list, ``films`` from ``starts[list]``, so
    that a shard's job reads its lists' films alone); the number of films filed in each
    list."""
    blocks, centres_key, number = job
    centres = stored_arrays(blocks.store, centres_key, "the visits' lists are")["centres"]
    films, name = min(blocks.size, blocks.count - number * blocks.size), blocks.names[number]

    def filed() -> Arrays:
        probes = nearest_lists(centres, range_rows(blocks.store, [name], 0, films))
        order = np.argsort(probes, axis=None, kind="stable")  # by list, then film
        return {
            "filed": probes[:, 0],
            "films": (order // probes.shape[1]).astype(np.int32),
            "starts": np.searchsorted(probes.ravel()[order], np.arange(len(centres) + 1)),
        }

    stored = blocks.store.kept(_key(centres_key, name), filed)
    return np.bincount(stored["filed"], minlength=len(centres))


def _search(job: tuple[VectorBlocks, str, range, int]) -> tuple[np.ndarray, Best]:
    """Worker side: ``search_shard`` over the stored vectors, read by film; of each block only
    the films that probe the shard's lists, read by list, each with its own list and its
    probed lists in the shard (every film's whole row would be 8 GB at 1,000,000 films)."""
    blocks, centres_key, shard, keep = job
    queries, probed = [], []
    for number, name in enumerate(blocks.names):
        key = _key(centres_key, name)
        starts = stored_rows(
            blocks.store, key, "starts", np.arange(shard.start, shard.stop + 1), FILED
        )
        films = stored_rows(blocks.store, key, "films", np.arange(starts[0], starts[-1]), FILED)
        lists = np.repeat(np.arange(shard.start, shard.stop, dtype=np.int32), np.diff(starts))
        asking, rows = probes_of_pairs(films, lists)
        own = stored_rows(blocks.store, key, "filed", asking, FILED)
        queries.append(asking + number * blocks.size)
        probed.append(np.hstack([own[:, None], rows]))
    return search_shard(np.concatenate(queries), padded(probed), shard, blocks.films, keep)


def stored_inverted_pairs(
    blocks: VectorBlocks,
    map: Mapper,
    partners: int,
    shard_films: int = SHARD_FILMS,
    bar: Tracker | None = None,
) -> np.ndarray:
    """Each film's ``partners`` nearest films among those of its probed lists, as an ``(n, 2)``
    array of pairs ``i < j``, sorted: the lists trained, the blocks filed and the shards
    searched as jobs through ``map``, each shard counted on ``bar``. Every ``SHARDS_KEPT``
    shards the best merged so far are kept beside the vectors (one file, replaced each time,
    removed at the end): the shards' search took some 50 minutes at 1,000,000 films on two
    nodes, and a run stopped midway searches only the shards it had not merged."""
    lists = list_count(blocks.count)
    centres_key = _key("centres", str(lists), *blocks.names)
    for _ in map(_train, [(blocks, centres_key)], chunksize=1):
        pass
    jobs = [(blocks, centres_key, number) for number in range(len(blocks.names))]
    sizes = np.zeros(lists, np.int64)
    for filed in map(_file_block, jobs, chunksize=1):
        sizes += filed
    keep = min(blocks.count, partners + 1)
    shards = shard_lists(sizes, shard_films)
    cut = [f"{shard.start}-{shard.stop}" for shard in shards]
    kept_key = _key(centres_key, "merged", str(keep), *cut)
    kept = blocks.store.get(kept_key)
    done, best = 0, no_best(blocks.count, keep)
    if kept is not None:
        done, best = int(kept["shards"][0]), (kept["similarity"].copy(), kept["films"].copy())
    counting = CountingMap(map, bar, len(shards))
    if bar is not None:
        bar.advance(done)  # the shards merged before the stop
    searches = [(blocks, centres_key, shard, keep) for shard in shards[done:]]
    found = counting(_search, searches, chunksize=1)
    for merged, (queries, its_best) in enumerate(found, done + 1):
        merge_shard(best, queries, its_best, keep)
        if merged % SHARDS_KEPT == 0 and merged < len(shards):
            arrays = {"shards": np.array([merged]), "similarity": best[0], "films": best[1]}
            blocks.store.put(kept_key, arrays)
    blocks.store.path(kept_key).unlink(missing_ok=True)
    return best_pairs(best)


def rows_of(vectors: np.ndarray) -> Read:
    """What ``train_lists`` and ``search_shard`` read, from vectors in memory."""
    return lambda films, columns: vectors[films, :columns]


def inverted_nearest(
    vectors: np.ndarray, partners: int, shard_films: int = SHARD_FILMS
) -> np.ndarray:
    """``stored_inverted_pairs`` over vectors in memory, in this process (the benches')."""
    count, read = len(vectors), rows_of(vectors)
    lists = list_count(count)
    probes = nearest_lists(train_lists(count, vectors.shape[1], read), vectors)
    keep = min(count, partners + 1)
    shards = shard_lists(np.bincount(probes[:, 0], minlength=lists), shard_films)
    found = (search_shard(*in_shard(probes, shard), shard, read, keep) for shard in shards)
    return merged_pairs(count, found, keep)
