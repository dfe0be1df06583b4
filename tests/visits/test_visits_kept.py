"""The visits' search and verification keep their results on disk (``ArrayStore.kept``): at a
million films the search took some 50 minutes and the verification over half an hour on two
nodes, and a run that stops midway must not do them again. A kept result is the one computed
anew, and it is found only by the same films, search and verification."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import faiss
import numpy as np
import pytest

from curation.core.store import ArrayStore
from curation.drawing.revisits import revisit
from curation.visits import find
from curation.visits.descriptors import visit_features
from curation.visits.find import (
    stored_nearest,
    stored_vectors,
    stored_verified,
    stored_vocabulary,
    verified_store,
)
from curation.visits.retrieval import PAIR_INDEX, as_tuples, nearest_films, search_tiles
from curation.visits.stored import temporary_stores
from support.film_kit import film

SIZE = (640, 330)


class Stopped(Exception):
    """Stands in for the run's process being stopped."""


class CountingMap:
    """A ``Mapper`` in this process counting the jobs it ran by function, stopping the run
    once ``stop_after`` jobs of ``stopping`` have run."""

    def __init__(self, stopping: str = "", stop_after: int = 0) -> None:
        self.ran: list[str] = []
        self.stopping, self.stop_after = stopping, stop_after

    def __call__(
        self, function: Callable[[Any], Any], jobs: Sequence[Any], chunksize: int = 1
    ) -> Iterator[Any]:
        for job in jobs:
            if self.stopping and self.ran.count(self.stopping) == self.stop_after:
                raise Stopped
            self.ran.append(function.__name__)
            yield function(job)


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """faiss's blocks made small, so that a few dozen films make many tiles."""
    monkeypatch.setattr(faiss.cvar, "distance_compute_blas_query_bs", 16)
    monkeypatch.setattr(faiss.cvar, "distance_compute_blas_database_bs", 8)


def test_the_search_s_pairs_are_kept_beside_the_vectors(small_blocks, random_features):
    """A second search of the same vectors reads the pairs; another search runs. (That the
    lists' search and the exact one are kept apart: ``test_visits_inverted``.)"""
    features = random_features(30, 40, 8)
    with temporary_stores(features) as (stores, keys):
        vocabulary = stored_vocabulary(stores, keys, CountingMap())
        blocks = stored_vectors(stores, keys, vocabulary, CountingMap())
        stored = [blocks.store.get(name) for name in blocks.names]
        vectors = np.concatenate([arrays["vectors"] for arrays in stored if arrays])
        tiles = len(search_tiles(blocks.count, blocks.width))
        first = CountingMap()
        pairs = stored_nearest(blocks, first)
        assert as_tuples(pairs) == nearest_films(vectors)
        assert first.ran == ["_tile"] * tiles
        again = CountingMap()
        assert stored_nearest(blocks, again).tolist() == pairs.tolist()
        assert again.ran == []  # read, not searched

        fewer = CountingMap()  # another number of partners is another search
        assert as_tuples(stored_nearest(blocks, fewer, 3)) == nearest_films(vectors, 3)
        assert fewer.ran == ["_tile"] * tiles


def test_a_rerun_of_the_vectors_reads_no_block_whole(small_blocks, random_features, monkeypatch):
    """At 1,000,000 films the blocks hold 8.2 GiB: a rerun asks whether each is there from
    its file's first line (``ArrayStore.holds``)."""
    features = random_features(30, 40, 8)
    with temporary_stores(features) as (stores, keys):
        vocabulary = stored_vocabulary(stores, keys, CountingMap())
        blocks = stored_vectors(stores, keys, vocabulary, CountingMap())
        read: list[str] = []
        get = ArrayStore.get
        monkeypatch.setattr(ArrayStore, "get", lambda s, key: read.append(key) or get(s, key))
        assert stored_vectors(stores, keys, vocabulary, CountingMap()).names == blocks.names
        assert read and not set(read) & set(blocks.names)


@pytest.fixture(scope="module")
def visit_films() -> list[Any]:
    """Five distinct small films and two revisits of the first: two pairs to verify."""
    pictures = [np.clip(film(300 + n, SIZE) + 0.5, 0, 255).astype(np.uint8) for n in range(5)]
    pictures += [revisit(pictures[0], 3), revisit(pictures[0], 4)]
    return [visit_features(picture) for picture in pictures]


def test_the_verification_keeps_each_window_and_a_rerun_verifies_only_the_rest(
    visit_films, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(find, "PAIRS_AT_ONCE", 4)
    pairs = np.array(list(itertools.combinations(range(len(visit_films)), 2)), PAIR_INDEX)
    windows = -(-len(pairs) // 4)
    with temporary_stores(visit_films) as (stores, keys):
        whole = stored_verified(stores.descriptors, keys, pairs, CountingMap())
        assert {(v.first, v.second) for v in whole} >= {(0, 5), (0, 6)}

        kept = verified_store(tmp_path / "verified")
        stopping = CountingMap("_verify", stop_after=10)  # two windows, then stopped in the third
        with pytest.raises(Stopped):
            stored_verified(stores.descriptors, keys, pairs, stopping, kept=kept)
        assert len(list(kept.folder.rglob("*.arrays"))) == 2

        resumed, advanced = CountingMap(), list[int]()
        found = stored_verified(stores.descriptors, keys, pairs, resumed, advanced.append, kept)
        assert found == whole
        assert resumed.ran == ["_verify"] * (len(pairs) - 8)  # the two kept windows not again
        assert sum(advanced) == len(pairs)  # the bar counts the kept pairs too
        assert len(list(kept.folder.rglob("*.arrays"))) == windows

        again = CountingMap()
        assert stored_verified(stores.descriptors, keys, pairs, again, kept=kept) == whole
        assert again.ran == []
        other = CountingMap()  # other pairs are other windows
        stored_verified(stores.descriptors, keys, pairs[::-1].copy(), other, kept=kept)
        assert other.ran == ["_verify"] * len(pairs)
