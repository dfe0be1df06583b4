"""Same-picture candidates, their pixel comparison (parallel and cached) and the verdicts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from curation import pixels
from curation.hashing import View
from curation.pixels import Comparison, ComparisonCache, compare
from curation.same_picture import candidate_pairs, same_picture_pairs


def _code(rng: np.random.Generator) -> bytes:
    return rng.integers(0, 256, 64, dtype=np.uint8).tobytes()


def _flip(code: bytes, bits: int) -> bytes:
    array = np.unpackbits(np.frombuffer(code, np.uint8))
    array[:bits] ^= 1
    return np.packbits(array).tobytes()


def test_candidates_list_an_unturned_pair_once_and_a_turned_pair_each_way():
    rng = np.random.default_rng(5)
    x = _code(rng)
    hashes = {f: {v: _code(rng) for v in View} for f in ("a", "b", "c")}
    hashes["a"][View.identity] = x
    hashes["b"][View.identity] = _flip(x, 3)
    hashes["c"][View.rot90] = _flip(x, 2)  # c turned a quarter looks like a (and b)
    assert candidate_pairs(hashes, 16) == [
        ("a", "b", View.identity, 3),
        ("c", "a", View.rot90, 2),
        ("c", "b", View.rot90, 1),
    ]


def test_a_pair_confirmed_in_several_views_keeps_the_first_and_unconfirmed_pairs_go():
    sizes = {"a": (2400, 1280), "b": (2400, 1280), "c": (2400, 1280)}
    candidates = [
        ("b", "a", View.mirror, 4),
        ("a", "b", View.rot180, 6),
        ("a", "c", View.rot180, 9),
    ]
    asked = []

    def compare_many(jobs):
        asked.extend(jobs)
        same = Comparison(1.0, None, True)
        return [same, same, Comparison(9.0, None, True)]

    pairs = same_picture_pairs(sizes, candidates, compare_many)
    assert asked == [(a, b, v) for a, b, v, _ in candidates]
    assert [(p.first, p.second, p.kind, p.view, p.distance) for p in pairs] == [
        ("a", "b", "mirror", View.mirror, 4)
    ]


def test_mean_absolute_difference_is_exact():
    rng = np.random.default_rng(9)
    a, b = (rng.integers(0, 256, (123, 457), dtype=np.uint8) for _ in range(2))
    exact = np.abs(a.astype(np.int64) - b.astype(np.int64)).mean()
    assert pixels._mad(Image.fromarray(a), Image.fromarray(b)) == pytest.approx(exact, abs=1e-12)


@pytest.fixture(scope="module")
def films(tmp_path_factory) -> dict[str, Path]:
    """A film, a re-encoded copy, a noised copy, a mirrored copy and another film."""
    folder = tmp_path_factory.mktemp("films")
    rng = np.random.default_rng(4)
    coarse = Image.fromarray((rng.random((24, 48)) * 255).astype(np.uint8))
    film = np.asarray(coarse.resize((960, 480), Image.Resampling.BICUBIC))
    noise = rng.normal(0, 8, film.shape)
    other = np.asarray(
        Image.fromarray((rng.random((24, 48)) * 255).astype(np.uint8)).resize((960, 480))
    )
    arrays = {
        "film": (film, 95),
        "reencoded": (film, 80),
        "noised": (np.clip(film + noise, 0, 255).astype(np.uint8), 95),
        "mirrored": (film[:, ::-1], 95),
        "other": (other, 95),
    }
    paths = {}
    for name, (array, quality) in arrays.items():
        paths[name] = folder / f"{name}.jpg"
        Image.fromarray(array).save(paths[name], quality=quality)
    return paths


def _jobs(films: dict[str, Path]) -> list[tuple[Path, str, Path, str, View]]:
    pairs = [
        ("film", "reencoded", View.identity),
        ("film", "noised", View.identity),
        ("mirrored", "film", View.mirror),
        ("film", "other", View.identity),
    ]
    return [(films[a], a, films[b], b, view) for a, b, view in pairs]


def test_comparisons_in_worker_processes_equal_the_serial_ones(films):
    jobs = _jobs(films)
    serial = ComparisonCache(None).compare_many(jobs, workers=1)
    parallel = ComparisonCache(None).compare_many(jobs, workers=2)
    assert parallel == serial == [compare(a, b, view) for a, _, b, _, view in jobs]
    same = [c.same_picture for c in serial]
    assert same == [True, True, True, False]
    reencoded, noised = serial[0].grain, serial[1].grain
    assert noised[1] > 2 * noised[0] and abs(reencoded[1] - reencoded[0]) < 1


def test_saved_comparisons_are_not_computed_again(films, tmp_path, monkeypatch):
    jobs = _jobs(films)
    cache = ComparisonCache(tmp_path / "pixels.parquet")
    first = cache.compare_many(jobs, workers=1)
    cache.save()

    def no_decoding(*args):
        raise AssertionError("a cached comparison was computed again")

    monkeypatch.setattr(pixels, "compare", no_decoding)
    progress = []
    again = ComparisonCache(tmp_path / "pixels.parquet").compare_many(
        jobs, workers=1, on_progress=progress.append
    )
    assert again == first
    assert sum(progress) == len(jobs)
