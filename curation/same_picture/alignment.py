"""The frame check's alignment at the compare size (``curation.same_picture.frame_check``):
the features' fit refined to a fraction of a pixel from the phase correlation of whole tiles,
and which tiles lie inside the compared area. Kept apart from the measures that read the
aligned films."""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from curation.same_picture.frame_limits import ALIGNED
from curation.same_picture.pixels import CLIPPED  # padding and burnt-out areas say nothing


@dataclass(frozen=True)
class Alignment:
    """The refined map B -> A, and the shift each tile still showed after it (pixels at the
    compare size; empty when too few tiles read one)."""

    warp: np.ndarray
    residuals: np.ndarray


def refined(small_a: np.ndarray, small_b: np.ndarray, warp: np.ndarray) -> Alignment:
    """The affine map B -> A refined to sub-pixel accuracy, started from the features' fit:
    ORB corners sit on a coarse pyramid, so their fit is off by up to a pixel or two, which a
    copy should not be charged for. B is warped by the fit; each whole tile inside the
    compared area, every ``tile`` pixels (every half tile when that gives too few), gives its
    remaining shift by OpenCV's phase correlation (each tile less its mean, or its level,
    shared by both films at no shift, pulls the reading towards no move), and one correction
    is fitted to all of them by least squares (``_fitted``). What the correction leaves of
    each tile's shift is the bend no affine map undoes (the frame check's tile shift): read
    from the same phase correlations, not from a second pass over the re-warped films (the
    check costs 0.855 times its CPU with that pass: docs/scale.md). The features' fit stays,
    with no residuals, when fewer than ``min_shifted_tiles`` tiles read a shift."""
    height, width = small_a.shape
    warped = cv2.warpAffine(small_b, warp, (width, height), flags=cv2.INTER_LINEAR)
    covered = cv2.warpAffine(np.ones_like(small_b), warp, (width, height), flags=cv2.INTER_NEAREST)
    valid = covered * unclipped(small_a) * unclipped(warped)
    cover = tile_cover(valid)
    centres, moved = _tile_shifts(small_a, warped, cover[::2, ::2] >= ALIGNED.min_tile_cover, 2)
    if len(centres) < ALIGNED.min_shifted_tiles:
        centres, moved = _tile_shifts(small_a, warped, cover >= ALIGNED.min_tile_cover, 1)
    if len(centres) < ALIGNED.min_shifted_tiles:
        return Alignment(warp, np.empty(0))
    seen = centres + moved  # where each tile's content lies in B warped
    correction = _fitted(seen, centres)
    left = seen @ correction[:, :2].T + correction[:, 2] - centres
    refined_warp: np.ndarray = correction @ np.vstack([warp, [0.0, 0.0, 1.0]])
    return Alignment(refined_warp, np.hypot(left[:, 0], left[:, 1]))


def _tile_shifts(
    small_a: np.ndarray, warped: np.ndarray, chosen: np.ndarray, halves: int
) -> tuple[np.ndarray, np.ndarray]:
    """The centres of the ``chosen`` tiles (a grid every ``halves`` half tiles) whose phase
    correlation peak passes ``min_phase_response``, and the shift each reads, as (n, 2)."""
    tile = ALIGNED.tile
    window = cv2.createHanningWindow((tile, tile), cv2.CV_32F)
    moved, centres = [], []
    for y, x in np.argwhere(chosen) * (halves * tile // 2):
        tile_a = small_a[y : y + tile, x : x + tile]
        tile_b = warped[y : y + tile, x : x + tile]
        shift, response = cv2.phaseCorrelate(tile_a - tile_a.mean(), tile_b - tile_b.mean(), window)
        if response > ALIGNED.min_phase_response:
            centres.append((x + tile / 2, y + tile / 2))
            moved.append(shift)
    return np.asarray(centres, np.float64).reshape(-1, 2), np.asarray(moved).reshape(-1, 2)


def _fitted(seen: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """The 2 x 3 map taking ``seen`` onto ``centres`` by least squares: affine when the
    tiles span two rows and two columns, else a similarity (shift, turn, one scale), which
    one row or column determines (a crop to 60 % of a wide film is one row of tiles high)."""
    x, y = seen.T
    if len(np.unique(centres[:, 0])) > 1 and len(np.unique(centres[:, 1])) > 1:
        design = np.column_stack([x, y, np.ones_like(x)])
        affine: np.ndarray = np.linalg.lstsq(design, centres, rcond=None)[0].T
        return affine
    ones, zeros = np.ones_like(x), np.zeros_like(x)
    design = np.vstack(
        [np.column_stack([x, -y, ones, zeros]), np.column_stack([y, x, zeros, ones])]
    )
    a, b, shift_x, shift_y = np.linalg.lstsq(design, centres.T.ravel(), rcond=None)[0]
    return np.array([[a, -b, shift_x], [b, a, shift_y]])


def unclipped(grey: np.ndarray) -> np.ndarray:
    """1 where ``grey`` is neither black nor white (``CLIPPED``), else 0, as float32."""
    inside: np.ndarray = ((grey > CLIPPED) & (grey < 255 - CLIPPED)).astype(np.float32)
    return inside


def tile_cover(mask: np.ndarray) -> np.ndarray:
    """The share of each tile of ``mask`` (0 or 1 per pixel) that is 1, over the tiles every
    measure walks (``tile`` pixels, every half tile, rows by columns), counted at once from
    one integral image: exactly the mean of each tile's pixels, as float32."""
    height, width = mask.shape
    tile = ALIGNED.tile
    sums = cv2.integral(mask.astype(np.uint8))
    ys = np.arange(0, height - tile + 1, tile // 2)[:, None]
    xs = np.arange(0, width - tile + 1, tile // 2)[None, :]
    counts = sums[ys + tile, xs + tile] - sums[ys + tile, xs] - sums[ys, xs + tile] + sums[ys, xs]
    cover: np.ndarray = (counts / (tile * tile)).astype(np.float32)
    return cover
