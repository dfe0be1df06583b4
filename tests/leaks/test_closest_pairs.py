"""The audit's closest cross-split pairs: the same pairs as every search result sorted, made
from the few results that can be among them (a 1,000,000-row audit's searches give 7.2
million, which the driver held as pairs)."""

from __future__ import annotations

import faiss
import numpy as np
import pytest

from curation.leaks import leakage
from curation.leaks.leakage import CLOSEST_PAIRS, Pair, closest_pairs, sorted_pairs
from curation.leaks.target import Film

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
        closest_pairs(films, SPLITS, count)
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
    closest_pairs(films, SPLITS, 5)
    # In each search at least 5 results are copies, at distance 0: they alone can be among the
    # 5 closest. The old way made a pair of each of the 1,125 results.
    zero = [(p.method, p.distance, p.a, p.b) for p in every_result(films, 5) if p.distance == 0]
    assert made == zero and len(zero) < 1125 / 10
