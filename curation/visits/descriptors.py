"""RootSIFT descriptors of a film's anatomy: what a revisit of one patient can be matched by.

A second visit is a new exposure: another machine's sharpness, contrast and noise, the head
a little otherwise. SIFT (OpenCV) is invariant to scale, turn and tone and describes the
bone's gradients rather than its pixels; RootSIFT (the square root of the L1-normalised
descriptor) makes its Euclidean distance a Hellinger kernel, which matches better.

Only anatomy is described. Burned-in labels, text, rulers and markers sit on a uniform
background or are saturated; the film's outer bands and a constant frame are no anatomy
either. ``anatomy_mask`` removes the outer band, every near-uniform area and every saturated
area, each widened so that text drawn on a label (or a marker's outline) goes with it.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np
import simplejpeg

from curation.core.jpeg_check import check_decodable
from curation.features.features import decoded_grey

# Longest side described, px: the archive's films (about 2,900 x 1,400) at about a ninth.
# SIFT doubles its input for its first octave, and that octave is most of its cost: at a
# larger side it holds the finest detail, which a revisit's other machine and new noise
# change most. At 320 the margins on the real films and on the sample's drawn revisits hold
# as at 768, at about a sixth of its cost (docs/design.md, "Visits of one patient").
WORKING_SIDE = 320
MAX_DESCRIPTORS = 1000
# SIFT's contrast threshold, a quarter of OpenCV's 0.04: smooth films (the sample's drawings)
# yield a hundred features instead of sixty; real films come close to MAX_DESCRIPTORS either way.
CONTRAST = 0.01
OUTER_BAND = 0.03  # of each side: the film's outer band, never anatomy
UNIFORM_WINDOW = 5  # px at the working size: the window whose spread says "flat"
UNIFORM_STD = 0.5  # grey levels: radiographic anatomy is this flat only in small patches
FLAT_AREA = 9  # px at the working size: a label's flat background is at least this wide
SATURATED = 252  # grey level: burned-in text and markers are drawn at full white
WIDENED = 0.012  # of the longest side: how far a flat area's mask is widened (its text)
SATURATED_WIDENED = 0.005  # of the longest side: how far a saturated stroke's mask is widened
QUANTUM = 255.0  # RootSIFT components (<= 1) are stored as uint8 at this scale
DESCRIPTORS_VERSION = (
    f"visits-v1/rootsift{MAX_DESCRIPTORS}c{CONTRAST}-{WORKING_SIDE}-clahe/band{OUTER_BAND}-"
    f"flat{UNIFORM_WINDOW}x{UNIFORM_STD}-{FLAT_AREA}-sat{SATURATED}-wide{WIDENED}-{SATURATED_WIDENED}"
)

cv2.setNumThreads(1)  # the executor's worker processes are the parallelism


@dataclass(frozen=True)
class VisitFeatures:
    """RootSIFT descriptors of one film's anatomy; points in fractions of the frame (x of
    the width, y of the height), so that films of any size compare."""

    points: np.ndarray  # (n, 2) float32 in [0, 1]
    descriptors: np.ndarray  # (n, 128) uint8, RootSIFT x QUANTUM
    size: tuple[int, int]  # the film's width and height

    @property
    def unit(self) -> np.ndarray:
        """The descriptors as float32 RootSIFT vectors (unit L2 norm, up to rounding)."""
        return self.descriptors.astype(np.float32) / QUANTUM


def working_size(grey: np.ndarray, side: int = WORKING_SIDE) -> np.ndarray:
    """The film at ``side`` on its longest side at most (area averaging)."""
    height, width = grey.shape
    scale = min(1.0, side / max(height, width))
    if scale >= 1.0:
        return grey
    size = (max(1, round(width * scale)), max(1, round(height * scale)))
    return cv2.resize(grey, size, interpolation=cv2.INTER_AREA)


def _widened(area: np.ndarray, reach: float) -> np.ndarray:
    """``area`` (0/1) dilated by a disc of radius ``reach`` px (at least 1)."""
    size = 2 * max(1, round(reach)) + 1
    return cv2.dilate(area, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (size, size)))


def anatomy_mask(small: np.ndarray) -> np.ndarray:
    """255 where a feature may be detected: inside the outer band, away from every flat or
    saturated area (labels, text, rulers, markers, a constant frame)."""
    height, width = small.shape
    values = small.astype(np.float32)
    window = (UNIFORM_WINDOW, UNIFORM_WINDOW)
    mean = cv2.blur(values, window)
    spread = np.sqrt(np.maximum(cv2.blur(values * values, window) - mean * mean, 0))
    flat = cv2.morphologyEx(
        (spread < UNIFORM_STD).astype(np.uint8),
        cv2.MORPH_OPEN,
        np.ones((FLAT_AREA, FLAT_AREA), np.uint8),
    )
    excluded = _widened(flat, WIDENED * max(height, width))
    excluded |= _widened(
        (small >= SATURATED).astype(np.uint8), SATURATED_WIDENED * max(height, width)
    )
    mask = np.where(excluded > 0, 0, 255).astype(np.uint8)
    band_x, band_y = round(OUTER_BAND * width), round(OUTER_BAND * height)
    mask[:band_y], mask[height - band_y :] = 0, 0
    mask[:, :band_x], mask[:, width - band_x :] = 0, 0
    return mask


def root_sift(descriptors: np.ndarray) -> np.ndarray:
    """SIFT descriptors as RootSIFT: L1-normalised, square-rooted (unit L2 norm)."""
    total = np.maximum(descriptors.sum(axis=1, keepdims=True), 1e-7)
    rooted: np.ndarray = np.sqrt(descriptors / total)
    return rooted


def visit_features(
    grey: np.ndarray, size: tuple[int, int] | None = None, side: int = WORKING_SIDE
) -> VisitFeatures:
    """The anatomy's RootSIFT features of a grey film (uint8), decoded at full size or at a
    reduced scale of ``size`` (the full width and height), described at ``side`` px on its
    longest side at most (the bench compares sizes)."""
    full = size or (grey.shape[1], grey.shape[0])
    small = working_size(grey, side)
    toned = cv2.createCLAHE(clipLimit=2.0, tileGridSize=(8, 8)).apply(small)
    sift = cv2.SIFT.create(nfeatures=MAX_DESCRIPTORS, contrastThreshold=CONTRAST)
    keypoints, found = sift.detectAndCompute(toned, anatomy_mask(small))
    if found is None or not keypoints:
        return VisitFeatures(np.zeros((0, 2), np.float32), np.zeros((0, 128), np.uint8), full)
    keypoints, found = keypoints[:MAX_DESCRIPTORS], found[:MAX_DESCRIPTORS]
    frame = np.array([small.shape[1], small.shape[0]], np.float32)
    points = cv2.KeyPoint.convert(keypoints) / frame
    stored = np.clip(np.rint(root_sift(found) * QUANTUM), 0, 255).astype(np.uint8)
    return VisitFeatures(points.astype(np.float32), stored, full)


def described_grey(data: bytes, side: int = WORKING_SIDE) -> tuple[np.ndarray, tuple[int, int]]:
    """A film's bytes decoded to grey for description, and its full width and height: a
    JPEG at the largest JPEG reduction keeping ``side`` (libjpeg-turbo's scaled decode),
    anything else as the frame check decodes it."""
    if data.startswith(b"\xff\xd8") and check_decodable(data) is None:
        height, width = simplejpeg.decode_jpeg_header(data)[:2]
        longest = max(width, height)
        factor = next(f for f in (8, 4, 2, 1) if longest // f >= side or f == 1)
        least = {"min_width": -(-width // factor), "min_height": -(-height // factor)}
        try:
            grey = simplejpeg.decode_jpeg(data, colorspace="GRAY", min_factor=factor, **least)
            return np.ascontiguousarray(grey[..., 0]), (width, height)
        except ValueError:
            pass  # libjpeg refused the data: the frame check's decode says why
    return decoded_grey(data)


def visit_features_of(data: bytes, side: int = WORKING_SIDE) -> VisitFeatures:
    """Worker side: the visit features of a film's bytes, described at ``side`` px (the cost
    bench compares sides)."""
    grey, size = described_grey(data, side)
    return visit_features(grey, size, side)
