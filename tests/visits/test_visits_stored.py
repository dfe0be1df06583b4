"""The visits step as jobs over stores (``curation.visits.stored``, ``curation.visits.find``):
no job and no result carries descriptors or vectors, the tiled search chooses exactly what
one flat faiss search chooses (ties included), the vocabulary's sample stays bounded, and a
rerun describes nothing."""

from __future__ import annotations

import dataclasses
import hashlib
import tracemalloc
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import cv2
import faiss
import numpy as np
import pytest

from curation.core.errors import PericurateError
from curation.core.records import Kind, SourceRecord
from curation.core.store import ArrayStore
from curation.drawing.revisits import revisit
from curation.visits import retrieval
from curation.visits.blocks import VectorBlocks
from curation.visits.descriptors import VisitFeatures, visit_features
from curation.visits.find import (
    find_visits,
    stored_nearest,
    stored_vectors,
    stored_vocabulary,
)
from curation.visits.retrieval import (
    PAIR_INDEX,
    PARTNERS,
    TRAINING_MAX,
    TRAINING_PER_FILM,
    nearest_films,
    one_thread,
    sampled_films,
    search_tiles,
    search_width,
    tile_best,
    tiled_pairs,
)
from curation.visits.step import DESCRIPTORS_STORE, kept_film_visits
from curation.visits.stored import MissingDescriptors, descriptor_store, temporary_stores
from support.film_kit import film

SIZE = (640, 330)
VECTOR_WIDTH = retrieval.WORDS * 128


class RecordingMap:
    """A ``Mapper`` in this process that keeps every job and result it saw, by function."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, Any, Any]] = []

    def __call__(
        self, function: Callable[[Any], Any], jobs: Sequence[Any], chunksize: int = 16
    ) -> Iterator[Any]:
        for job in jobs:
            result = function(job)
            self.seen.append((function.__name__, job, result))
            yield result

    def calls(self, name: str) -> int:
        return sum(1 for function, _, _ in self.seen if function == name)


class Quiet:
    def total(self, count: int) -> None:
        pass

    def advance(self, count: int) -> None:
        pass


def heavy_parts(value: Any) -> list[str]:
    """What in ``value`` is a film's descriptors or vectors: visit features, uint8 arrays
    (descriptors), arrays of VLAD vectors."""
    if isinstance(value, VisitFeatures):
        return ["visit features"]
    if isinstance(value, np.ndarray):
        if value.dtype == np.uint8 and value.size:  # descriptors
            return [f"uint8 array {value.shape}"]
        return [f"vectors {value.shape}"] if value.shape[-1:] == (VECTOR_WIDTH,) else []
    if isinstance(value, list | tuple):
        return [part for item in value for part in heavy_parts(item)]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [p for f in dataclasses.fields(value) for p in heavy_parts(getattr(value, f.name))]
    return []


def grey(picture: np.ndarray) -> np.ndarray:
    return np.clip(picture + 0.5, 0, 255).astype(np.uint8)


@pytest.fixture(scope="module")
def pictures() -> dict[str, np.ndarray]:
    """Six distinct small films and a revisit of the first."""
    made = {f"film{n}": grey(film(200 + n, SIZE)) for n in range(6)}
    made["revisit0"] = revisit(made["film0"], 3)
    return made


def written(pictures: dict[str, np.ndarray], folder: Path) -> dict[str, SourceRecord]:
    """The pictures as PNG files below ``folder``, with the records the chain would hold."""
    folder.mkdir(parents=True, exist_ok=True)
    films = {}
    for name, picture in pictures.items():
        data = cv2.imencode(".png", picture)[1].tobytes()
        (folder / f"{name}.png").write_bytes(data)
        sha = hashlib.sha256(data).hexdigest()
        films[name] = SourceRecord(f"{name}.png", Kind.image, name, sha, len(data))
    return films


def test_no_job_or_result_carries_descriptors_or_vectors(pictures, tmp_path):
    features = [visit_features(p) for p in pictures.values()]
    recording = RecordingMap()
    found = find_visits(features, recording)
    assert found == find_visits(features)  # the same pairs, wherever the jobs run
    assert recording.seen
    for function, job, result in recording.seen:
        assert not heavy_parts(job), (function, heavy_parts(job))
        assert not heavy_parts(result), (function, heavy_parts(result))

    films = written(pictures, tmp_path / "films")
    recording = RecordingMap()
    cache = tmp_path / "cache"
    visits = kept_film_visits(films, tmp_path / "films", cache.joinpath, recording, _quiet)
    names = list(pictures)
    assert [(v.first, v.second) for v in visits] == [
        (names[v.first], names[v.second]) for v in found
    ]
    for function, job, result in recording.seen:
        assert not heavy_parts(job) and not heavy_parts(result), function


def _quiet(name: str, total: int | None) -> Quiet:
    return Quiet()


def test_a_rerun_reads_the_records_and_describes_nothing(pictures, tmp_path):
    films = written(pictures, tmp_path / "films")
    cache = tmp_path / "cache"
    first = RecordingMap()
    visits = kept_film_visits(films, tmp_path / "films", cache.joinpath, first, _quiet)
    assert first.calls("describe_into") == len(films)
    for path in (tmp_path / "films").iterdir():
        path.unlink()  # no film can be read again
    again = RecordingMap()
    assert kept_film_visits(films, tmp_path / "films", cache.joinpath, again, _quiet) == visits
    assert again.calls("describe_into") == 0
    # A film whose stored descriptors went missing is described again, and only that one.
    films = written(pictures, tmp_path / "films")
    descriptor_store(cache / DESCRIPTORS_STORE).path(films["film2"].sha256).unlink()
    third = RecordingMap()
    assert kept_film_visits(films, tmp_path / "films", cache.joinpath, third, _quiet) == visits
    assert [job[1] for f, job, _ in third.seen if f == "describe_into"] == [films["film2"].sha256]


def flat_search(vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """One faiss flat search of every vector among all of them."""
    index = faiss.IndexFlatIP(vectors.shape[1])
    index.add(vectors)
    return one_thread(index, vectors, k)


def flat_pairs(vectors: np.ndarray, partners: int) -> list[tuple[int, int]]:
    """Each film's nearest films as one flat search chooses them."""
    _, found = flat_search(vectors, min(len(vectors), partners + 1))
    return sorted(
        {(min(i, int(j)), max(i, int(j))) for i, row in enumerate(found) for j in row if j != i}
    )


def tied_vectors(count: int, width: int, seed: int) -> np.ndarray:
    """Unit vectors, many of them repeated (equal similarities) and some zero (a film without
    descriptors: similarity 0 to every film)."""
    rng = np.random.default_rng(seed)
    distinct = rng.standard_normal((max(1, count // 4), width)).astype(np.float32)
    distinct /= np.linalg.norm(distinct, axis=1, keepdims=True)
    vectors = distinct[rng.integers(0, len(distinct), count)]
    vectors[rng.random(count) < 0.15] = 0
    return np.ascontiguousarray(vectors)


@pytest.fixture
def small_blocks(monkeypatch):
    """faiss's blocks made small, so that a few dozen films make many tiles."""
    monkeypatch.setattr(faiss.cvar, "distance_compute_blas_query_bs", 16)
    monkeypatch.setattr(faiss.cvar, "distance_compute_blas_database_bs", 8)


@pytest.mark.parametrize(("count", "width"), [(100, 2048), (37, 2048), (12, 64), (61, 64)])
def test_the_tiled_search_chooses_as_the_flat_search_ties_included(small_blocks, count, width):
    vectors = tied_vectors(count, width, count)
    assert len(search_tiles(count, width)) > 1
    for partners in (1, 3, 8):
        assert nearest_films(vectors, partners) == flat_pairs(vectors, partners)


FRAMES = 32  # of each traced allocation: enough to reach the toolkit's call


def held_by_the_toolkit(snapshot: tracemalloc.Snapshot) -> int:
    """Bytes still held that the toolkit's code allocated: not what another thread (pytest's
    workers talk to their controller) allocates meanwhile."""
    ours = tracemalloc.Filter(True, "*/curation/*", all_frames=True)
    return sum(trace.size for trace in snapshot.filter_traces([ours]).traces)


def test_the_pairs_to_verify_are_one_array_not_an_object_per_pair(small_blocks):
    """The driver holds every pair until it is verified: the pairs the tiles choose take the
    bytes of two ``PAIR_INDEX`` a pair (traced), not a tuple and two ints each, and are the
    flat search's."""
    count, width = 400, 64
    vectors = tied_vectors(count, width, 3)
    tiles = search_tiles(count, width)
    keep = search_width(PARTNERS, count)[1]
    found = [
        tile_best(
            t,
            vectors[t.queries.start : t.queries.stop],
            vectors[t.indexed.start : t.indexed.stop],
            keep,
        )
        for t in tiles
    ]
    tiled_pairs(tiles, found, PARTNERS, count)  # what numpy imports on a first call is not held
    tracemalloc.start(FRAMES)
    try:
        pairs = tiled_pairs(tiles, found, PARTNERS, count)
        held = held_by_the_toolkit(tracemalloc.take_snapshot())
    finally:
        tracemalloc.stop()
    assert len(pairs) > 2 * count
    assert held <= 2 * np.dtype(PAIR_INDEX).itemsize * len(pairs) + 8192  # a tuple a pair: 72 KB
    assert [tuple(p) for p in pairs.tolist()] == flat_pairs(vectors, PARTNERS)


def test_a_tile_computes_the_flat_search_s_similarities_bit_for_bit(small_blocks):
    """Equal similarities need the flat search's own arithmetic: its blocks, on its path
    (BLAS for a flat search that used it, even for a block of fewer queries)."""
    rng = np.random.default_rng(5)
    vectors = rng.standard_normal((70, 4096)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    similarity, found = flat_search(vectors, len(vectors))
    flat = np.zeros((len(vectors), len(vectors)), np.float32)
    np.put_along_axis(flat, found, similarity, 1)
    tiles = search_tiles(len(vectors), vectors.shape[1])
    assert any(len(tile.queries) < 16 for tile in tiles) and all(tile.blas for tile in tiles)
    for tile in tiles:
        queries, indexed = (
            vectors[tile.queries.start : tile.queries.stop],
            vectors[tile.indexed.start : tile.indexed.stop],
        )
        best, films = tile_best(tile, queries, indexed, len(tile.indexed))
        rows = np.arange(tile.queries.start, tile.queries.stop)[:, None]
        assert np.array_equal(best, flat[rows, films])


def test_the_vocabulary_s_sample_is_bounded_whatever_the_number_of_films(monkeypatch):
    for count in (1, 500, TRAINING_MAX // TRAINING_PER_FILM, TRAINING_MAX, 3 * TRAINING_MAX + 7):
        chosen, per_film = sampled_films(count)
        assert len(chosen) * per_film <= max(TRAINING_MAX, per_film)
        if count <= TRAINING_MAX:  # every film, as many as the budget allows
            assert list(chosen) == list(range(count))
            assert per_film == max(1, min(TRAINING_PER_FILM, TRAINING_MAX // count))
    chosen, _ = sampled_films(3 * TRAINING_MAX + 7)
    assert (
        chosen[0] == 0 and chosen[-1] == 3 * TRAINING_MAX + 6 and len(set(chosen)) == TRAINING_MAX
    )


def test_a_vector_gone_from_the_store_is_one_sentence_naming_its_file(tmp_path):
    """A block of vectors that vanished between the vectors' jobs and the search (the folder
    removed, or a node that does not see it) stops the run with the project's one-sentence
    error naming the file, not a bare lookup error's traceback."""
    count, width, size = 12, 64, 4
    store = ArrayStore(tmp_path / "vectors", "test")
    names = [f"{n:064x}" for n in range(count // size)]
    vectors = tied_vectors(count, width, 5)
    for n, name in enumerate(names):
        store.put(name, {"vectors": vectors[n * size : (n + 1) * size]})
    store.path(names[1]).unlink()
    blocks = VectorBlocks(store, names, size, count, width)
    missing = r"a block of the films' vectors is missing"
    with pytest.raises(MissingDescriptors, match=missing) as raised:
        stored_nearest(blocks, lambda f, jobs, chunksize=1: map(f, jobs))
    assert str(store.path(names[1])) in str(raised.value)
    assert isinstance(raised.value, PericurateError)


def test_a_tile_reads_a_few_blocks_of_vectors_not_a_file_per_film(small_blocks, random_features):
    """Reading 5,120 files a tile cost more than the tile's products at the projected width:
    the vectors are stored a block of films per file, and the search finds what the flat
    search finds from them."""
    features = random_features(30, 40, 8)
    with temporary_stores(features) as (stores, keys):
        blocks = stored_vectors(stores, keys, stored_vocabulary(stores, keys, serial), serial)
        assert blocks.size == 8 and len(blocks.names) == 4  # 30 films in blocks of 8
        files = list(blocks.store.folder.rglob("*.arrays"))
        assert len(files) == len(blocks.names) + 1  # the blocks and the projection
        vectors = np.concatenate(
            [blocks.store.get(name)["vectors"] for name in blocks.names]  # type: ignore[index]
        )
        assert [tuple(p) for p in stored_nearest(blocks, serial).tolist()] == flat_pairs(
            vectors, PARTNERS
        )


def serial(function, jobs, chunksize=1):
    return map(function, jobs)
