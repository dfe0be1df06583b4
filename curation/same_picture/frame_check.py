"""Same picture under another frame: a copy cropped, padded, turned a few degrees or
re-toned locally, which the whole-frame check (``curation.same_picture.pixels``) cannot see.

A pair is the same picture when every gate holds; each gate's thresholds are the fields of
its dataclass (``FeatureGate``, ``FrameGate``, ``AlignedGate``), measured on real radiographs
(docs/margins.md, "Frame check"):

1. **Features agree** (``curation.features.features``): enough ORB matches explained by one
   affine transform fitted by MAGSAC (``FeatureGate.required_inliers``: ``min_inliers`` per
   whole frame shared) and a large share of the ratio-test matches (``min_inlier_share``).
2. **Framed as a copy is framed** (``plausible``, ``framed_as_a_copy``): no mirror, a few
   degrees at most; rigid (a crop, a pad, a turn) or unturned (a resize); unturned, one frame
   holds the other. These rules are how scripts reframe, not a measure of content.
3. **Pixels agree once aligned**: film B is warped onto film A's frame at ``compare_side``
   pixels by the fitted transform, refined by the phase correlation of its tiles
   (``refined``), and compared on the overlap (``min_overlap``) after *local* tone
   normalisation (windows of ``tone_sigma``): re-tonings are near-affine within a small
   window, so they vanish. Measures: the normalised difference, 3 x 3 averaged, in the
   ``tile_percentile`` worst tile (``aligned_limit``);
   the median shift left between tiles (``shift_limit``: an arch bent otherwise); the
   correlation at the anatomy's scale (``min_anatomy_correlation``: a shared noise pattern
   can match between distinct films; the anatomy cannot).

The kind of copy is read from the transform and overlap (``frame_kind``), its evidence kept.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from curation.features.features import FeatureMatch
from curation.same_picture.alignment import refined, tile_cover, unclipped
from curation.same_picture.film_memo import per_film
from curation.same_picture.frame_limits import (
    ALIGNED,
    FEATURES,
    FRAMING,
    KINDS,
    frame_check_version,
)

FRAME_CHECK_VERSION = frame_check_version(FEATURES, FRAMING, ALIGNED)
SHORTLIST_PER_FILM = 4  # feature-shortlist partners per film verified (frames and visits)


@dataclass(frozen=True)
class FrameComparison:
    """Film B aligned onto film A's frame, and how far their pixels then differ."""

    inliers: int
    inlier_share: float
    transform: tuple[float, ...]  # the 2 x 3 affine map from B's pixels to A's, row by row
    overlap_a: float  # share of A's frame that B covers
    overlap_b: float  # share of B's frame that lies in A's
    difference: float  # locally normalised mean absolute difference; inf when not compared
    shift: float  # median tile shift left after alignment (``tile_shift``); inf: not compared
    anatomy: float  # correlation at the anatomy's scale (``anatomy_correlation``); 0: not compared
    matches: int  # feature matches that passed the ratio test (the visit check reads them too)

    @property
    def features_agree(self) -> bool:
        """Gate 1: enough inliers for the part of the frames the films share, and enough of
        the matches."""
        kept = min(self.overlap_a, self.overlap_b)
        return (
            self.inliers >= FEATURES.required_inliers(kept, FRAMING.min_overlap)
            and self.inlier_share >= FEATURES.min_inlier_share
        )

    @property
    def framed_as_a_copy(self) -> bool:
        """Unturned, one frame holds the other (a crop or a pad; a re-toned or resized copy
        keeps its frame); a frame moved within the picture, both losing a strip, is another
        shot. Turned by ``FRAMING.turned`` or more: a turn about the centre cuts both corners."""
        if not self.transform:
            return False
        turn, _, _ = turn_and_scale(np.asarray(self.transform).reshape(2, 3))
        return (
            abs(turn) >= FRAMING.turned or max(self.overlap_a, self.overlap_b) >= FRAMING.contained
        )

    @property
    def same_picture(self) -> bool:
        """Every gate holds: one picture under another frame."""
        return (
            self.features_agree
            and self.framed_as_a_copy
            and min(self.overlap_a, self.overlap_b) >= FRAMING.min_overlap
            and self.difference <= ALIGNED.aligned_limit
            and self.shift <= ALIGNED.shift_limit
            and self.anatomy >= ALIGNED.min_anatomy_correlation
        )


def _small(grey: np.ndarray, side: int) -> np.ndarray:
    """``grey`` with its longest side at ``side`` pixels (area resampling), as float32."""
    height, width = grey.shape
    scale = side / max(height, width)
    size = (max(1, round(width * scale)), max(1, round(height * scale)))

    def scaled() -> np.ndarray:
        return cv2.resize(grey, size, interpolation=cv2.INTER_AREA).astype(np.float32)

    return per_film("small", grey, side, scaled)


def _anatomy_band(image: np.ndarray, half: tuple[int, int]) -> np.ndarray:
    """``image`` blurred by ``anatomy_blur`` and halved to ``half`` (``anatomy_correlation``)."""

    def band() -> np.ndarray:
        blurred = cv2.GaussianBlur(image, (0, 0), ALIGNED.anatomy_blur)
        halved: np.ndarray = cv2.resize(blurred, half, interpolation=cv2.INTER_AREA)
        return halved

    return per_film("anatomy band", image, half[0], band)


def turn_and_scale(transform: np.ndarray) -> tuple[float, float, float]:
    """The rotation (degrees) and the two axis scales of a 2 x 3 affine map."""
    (a, b, _), (c, d, _) = transform
    return math.degrees(math.atan2(c, a)), math.hypot(a, c), math.hypot(b, d)


def plausible(transform: np.ndarray) -> bool:
    """A reframing as a copy is made, not another positioning of the patient: no mirror, a
    few degrees at most, and either rigid (a turn and a shift at one scale: a crop, a pad, a
    turn; ``rigid_scale``) or unturned (a resize, a crop resized back; ``unturned``). A
    later visit changes the patient's position in scale, turn and shift at once."""
    turn, sx, sy = turn_and_scale(transform)
    determinant = float(np.linalg.det(transform[:, :2]))
    if (
        determinant <= 0
        or abs(turn) > FRAMING.max_turn
        or abs(sx / sy - 1) > FRAMING.max_scale_change
    ):
        return False
    rigid = max(abs(sx - 1), abs(sy - 1)) <= FRAMING.rigid_scale
    return rigid or abs(turn) <= FRAMING.unturned


def locally_normalised(
    images: tuple[np.ndarray, ...], valid: np.ndarray, sigma: float
) -> list[np.ndarray]:
    """Each of ``images`` minus its local mean, over its local contrast (windows of spread
    ``sigma``: ``window_blur``), inside ``valid`` only (normalised convolution: the windows
    ignore pixels outside the overlap). The windows' weight is the overlap's, so it is
    blurred once for all the images, not once per image. The stack blur's running sums leave
    a residue of either sign where a window holds no pixel of the overlap; over the floor of
    its weight, a negative residue made the spread negative and the pixel NaN, so the
    spread is held at 0 or more."""
    weight = window_blur(valid, sigma)
    safe = np.maximum(weight, 1e-3)
    normalised = []
    for grey in images:
        mean = window_blur(grey * valid, sigma) / safe
        centred = (grey - mean) * valid
        spread = np.maximum(window_blur(centred * centred, sigma), 0.0) / safe
        normalised.append(centred / np.sqrt(spread + 4.0))  # +4: a flat window stays flat
    return normalised


def window_blur(image: np.ndarray, sigma: float) -> np.ndarray:
    """``image`` (float32) averaged over a local window whose spread (standard deviation) is
    ``sigma``: OpenCV's stack blur, a tent-shaped window of radius r (variance r(r + 2) / 6)
    at a cost that does not grow with its size, in place of a Gaussian of the same spread,
    whose cost grew with it (the check's CPU before and after: docs/scale.md, "Beside the
    peers, on real films"; its margins: docs/margins.md, "Frame check")."""
    radius = round(math.sqrt(6 * sigma * sigma + 1) - 1)
    blurred: np.ndarray = cv2.stackBlur(image, (2 * radius + 1, 2 * radius + 1))
    return blurred


def worst_tile(difference: np.ndarray, core: np.ndarray) -> float:
    """The ``tile_percentile`` percentile, over whole tiles of the overlap, of the tiles' mean
    difference: a copy agrees everywhere, while two films that share only a texture (or a
    region) differ somewhere, which a mean over the whole overlap would dilute. Tiles wholly
    inside (most of a copy's; none in a film narrower than a tile) are averaged at once."""
    tile, step = ALIGNED.tile, ALIGNED.tile // 2
    cover = tile_cover(core)
    inside = cover == 1.0
    means: list[float] = []
    if inside.any():
        windows = sliding_window_view(difference, (tile, tile))[::step, ::step]
        means = windows[inside].reshape(-1, tile * tile).mean(axis=1).tolist()
    means += [
        float(difference[y : y + tile, x : x + tile][core[y : y + tile, x : x + tile]].mean())
        for y, x in np.argwhere((cover >= 0.5) & ~inside) * step  # mostly inside the area
    ]
    if not means:
        return float(difference[core].mean())
    return float(np.percentile(means, ALIGNED.tile_percentile))


def tile_shift(residuals: np.ndarray) -> float:
    """How far the aligned films still move against each other: the ``shift_percentile``
    percentile of the shift each tile showed after the refined alignment (pixels at
    ``compare_side``; ``refined``), infinite when there are none (``refined`` gives none when
    fewer than ``min_shifted_tiles`` tiles read a shift). A copy is one affine map away from
    its original (about 0 left); another visit bends (the arch's curve, the patient's
    posture), which no affine map undoes."""
    if not len(residuals):
        return math.inf
    return float(np.percentile(residuals, ALIGNED.shift_percentile))


def anatomy_correlation(small_a: np.ndarray, warped: np.ndarray, valid: np.ndarray) -> float:
    """Correlation of the two aligned films at the anatomy's scale: each blurred by
    ``anatomy_blur`` (grain and fine texture gone), halved, then locally normalised over
    windows of ``anatomy_sigma`` (exposure and local tone gone), on pixels whose whole
    2 x 2 block lies in the overlap. The local difference looks at fine texture, which alone
    can match between distinct films (a shared noise pattern, a detector's fixed pattern);
    the anatomy cannot. Nothing finer than the blur is left, so half the pixels say the same:
    on the corpus's 63 aligned pairs the correlation is within 0.0034 of the full-size one,
    at a sixth of its cost."""
    inside = cv2.erode(valid, np.ones((5, 5), np.uint8)) > 0.5
    if inside.sum() < ALIGNED.min_compared_share * inside.size:
        return 0.0
    height, width = valid.shape
    half = (max(1, width // 2), max(1, height // 2))
    blurred = (_anatomy_band(small_a, half), _anatomy_band(warped, half))
    whole = cv2.resize(valid, half, interpolation=cv2.INTER_AREA) > ALIGNED.whole_block
    inside_half = cv2.resize(inside.astype(np.float32), half, interpolation=cv2.INTER_AREA)
    counted = inside_half > ALIGNED.whole_block
    sigma = ALIGNED.anatomy_sigma / 2
    band_a, band_b = locally_normalised(blurred, whole.astype(np.float32), sigma)
    rho = np.corrcoef(band_a[counted], band_b[counted])[0, 1]
    return float(rho) if math.isfinite(rho) else 0.0


def aligned_difference(
    grey_a: np.ndarray,
    grey_b: np.ndarray,
    sizes: tuple[tuple[int, int], tuple[int, int]],
    transform: np.ndarray,
) -> tuple[float, float, float, float, float]:
    """Overlap shares (of A, of B), the locally normalised difference, the tile shift
    (``tile_shift``) and the anatomy correlation (``anatomy_correlation``) of film
    B warped onto film A's frame. ``transform`` maps B's full-size pixels to A's; ``sizes`` are the
    films' full width and height; ``grey_a`` and ``grey_b`` may be decoded at any scale."""
    (width_a, _), (width_b, _) = sizes
    small_a = _small(grey_a, ALIGNED.compare_side)
    scale_a = small_a.shape[1] / width_a
    side_b = max(1, round(max(sizes[1]) * scale_a))
    small_b = _small(grey_b, side_b)
    scale_b = small_b.shape[1] / width_b
    to_small = np.diag([scale_a, scale_a, 1.0])
    from_small = np.diag([1 / scale_b, 1 / scale_b, 1.0])
    warp = (to_small @ np.vstack([transform, [0, 0, 1]]) @ from_small)[:2]
    alignment = refined(small_a, small_b, warp)
    warp = alignment.warp
    height, width = small_a.shape
    warped = cv2.warpAffine(small_b, warp, (width, height), flags=cv2.INTER_LINEAR)
    ones = np.ones_like(small_b)
    covered = cv2.warpAffine(ones, warp, (width, height), flags=cv2.INTER_NEAREST)
    overlap_a = float(covered.mean())
    area_b = small_b.size * abs(float(np.linalg.det(warp[:, :2])))
    overlap_b = min(float(covered.sum()) / max(area_b, 1.0), 1.0)
    kernel = np.ones((2 * ALIGNED.edge + 1, 2 * ALIGNED.edge + 1), np.uint8)
    inside = cv2.erode(covered, kernel, borderType=cv2.BORDER_CONSTANT, borderValue=0)
    valid = (inside * unclipped(small_a) * unclipped(warped)).astype(np.float32)
    if valid.sum() < ALIGNED.min_compared_share * valid.size:
        return overlap_a, overlap_b, math.inf, math.inf, 0.0
    toned_a, toned_b = locally_normalised((small_a, warped), valid, ALIGNED.tone_sigma)
    residual = (toned_a - toned_b) * valid
    counted = cv2.blur(valid, (3, 3), borderType=cv2.BORDER_CONSTANT)
    smoothed = cv2.blur(residual, (3, 3), borderType=cv2.BORDER_CONSTANT)
    core = counted > 0.99  # whole 3 x 3 windows inside the compared area
    if not core.any():
        return overlap_a, overlap_b, math.inf, math.inf, 0.0
    shift = tile_shift(alignment.residuals)
    rank = anatomy_correlation(small_a, warped, valid)
    return overlap_a, overlap_b, worst_tile(np.abs(smoothed), core), shift, rank


def without_pixels(match: FeatureMatch) -> FrameComparison | None:
    """The comparison when the features alone settle it (no fit, fewer inliers than the
    smallest overlap the frame gate admits asks for, too small a share of the matches, or a
    transform no reframing makes), else None: the pixels must be compared."""
    share = round(match.inlier_share, 6)
    if match.transform is None:
        return FrameComparison(
            match.inliers, share, (), 0.0, 0.0, math.inf, math.inf, 0.0, match.matches
        )
    transform = np.asarray(match.transform, np.float64)
    if (
        match.inliers < FEATURES.required_inliers(0.0, FRAMING.min_overlap)
        or share < FEATURES.min_inlier_share
        or not plausible(transform)
    ):
        kept = tuple(round(float(v), 6) for v in transform.ravel())
        return FrameComparison(
            match.inliers, share, kept, 0.0, 0.0, math.inf, math.inf, 0.0, match.matches
        )
    return None


def compare_frames(
    grey_a: np.ndarray,
    grey_b: np.ndarray,
    sizes: tuple[tuple[int, int], tuple[int, int]],
    match: FeatureMatch,
) -> FrameComparison:
    """The frame check of films A and B: grey (uint8) decodes at any scale, their full
    ``sizes`` (width, height), and ``match`` fitted in full-size coordinates."""
    settled = without_pixels(match)
    if settled is not None:
        return settled
    transform = np.asarray(match.transform, np.float64)
    overlap_a, overlap_b, difference, shift, rank = aligned_difference(
        grey_a, grey_b, sizes, transform
    )
    return FrameComparison(
        match.inliers,
        round(match.inlier_share, 6),
        tuple(round(float(v), 6) for v in transform.ravel()),
        round(overlap_a, 6),
        round(overlap_b, 6),
        round(difference, 6) if math.isfinite(difference) else math.inf,
        round(shift, 6) if math.isfinite(shift) else math.inf,
        round(rank, 6),
        match.matches,
    )


def frame_kind(comparison: FrameComparison) -> str:
    """What film B's reframing of film A is, from the transform and the overlap: ``rotated``
    (turned by ``FRAMING.turned`` or more), ``cropped`` (B shows part of A), ``padded`` (A
    lies inside B), ``rescaled`` (another size or aspect) or ``re-toned`` (the same frame:
    only the tone differs); limits in ``KINDS``."""
    transform = np.asarray(comparison.transform, np.float64).reshape(2, 3)
    turn, sx, sy = turn_and_scale(transform)
    if abs(turn) >= FRAMING.turned:
        return "rotated"
    if comparison.overlap_a < KINDS.full_overlap:
        return "cropped"
    if comparison.overlap_b < KINDS.full_overlap:
        return "padded"
    if max(abs(sx - 1), abs(sy - 1)) > KINDS.same_scale:
        return "rescaled"
    return "re-toned"
