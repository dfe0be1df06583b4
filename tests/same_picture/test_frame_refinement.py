"""The frame check's sub-pixel alignment (``alignment.refined``): the features' fit is off
by a pixel or so, and a copy must not be charged for it.

The films come from ``support/film_kit.py`` at the compare size, moved by a known affine
map (a shift of a pixel and a bit, a turn of 0.3 degree); the refinement starts from no move
at all and must land within a fraction of a pixel of the truth everywhere in the frame.
"""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from curation.same_picture import frame_check
from curation.same_picture.alignment import refined
from support import film_kit as kit

NO_MOVE = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
# Farthest a refined map may put any corner from the truth, in pixels at the compare size
# (the old ECC refinement: 0.35 to 0.68 on these films; this one: 0.12 to 0.26).
CLOSE = 0.3


def _at_compare_size(seed: int) -> np.ndarray:
    picture = kit.film(seed).astype(np.float32)
    height, width = picture.shape
    side = frame_check.ALIGNED.compare_side
    size = (side, round(side * height / width))
    return cv2.resize(picture, size, interpolation=cv2.INTER_AREA)


def _moved(picture: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``picture`` turned by 0.3 degree and shifted by (1.3, -0.7) px, and the map back."""
    height, width = picture.shape
    move = cv2.getRotationMatrix2D((width / 2, height / 2), 0.3, 1.0)
    move[:, 2] += (1.3, -0.7)
    return cv2.warpAffine(picture, move, (width, height)), cv2.invertAffineTransform(move)


def _farthest_corner(
    found: np.ndarray, truth: np.ndarray, shape: tuple[int, ...], top: int = 0
) -> float:
    """How far apart the two maps put the corners of rows ``top`` to ``shape[0]``."""
    height, width = shape
    corners = np.array(
        [[0, top, 1], [width - 1, top, 1], [0, height - 1, 1], [width - 1, height - 1, 1]]
    )
    return float(np.abs(corners @ found.T - corners @ truth.T).max())


@pytest.mark.parametrize("seed", [5, 17, 29])
@pytest.mark.parametrize("exposure", ["as drawn", "faint"])
def test_a_moved_film_is_brought_back_within_a_fraction_of_a_pixel(seed, exposure):
    """A faint film too (little contrast over a grey level): each tile is read less its mean,
    or the level, shared by both films at no shift, pulls every tile's reading towards no
    move."""
    film = _at_compare_size(seed)
    if exposure == "faint":
        film = film * 0.1 + 100
    moved, truth = _moved(film)
    assert _farthest_corner(NO_MOVE, truth, film.shape) > 1.0  # the start is well off
    found = refined(film, moved, NO_MOVE).warp
    assert _farthest_corner(found, truth, film.shape) <= CLOSE


def test_the_features_fit_stays_when_too_few_tiles_read_a_shift():
    """A film all but blank (texture in one corner, less than a tile) gives too few tiles
    to fit, on either grid: the map is kept, and no tile shift is read."""
    film = np.full((256, 512), 128, np.float32)
    film[:30, :30] = _at_compare_size(5)[64:94, 64:94]
    moved, _ = _moved(film)
    start = np.array([[1.0, 0.0, 0.4], [0.0, 1.0, -0.2]])
    alignment = refined(film, moved, start)
    assert np.array_equal(alignment.warp, start)
    assert frame_check.tile_shift(alignment.residuals) == np.inf


def test_an_overlap_one_row_of_tiles_high_is_refined_as_a_whole():
    """A crop to 60 % of a wide film overlaps its original in one row of tiles: an affine
    correction is then undetermined across the rows (it once sent such a copy off its
    original's frame); a shift, turn and scale is not."""
    film = np.zeros((256, 512), np.float32)  # black: outside the compared area
    band = slice(64, 140)  # whole tiles fit one row high
    film[band] = _at_compare_size(17)[band]
    moved, truth = _moved(film)
    found = refined(film, moved, NO_MOVE).warp
    assert _farthest_corner(found, truth, (band.stop, 512), top=band.start) <= CLOSE


def _bent(picture: np.ndarray, amplitude: float) -> np.ndarray:
    """``picture`` bent as no affine map bends it: each column moved down by a sine of
    ``amplitude`` pixels across the width (an arch's curve, a posture)."""
    height, width = picture.shape
    columns, rows = np.meshgrid(np.arange(width, dtype=np.float32), np.arange(height))
    drop = amplitude * np.sin(2 * np.pi * columns / width)
    return cv2.remap(picture, columns, (rows - drop).astype(np.float32), cv2.INTER_LINEAR)


@pytest.mark.parametrize("seed", [5, 17, 29])
def test_a_moved_copy_leaves_no_tile_shift_and_a_bent_film_does(seed):
    """The tile shift is what the refined map leaves of the tiles' shifts: about nothing for
    a film only moved (a copy), more than the limit for one bent by 3 px (another visit)."""
    film = _at_compare_size(seed)
    moved, _ = _moved(film)
    copy = frame_check.tile_shift(refined(film, moved, NO_MOVE).residuals)
    bent = frame_check.tile_shift(refined(film, _bent(moved, 3.0), NO_MOVE).residuals)
    assert copy <= frame_check.ALIGNED.shift_limit / 3
    assert bent > frame_check.ALIGNED.shift_limit


def test_an_overlap_of_few_whole_tiles_is_read_every_half_tile():
    """An overlap 80 px high and 220 px wide holds two whole tiles on the tile grid, too
    few to fit; every half tile, it holds five, and its shift is read."""
    film = np.zeros((256, 512), np.float32)  # black: outside the compared area
    area = (slice(60, 140), slice(90, 310))
    film[area] = _at_compare_size(29)[area] * 0.8 + 20  # no pixel clipped inside
    moved, _ = _moved(film)
    alignment = refined(film, moved, NO_MOVE)
    assert len(alignment.residuals) >= frame_check.ALIGNED.min_shifted_tiles
    assert frame_check.tile_shift(alignment.residuals) <= frame_check.ALIGNED.shift_limit / 3
