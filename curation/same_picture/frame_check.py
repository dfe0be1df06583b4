"""Same picture under another frame: a copy cropped, padded, turned by a few degrees or
re-toned locally (CLAHE), which the whole-frame pixel check (``curation.same_picture.pixels``)
cannot see.

A pair is the same picture when every gate holds; each gate has its threshold from
``python -m bench.frames`` (real radiographs; figures and margins in ``bench/RESULTS.md``):

1. **Features agree** (``curation.features.features``): enough ORB matches explained by one affine
   transform fitted by MAGSAC (``MIN_INLIERS``) and a large share of the ratio-test matches
   (``MIN_INLIER_SHARE``). Distinct films share a few chance corners; a copy shares most.
2. **Framed as a copy is framed** (``plausible``, ``framed_as_a_copy``): no mirror, a few
   degrees at most; rigid (one scale: a crop, a pad, a turn) or unturned (a resize); and,
   unturned, one frame holds the other. A later visit of the patient moves the frame in
   scale, turn and shift at once; these rules are how scripts reframe, not a measure of
   content, and say so.
3. **Pixels agree once aligned**: film B is warped onto film A's frame at ``COMPARE_SIDE``
   pixels by the fitted transform, refined by OpenCV's ECC, and compared on the overlap only
   (``MIN_OVERLAP``), where neither film is clipped, after *local* tone normalisation (minus
   the local mean, over the local contrast, windows of ``TONE_SIGMA``): re-exposure, gamma,
   CLAHE and equalisation are monotone and near-affine within a small window, so they
   vanish. Three measures: the difference of the normalised films, 3 x 3 averaged, in the
   ``TILE_PERCENTILE`` worst tile (``ALIGNED_LIMIT``: a copy agrees everywhere); the median
   shift still left between tiles (``SHIFT_LIMIT``: an arch bent otherwise); and the
   correlation at the anatomy's scale (``MIN_ANATOMY_CORRELATION``: fine texture alone, such
   as a shared noise pattern, can match between distinct films; the anatomy cannot).

The kind of copy is read from the transform and the overlap (``frame_kind``); the transform
and the measures are the evidence recorded (``curation.same_picture.frame_step``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np

from curation.features.features import FeatureMatch

COMPARE_SIDE = 512  # longest side of film A at which the aligned films are compared
TONE_SIGMA = 8.0  # pixels at COMPARE_SIDE: the window of the local tone normalisation
ECC_STEPS = 60  # iterations of the ECC refinement
ANATOMY_BLUR = 2.0  # pixels at COMPARE_SIDE: grain and fine texture blurred away
ANATOMY_SIGMA = 24.0  # pixels at COMPARE_SIDE: the anatomy's local normalisation window
# (applied at half COMPARE_SIDE, as ANATOMY_SIGMA / 2: ``anatomy_correlation``)
TILE = 64  # pixels at COMPARE_SIDE: the tiles whose remaining shift is measured
SHIFT_PERCENTILE = 50  # the median tile's shift
TILE_PERCENTILE = 95  # the worst tiles' difference, but for a few (a label, a blemish)
EDGE = 4  # pixels at COMPARE_SIDE left out along the overlap's edge (interpolation, borders)
# A crop keeping at least half of each side of its film (a quarter of its area) is a copy;
# what is cut further is no longer the same picture, and the audit names such a pair
# (docs/design.md, "Same picture under another frame").
MIN_KEPT_SIDE = 0.5
MIN_OVERLAP = MIN_KEPT_SIDE**2  # share of either film the overlap must cover
CONTAINED = 0.99  # an unturned copy's frame holds the other's (or lies in it) to this share
TURNED = 0.5  # degrees from which a copy is "rotated"
MIN_INLIERS = 120  # inliers (real films, features-v3: distinct <= 41, copies >= 667; 584 upscaled)
MIN_INLIER_SHARE = 0.45  # of the matches (distinct <= 0.400, copies >= 0.909)
ALIGNED_LIMIT = 0.5  # worst-tile difference of the normalised films (copies <= 0.372)
MIN_ANATOMY_CORRELATION = 0.8  # at the anatomy's scale (real copies >= 0.8956: CLAHE clip 4
# on archive-sized films; no distinct real pair reaches the pixels: docs/design.md)
SHIFT_LIMIT = 0.9  # pixels at COMPARE_SIDE, median tile moved after alignment (copies <= 0.692)
MAX_SCALE_CHANGE = 0.25  # the two axes' scales differ by at most this (a width-only resize)
MAX_TURN = 10.0  # degrees: larger turns are quarter turns or other pictures
RIGID_SCALE = 0.004  # a crop, a pad, a turn keeps its scale to this (real copies: <= 0.0026)
UNTURNED = 0.1  # degrees: a resize turns nothing (real unturned copies: <= 0.076)
FRAME_CHECK_VERSION = (
    f"frame-v2/side{COMPARE_SIDE}-tone{TONE_SIGMA}-edge{EDGE}-box3/ecc{ECC_STEPS}/"
    f"tiles{TILE}-shift-p{SHIFT_PERCENTILE}-worst-p{TILE_PERCENTILE}/"
    f"anatomy{ANATOMY_BLUR}-{ANATOMY_SIGMA}-half/inliers{MIN_INLIERS}-share{MIN_INLIER_SHARE}/"
    f"limit{ALIGNED_LIMIT}-shift{SHIFT_LIMIT}-anatomy{MIN_ANATOMY_CORRELATION}/"
    f"overlap{MIN_OVERLAP}-contained{CONTAINED}-turned{TURNED}-rigid{RIGID_SCALE}-"
    f"unturned{UNTURNED}-turn{MAX_TURN}-aspect{MAX_SCALE_CHANGE}"
)
SHORTLIST_PER_FILM = 4  # feature-shortlist partners per film verified (frames and visits)
CLIPPED = 8  # grey levels from black or white: padding and burnt-out areas say nothing


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
        return self.inliers >= MIN_INLIERS and self.inlier_share >= MIN_INLIER_SHARE

    @property
    def framed_as_a_copy(self) -> bool:
        """Unturned, one frame holds the other (a crop or a pad; a re-toned or resized copy
        keeps its frame); a frame moved within the picture, both losing a strip, is another
        shot. Turned by ``TURNED`` or more: a turn about the centre cuts both corners."""
        if not self.transform:
            return False
        turn, _, _ = turn_and_scale(np.asarray(self.transform).reshape(2, 3))
        return abs(turn) >= TURNED or max(self.overlap_a, self.overlap_b) >= CONTAINED

    @property
    def same_picture(self) -> bool:
        return (
            self.features_agree
            and self.framed_as_a_copy
            and min(self.overlap_a, self.overlap_b) >= MIN_OVERLAP
            and self.difference <= ALIGNED_LIMIT
            and self.shift <= SHIFT_LIMIT
            and self.anatomy >= MIN_ANATOMY_CORRELATION
        )


def _small(grey: np.ndarray, side: int) -> tuple[np.ndarray, float]:
    height, width = grey.shape
    scale = side / max(height, width)
    size = (max(1, round(width * scale)), max(1, round(height * scale)))
    return cv2.resize(grey, size, interpolation=cv2.INTER_AREA).astype(np.float32), scale


def turn_and_scale(transform: np.ndarray) -> tuple[float, float, float]:
    """The rotation (degrees) and the two axis scales of a 2 x 3 affine map."""
    (a, b, _), (c, d, _) = transform
    return math.degrees(math.atan2(c, a)), math.hypot(a, c), math.hypot(b, d)


def plausible(transform: np.ndarray) -> bool:
    """A reframing as a copy is made, not another positioning of the patient: no mirror, a
    few degrees at most, and either rigid (a turn and a shift at one scale: a crop, a pad, a
    turn; ``RIGID_SCALE``) or unturned (a resize, a crop resized back; ``UNTURNED``). A
    later visit changes the patient's position in scale, turn and shift at once."""
    turn, sx, sy = turn_and_scale(transform)
    determinant = float(np.linalg.det(transform[:, :2]))
    if determinant <= 0 or abs(turn) > MAX_TURN or abs(sx / sy - 1) > MAX_SCALE_CHANGE:
        return False
    rigid = max(abs(sx - 1), abs(sy - 1)) <= RIGID_SCALE
    return rigid or abs(turn) <= UNTURNED


def locally_normalised(
    images: tuple[np.ndarray, ...], valid: np.ndarray, sigma: float
) -> list[np.ndarray]:
    """Each of ``images`` minus its local mean, over its local contrast (windows of
    ``sigma``), inside ``valid`` only (normalised convolution: the windows ignore pixels
    outside the overlap). The windows' weight is the overlap's, so it is blurred once for
    all the images, not once per image."""
    weight = cv2.GaussianBlur(valid, (0, 0), sigma)
    safe = np.maximum(weight, 1e-3)
    normalised = []
    for grey in images:
        mean = cv2.GaussianBlur(grey * valid, (0, 0), sigma) / safe
        centred = (grey - mean) * valid
        spread = cv2.GaussianBlur(centred * centred, (0, 0), sigma) / safe
        normalised.append(centred / np.sqrt(spread + 4.0))  # +4: a flat window stays flat
    return normalised


def refined(small_a: np.ndarray, small_b: np.ndarray, warp: np.ndarray) -> np.ndarray:
    """The affine map B -> A refined to sub-pixel accuracy by OpenCV's ECC (enhanced
    correlation coefficient, invariant to gain and offset), started from the features' fit:
    ORB corners sit on a coarse pyramid, so their fit is off by up to a pixel or two, which a
    copy should not be charged for. The features' fit stays when ECC does not converge."""
    inverse = cv2.invertAffineTransform(warp).astype(np.float32)
    criteria = (cv2.TERM_CRITERIA_EPS | cv2.TERM_CRITERIA_COUNT, ECC_STEPS, 1e-5)
    try:
        # OpenCV's stub lacks the documented call with no mask and a filter size
        _, found = cv2.findTransformECC(  # type: ignore[call-overload]
            small_a, small_b, inverse, cv2.MOTION_AFFINE, criteria, None, 3
        )
    except cv2.error:
        return warp
    back: np.ndarray = cv2.invertAffineTransform(found).astype(np.float64)
    return back


def worst_tile(difference: np.ndarray, core: np.ndarray) -> float:
    """The ``TILE_PERCENTILE`` percentile, over whole tiles of the overlap, of the tiles' mean
    difference: a copy agrees everywhere, while two films that share only a texture (or a
    region) differ somewhere, which a mean over the whole overlap would dilute."""
    height, width = core.shape
    means = [
        float(difference[y : y + TILE, x : x + TILE][core[y : y + TILE, x : x + TILE]].mean())
        for y in range(0, height - TILE + 1, TILE // 2)
        for x in range(0, width - TILE + 1, TILE // 2)
        if core[y : y + TILE, x : x + TILE].mean() >= 0.5
    ]
    if not means:
        return float(difference[core].mean())
    return float(np.percentile(means, TILE_PERCENTILE))


def tile_shift(toned_a: np.ndarray, toned_b: np.ndarray, valid: np.ndarray) -> float:
    """How far the aligned films still move against each other, tile by tile: the 90th
    percentile of the phase-correlation shift (pixels at ``COMPARE_SIDE``) of every whole
    tile of the overlap. A copy is one affine map away from its original (about 0 left);
    another visit bends (the arch's curve, the patient's posture), which no affine map
    undoes."""
    height, width = valid.shape
    window = cv2.createHanningWindow((TILE, TILE), cv2.CV_32F)
    shifts = []
    for y in range(0, height - TILE + 1, TILE // 2):
        for x in range(0, width - TILE + 1, TILE // 2):
            if valid[y : y + TILE, x : x + TILE].mean() < 0.9:
                continue
            (dx, dy), response = cv2.phaseCorrelate(
                toned_a[y : y + TILE, x : x + TILE].astype(np.float32),
                toned_b[y : y + TILE, x : x + TILE].astype(np.float32),
                window,
            )
            if response > 0.1:
                shifts.append(math.hypot(dx, dy))
    return float(np.percentile(shifts, SHIFT_PERCENTILE)) if len(shifts) >= 4 else math.inf


def anatomy_correlation(small_a: np.ndarray, warped: np.ndarray, valid: np.ndarray) -> float:
    """Correlation of the two aligned films at the anatomy's scale: each blurred by
    ``ANATOMY_BLUR`` (grain and fine texture gone), halved, then locally normalised over
    windows of ``ANATOMY_SIGMA`` (exposure and local tone gone), on pixels whose whole
    2 x 2 block lies in the overlap. The local difference looks at fine texture, which alone
    can match between distinct films (a shared noise pattern, a detector's fixed pattern);
    the anatomy cannot. Nothing finer than the blur is left, so half the pixels say the same:
    on the corpus's 63 aligned pairs the correlation moved by at most 0.0034, in a sixth of
    the time (6 ms against 39; ``bench/RESULTS.md``, round thirteen)."""
    inside = cv2.erode(valid, np.ones((5, 5), np.uint8)) > 0.5
    if inside.sum() < 0.1 * inside.size:
        return 0.0
    height, width = valid.shape
    half = (max(1, width // 2), max(1, height // 2))
    blurred = tuple(
        cv2.resize(
            cv2.GaussianBlur(image, (0, 0), ANATOMY_BLUR), half, interpolation=cv2.INTER_AREA
        )
        for image in (small_a, warped)
    )
    whole = cv2.resize(valid, half, interpolation=cv2.INTER_AREA) > 0.999
    counted = cv2.resize(inside.astype(np.float32), half, interpolation=cv2.INTER_AREA) > 0.999
    band_a, band_b = locally_normalised(blurred, whole.astype(np.float32), ANATOMY_SIGMA / 2)
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
    small_a, _ = _small(grey_a, COMPARE_SIDE)
    scale_a = small_a.shape[1] / width_a
    side_b = max(1, round(max(sizes[1]) * scale_a))
    small_b, _ = _small(grey_b, side_b)
    scale_b = small_b.shape[1] / width_b
    to_small = np.diag([scale_a, scale_a, 1.0])
    from_small = np.diag([1 / scale_b, 1 / scale_b, 1.0])
    warp = (to_small @ np.vstack([transform, [0, 0, 1]]) @ from_small)[:2]
    warp = refined(small_a, small_b, warp)
    height, width = small_a.shape
    warped = cv2.warpAffine(small_b, warp, (width, height), flags=cv2.INTER_LINEAR)
    ones = np.ones_like(small_b)
    covered = cv2.warpAffine(ones, warp, (width, height), flags=cv2.INTER_NEAREST)
    overlap_a = float(covered.mean())
    area_b = small_b.size * abs(float(np.linalg.det(warp[:, :2])))
    overlap_b = min(float(covered.sum()) / max(area_b, 1.0), 1.0)
    kernel = np.ones((2 * EDGE + 1, 2 * EDGE + 1), np.uint8)
    inside = cv2.erode(covered, kernel, borderType=cv2.BORDER_CONSTANT, borderValue=0)
    valid = inside * (small_a > CLIPPED) * (small_a < 255 - CLIPPED)
    valid = (valid * (warped > CLIPPED) * (warped < 255 - CLIPPED)).astype(np.float32)
    if valid.sum() < 0.1 * valid.size:
        return overlap_a, overlap_b, math.inf, math.inf, 0.0
    toned_a, toned_b = locally_normalised((small_a, warped), valid, TONE_SIGMA)
    residual = (toned_a - toned_b) * valid
    counted = cv2.blur(valid, (3, 3), borderType=cv2.BORDER_CONSTANT)
    smoothed = cv2.blur(residual, (3, 3), borderType=cv2.BORDER_CONSTANT)
    core = counted > 0.99  # whole 3 x 3 windows inside the compared area
    if not core.any():
        return overlap_a, overlap_b, math.inf, math.inf, 0.0
    shift = tile_shift(toned_a, toned_b, valid)
    rank = anatomy_correlation(small_a, warped, valid)
    return overlap_a, overlap_b, worst_tile(np.abs(smoothed), core), shift, rank


def without_pixels(match: FeatureMatch) -> FrameComparison | None:
    """The comparison when the features alone settle it (no fit, too few inliers, or a
    transform no reframing makes), else None: the pixels must be compared."""
    share = round(match.inlier_share, 6)
    if match.transform is None:
        return FrameComparison(
            match.inliers, share, (), 0.0, 0.0, math.inf, math.inf, 0.0, match.matches
        )
    transform = np.asarray(match.transform, np.float64)
    if match.inliers < MIN_INLIERS or not plausible(transform):
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
    (turned by ``TURNED`` or more), ``cropped`` (B shows part of A), ``padded`` (A lies
    inside B), ``rescaled`` (another size or aspect) or ``re-toned`` (the same frame: only
    the tone differs)."""
    transform = np.asarray(comparison.transform, np.float64).reshape(2, 3)
    turn, sx, sy = turn_and_scale(transform)
    if abs(turn) >= TURNED:
        return "rotated"
    if comparison.overlap_a < 0.97:
        return "cropped"
    if comparison.overlap_b < 0.97:
        return "padded"
    if abs(sx - 1) > 0.02 or abs(sy - 1) > 0.02:
        return "rescaled"
    return "re-toned"
