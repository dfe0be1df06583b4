"""The aligned-pixel gate's tile measures and the frame step's decoded films
(``curation.same_picture.frame_check``, ``curation.same_picture.frame_step``): what makes
them cheaper must leave every figure as the tile-by-tile definition gives it."""

from __future__ import annotations

import io
import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from curation.features.features import features_of, match_features
from curation.same_picture import frame_check, frame_step
from curation.same_picture.film_memo import per_film
from curation.same_picture.frame_check import (
    ALIGNED,
    compare_frames,
    tile_cover,
    worst_tile,
)
from support import film_kit as kit

TILE, STEP = ALIGNED.tile, ALIGNED.tile // 2


def _tiles(height: int, width: int) -> list[tuple[int, int]]:
    return [
        (y, x) for y in range(0, height - TILE + 1, STEP) for x in range(0, width - TILE + 1, STEP)
    ]


def _overlap_mask(height: int, width: int, seed: int) -> np.ndarray:
    """A compared area as the gate meets one: a turned rectangle with holes (clipped spots)."""
    rng = np.random.default_rng(seed)
    ys, xs = np.mgrid[0:height, 0:width]
    inside = (xs - 0.15 * ys > rng.integers(10, 60)) & (
        ys + 0.1 * xs < height - rng.integers(5, 40)
    )
    holes = rng.random((height, width)) < 0.05
    return inside & ~holes


@pytest.mark.parametrize(("height", "width", "seed"), [(250, 512, 1), (512, 371, 2), (70, 90, 3)])
def test_tile_cover_is_each_tiles_mean(height, width, seed):
    mask = _overlap_mask(height, width, seed)
    cover = tile_cover(mask)
    for float_mask in (mask, mask.astype(np.float32)):
        expected = [float_mask[y : y + TILE, x : x + TILE].mean() for y, x in _tiles(height, width)]
        assert cover.ravel().tolist() == pytest.approx(expected, abs=0)
    assert cover.dtype == np.float32
    assert ((cover >= ALIGNED.min_tile_cover).ravel().tolist()) == [
        mask.astype(np.float32)[y : y + TILE, x : x + TILE].mean() >= ALIGNED.min_tile_cover
        for y, x in _tiles(height, width)
    ]


@pytest.mark.parametrize("seed", [4, None])
def test_worst_tile_reads_the_tiles_at_least_half_inside_the_compared_area(seed):
    height, width = 250, 512
    difference = np.random.default_rng(5).random((height, width)).astype(np.float32)
    if seed is None:  # the tiles at x = 64 lie exactly half inside, and differ most
        core = np.ones((height, width), bool)
        core[:, :96] = False
        difference[:, 96:128] += 5.0
    else:
        core = _overlap_mask(height, width, seed)
        difference[:, : width // 3] += 2.0  # one region differs: the worst tiles are there
    means = [
        float(difference[y : y + TILE, x : x + TILE][core[y : y + TILE, x : x + TILE]].mean())
        for y, x in _tiles(height, width)
        if core[y : y + TILE, x : x + TILE].mean() >= 0.5
    ]
    assert 0 < len(means) < len(_tiles(height, width))
    assert worst_tile(difference, core) == float(np.percentile(means, ALIGNED.tile_percentile))


def _jpeg(path: Path, level: int, size: tuple[int, int] = (600, 300)) -> None:
    out = io.BytesIO()
    Image.new("L", size, level).save(out, "JPEG", quality=90)
    path.write_bytes(out.getvalue())


def test_a_worker_decodes_a_film_once_and_a_rewritten_film_again(tmp_path, monkeypatch):
    decoded: list[str] = []
    film_grey = frame_step.film_grey

    def counted(path: str) -> tuple[np.ndarray, tuple[int, int]]:
        decoded.append(path)
        return film_grey(path)

    monkeypatch.setattr(frame_step, "film_grey", counted)
    frame_step._remembered_grey.cache_clear()
    film = tmp_path / "film.jpg"
    _jpeg(film, 100)
    first, size = frame_step.remembered_grey(str(film))
    again, _ = frame_step.remembered_grey(str(film))
    assert again is first and decoded == [str(film)] and size == (600, 300)
    with pytest.raises(ValueError):
        first[0, 0] = 0  # shared by the pairs that read it: read-only
    _jpeg(film, 200, (640, 320))
    os.utime(film, ns=(1, 1))
    rewritten, size = frame_step.remembered_grey(str(film))
    assert len(decoded) == 2 and size == (640, 320) and abs(int(rewritten.mean()) - 200) <= 2


def test_what_is_made_of_a_read_only_film_alone_is_made_once():
    made: list[int] = []

    def make(image: np.ndarray) -> np.ndarray:
        made.append(1)
        return image * 2.0

    film = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert np.array_equal(per_film("double", film, 4, lambda: make(film)), film * 2)
    film[0, 0] = 100.0  # a writable film may change: never remembered
    assert per_film("double", film, 4, lambda: make(film))[0, 0] == 200.0
    assert len(made) == 2
    film.flags.writeable = False
    first = per_film("double", film, 4, lambda: make(film))
    again = per_film("double", film, 4, lambda: make(film))
    other_side = per_film("double", film, 8, lambda: make(film))
    assert again is first and other_side is not first and len(made) == 4
    assert not first.flags.writeable
    copy = film.copy()
    copy.flags.writeable = False  # equal pixels, another film: made again
    assert per_film("double", copy, 4, lambda: make(copy)) is not first and len(made) == 5


def test_a_pair_measures_alike_on_remembered_and_fresh_films(tmp_path):
    picture = kit.film(5)
    original = str(kit.save(picture, tmp_path / "original.jpg"))
    copy = str(kit.save(kit.cropped(picture, 0.03), tmp_path / "copy.jpg"))
    match = match_features(features_of(copy), features_of(original))
    fresh = [frame_step.film_grey(path) for path in (copy, original)]
    sizes = (fresh[0][1], fresh[1][1])
    expected = compare_frames(fresh[0][0], fresh[1][0], sizes, match)
    assert expected.same_picture
    remembered = [frame_step.remembered_grey(path)[0] for path in (copy, original)]
    for _ in range(2):  # the second time from what the first remembered
        assert compare_frames(remembered[0], remembered[1], sizes, match) == expected


@pytest.mark.parametrize(("height", "width", "seed"), [(250, 512, 6), (512, 371, 7), (96, 130, 8)])
def test_worst_tile_of_tiles_wholly_inside_is_each_tiles_own_mean_bit_for_bit(height, width, seed):
    """A copy's compared area holds most tiles wholly: they are averaged at once, and every
    mean must still be numpy's mean of that tile's pixels (the percentile reads them all)."""
    rng = np.random.default_rng(seed)
    difference = (rng.random((height, width)) * rng.random((1, width))).astype(np.float32)
    ys, xs = np.mgrid[0:height, 0:width]
    core = xs - 0.2 * ys > 20  # a turned edge: tiles wholly inside, partly inside and outside
    tiles = [(y, x) for y, x in _tiles(height, width) if core[y : y + TILE, x : x + TILE].all()]
    assert tiles
    means = [
        float(difference[y : y + TILE, x : x + TILE][core[y : y + TILE, x : x + TILE]].mean())
        for y, x in _tiles(height, width)
        if core[y : y + TILE, x : x + TILE].mean() >= 0.5
    ]
    for percentile in (0, 50, 95, 100):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(frame_check, "ALIGNED", replace(ALIGNED, tile_percentile=percentile))
            assert worst_tile(difference, core) == float(np.percentile(means, percentile))


@pytest.mark.parametrize(("height", "width"), [(40, 512), (512, 40), (63, 63)])
def test_worst_tile_of_a_film_narrower_than_a_tile_is_the_mean_over_the_compared_area(
    height, width
):
    """A film far wider than tall, brought to ``compare_side``, holds no whole tile."""
    difference = np.random.default_rng(10).random((height, width)).astype(np.float32)
    core = np.ones((height, width), bool)
    core[:, :5] = False
    assert worst_tile(difference, core) == float(difference[core].mean())


@pytest.mark.parametrize("sigma", [8.0, 12.0])
def test_the_tone_windows_spread_as_far_as_their_sigma(sigma):
    """``window_blur`` stands for a Gaussian of spread ``sigma`` (the limits were measured
    with one): a point spreads over a window of that standard deviation, within 5 %."""
    point = np.zeros((257, 257), np.float32)
    point[128, 128] = 1.0
    window = frame_check.window_blur(point, sigma)
    offsets = np.arange(257) - 128
    across = window.sum(axis=0)
    spread = float(np.sqrt((across * offsets**2).sum() / across.sum()))
    assert abs(window.sum() - 1.0) < 1e-4
    assert abs(spread - sigma) <= 0.05 * sigma


@pytest.mark.parametrize("seed", range(3))
def test_the_tone_normalisation_is_finite_outside_a_small_overlap(seed):
    """Far from the overlap, the stack blur's running sums leave residues of either sign;
    a normalised film must still be a number everywhere, and 0 outside the overlap (the
    residual, the tile shifts and the anatomy read it)."""
    rng = np.random.default_rng(seed)
    grey = (rng.random((512, 512)) * 255).astype(np.float32)
    valid = np.zeros_like(grey)
    valid[100:400, 60:300] = 1.0
    (toned,) = frame_check.locally_normalised((grey,), valid, 8.0)
    assert np.isfinite(toned).all()
    assert not toned[valid == 0].any()
