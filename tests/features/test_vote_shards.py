"""The shortlist's votes as map-reduce over a store of features: the same votes as the
definition whatever the batches and counting parts, through worker processes, and with no
descriptor in any job or result (the driver holds counts and votes only)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from curation.core.parallel import LocalMap
from curation.core.store import ArrayStore
from curation.features import vote_shards
from curation.features.close_pairs import HASH_BYTES, HASH_TABLES
from curation.features.features import FEATURES_VERSION, FilmFeatures, features_of
from curation.features.shortlist import (
    MIN_VOTES,
    feature_shortlist,
    pair_votes,
    shortlisted,
    stored_pair_votes,
    voter_counts,
)
from support import film_kit as kit
from tests.features.test_feature_cost import _votes_by_definition


def _films(seed: int, count: int = 60) -> list[FilmFeatures]:
    """``count`` films of random descriptors (voting and not), with planted copies: films
    sharing a part of another's descriptors, a few bits off (some under one key alone, so
    a key's descriptors must be searched together), some twice; a film
    with no descriptors, one with no voting descriptors, and one filed twice (the same
    features: one content under two names)."""
    rng = np.random.default_rng(seed)
    films = []
    for n in range(count):
        own = rng.integers(0, 256, (int(rng.integers(20, 120)), 32), dtype=np.uint8)
        if n >= 6 and rng.random() < 0.5:
            source = films[int(rng.integers(0, n))].descriptors
            taken = source[rng.random(len(source)) < rng.uniform(0.2, 0.9)].copy()
            flips = rng.random(taken.shape) < 0.01
            taken[flips] ^= np.uint8(1 << int(rng.integers(0, 7)))
            if rng.random() < 0.5:  # a bit off in every key but one: one key joins each
                kept = rng.integers(0, HASH_TABLES, len(taken))
                for table in range(HASH_TABLES):
                    taken[kept != table, table * HASH_BYTES] ^= 0x02
            own = np.concatenate([own, taken])
        films.append(FilmFeatures(rng.random((len(own), 2), np.float32), own, (512, 400)))
    films[1] = FilmFeatures(np.zeros((0, 2), np.float32), np.zeros((0, 32), np.uint8), (9, 9))
    silent = films[2].descriptors.copy()
    silent[:, -1] |= 1  # no voting descriptor
    films[2] = FilmFeatures(films[2].points, silent, films[2].size)
    films[-1] = films[len(films) // 2]
    return films


def _nowhere(shas: list[str]) -> list[str]:
    """No film file behind any content (an empty name): every one must be read from the
    store."""
    return ["" for _ in shas]


def _stored(films: list[FilmFeatures], root) -> tuple[ArrayStore, list[str]]:
    """The films' features in a store as the frame step writes them, by made-up sha256s
    (a film filed twice: one sha256)."""
    store = ArrayStore(root, FEATURES_VERSION)
    shas = []
    for film in films:
        sha = f"{id(film):064x}"
        shas.append(sha)
        arrays = {"points": film.points, "descriptors": film.descriptors}
        store.put(sha, {**arrays, "size": np.array(film.size, np.int64)})
    return store, shas


@pytest.mark.parametrize(
    ("min_votes", "batch", "rows_per_part"),
    [(1, 1024, 1_000_000), (MIN_VOTES, 1024, 1_000_000), (4, 7, 300), (MIN_VOTES, 1, 50)],
)
def test_the_stored_votes_are_those_of_the_definition(
    tmp_path, monkeypatch, min_votes, batch, rows_per_part
):
    """Films with planted copies, filed in one batch or many, counted in one part or many:
    the votes are the definition's (each descriptor once per partner film over all tables,
    each key's descriptors searched together) and the work folder is gone."""
    films = _films(21)
    store, shas = _stored(films, tmp_path / "store")
    monkeypatch.setattr(vote_shards, "FILMS_PER_BATCH", batch)
    monkeypatch.setattr(vote_shards, "ROWS_PER_COUNT", rows_per_part)
    expected = _votes_by_definition(films, min_votes)
    assert len(expected) > 10 and max(expected.values()) > 3 * min_votes  # the test has teeth
    work = tmp_path / "work"
    votes = stored_pair_votes(store, shas, _nowhere(shas), voter_counts(films), work, min_votes)
    assert votes == expected and list(votes) == sorted(expected)
    assert not work.exists()
    assert pair_votes(films, min_votes) == expected  # the in-memory call: the same jobs


def test_the_driver_holds_counts_and_votes_and_ships_no_descriptor(tmp_path, monkeypatch):
    """Through two worker processes (batches of 16 films, several counting parts), every
    job and every result the map carries is small beside the descriptors, and the votes,
    the progress and the shortlist are those of the search in this process."""
    films = _films(22, 200)
    store, shas = _stored(films, tmp_path / "store")
    voters = voter_counts(films)
    monkeypatch.setattr(vote_shards, "FILMS_PER_BATCH", 16)
    monkeypatch.setattr(vote_shards, "ROWS_PER_COUNT", 2_000)
    in_process = stored_pair_votes(
        store, shas, _nowhere(shas), voters, tmp_path / "work", MIN_VOTES
    )
    monkeypatch.setattr(vote_shards, "IN_PROCESS_ROWS", 0)
    shipped: dict[str, list[int]] = {"Filing": [], "Search": [], "Count": [], "results": []}

    def recorded_map(function, jobs, chunksize=1):
        for job in jobs:
            shipped[type(job).__name__].append(len(pickle.dumps(job)))
        for result in LocalMap(2)(function, jobs, chunksize):
            shipped["results"].append(len(pickle.dumps(result)))
            yield result

    progress: list[int] = []
    votes = stored_pair_votes(
        store,
        shas,
        _nowhere(shas),
        voters,
        tmp_path / "work",
        MIN_VOTES,
        progress.append,
        recorded_map,
    )
    assert votes == in_process and len(votes) > 20
    assert sum(progress) == HASH_TABLES
    batches, parts = -(-len(films) // 16), vote_shards.count_parts(sum(voters))
    assert parts > 1
    assert len(shipped["Filing"]) == batches and len(shipped["Count"]) == parts
    assert len(shipped["Search"]) == HASH_TABLES * vote_shards.KEY_RANGES
    voting_bytes = 32 * sum(voters)
    assert max(max(sizes) for sizes in shipped.values()) < 4096
    # Jobs name films (a sha256 and a count each), never their descriptors: all that
    # crosses is below a quarter of the voting descriptors, which old shards carried 10 times.
    assert sum(sum(sizes) for sizes in shipped.values()) < voting_bytes / 4
    assert shortlisted(voters, votes) == feature_shortlist(films)


def test_a_content_lost_from_the_store_is_described_again_and_a_wrong_count_named(tmp_path):
    """Features the store lost are described again from the film's file (the votes as
    with the store whole); features that disagree with the voter counts the rows are
    numbered by: one sentence naming the content, and the work folder removed."""
    paths = [kit.save(kit.film(seed, (384, 192)), tmp_path / f"{seed}.jpg") for seed in range(6)]
    paths.append(kit.save(kit.cropped(kit.film(2, (384, 192)), 0.1), tmp_path / "copy.jpg"))
    films = [features_of(str(path)) for path in paths]
    store, shas = _stored(films, tmp_path / "store")
    names = [str(path) for path in paths]
    whole = stored_pair_votes(store, shas, names, voter_counts(films), tmp_path / "work")
    assert whole  # the copy votes for its original
    kept = store.path(shas[6]).read_bytes()
    store.path(shas[6]).unlink()
    assert stored_pair_votes(store, shas, names, voter_counts(films), tmp_path / "work") == whole
    assert store.path(shas[6]).read_bytes() == kept and not (tmp_path / "work").exists()
    wrong = voter_counts(films)
    wrong[4] += 1
    with pytest.raises(ValueError, match=f"features of {shas[4]} .* not the {wrong[4]} counted"):
        stored_pair_votes(store, shas, names, wrong, tmp_path / "work")
    assert not (tmp_path / "work").exists()
