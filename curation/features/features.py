"""Local features matched under one fitted transform: the evidence for "same content under
another frame" (a crop, a pad, a turn by a few degrees, local re-toning) and for "two visits
of one patient".

A whole-frame comparison cannot see through a change of frame; local features can. Each film
is reduced to a working size, its local tone is equalised (CLAHE, so a locally re-toned copy
yields the same corners), and ORB keypoints are detected (OpenCV: a library, not our own
detector). Two films are matched by Hamming distance with Lowe's ratio test, and one
affine transform (rotation, scale, shift, a little shear) is fitted by MAGSAC, a robust
estimator: the number and share of matches it explains are the evidence, and the transform
says how B's frame sits in A's.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import cv2
import faiss
import numpy as np
import simplejpeg
from PIL import Image

from curation.core.jpeg_check import check_decodable
from curation.core.store import Arrays, ArrayStore

# Longest side features are detected at, px. The hash step's own reduced decode (256 px) is
# too coarse for real films at archive sizes: the fitted scale drifts and the shortlist's
# shares of copies and of unrelated films overlap (margins at this side: docs/margins.md,
# "Frame check" and "Shortlist").
WORKING_SIDE = 512
MAX_FEATURES = 2000
# Four pyramid levels (1.2 apart: scales within 1.7x), not OpenCV's eight: copies and visits
# differ in scale by a few percent at the working size, so the upper levels only cost time.
# Films are reduced by area averaging: linear resampling loosens the fit of a padded copy past
# the frame check's rigid-scale limit (``FRAMING.rigid_scale``,
# ``curation.same_picture.frame_limits``).
PYRAMID_LEVELS = 4
RATIO = 0.8  # Lowe's ratio test
REPROJECTION_ERROR = 3.0  # pixels at the working size
FEATURES_VERSION = (
    f"features-v3/orb{MAX_FEATURES}x{PYRAMID_LEVELS}-{WORKING_SIDE}-clahe/"
    f"ratio{RATIO}-magsac-affine{REPROJECTION_ERROR}px"
)

# One OpenCV thread per process: the executor's worker processes are the parallelism, and
# OpenCV's own pool only oversubscribes the cores they fill (the keypoints and descriptors are
# the same either way). The frame check and the audit's visit check import this module, so
# they run single-threaded too.
cv2.setNumThreads(1)


@dataclass(frozen=True)
class FilmFeatures:
    """ORB keypoints of one film, in the film's own pixel coordinates."""

    points: np.ndarray  # (n, 2) float32, x and y in the film's pixels
    descriptors: np.ndarray  # (n, 32) uint8
    size: tuple[int, int]  # the film's width and height


def stored_arrays(features: FilmFeatures) -> Arrays:
    """``features`` as a features store holds them (``ArrayStore``, version
    ``FEATURES_VERSION``): ``points`` (n, 2) float32, ``descriptors`` (n, 32) uint8 and
    ``size`` (2,) int64, the film's width and height."""
    return {
        "points": np.ascontiguousarray(features.points, np.float32).reshape(-1, 2),
        "descriptors": np.ascontiguousarray(features.descriptors, np.uint8).reshape(-1, 32),
        "size": np.array(features.size, np.int64),
    }


def read_features(store: ArrayStore, sha256: str) -> FilmFeatures | None:
    """The features stored for the content ``sha256``, or ``None`` when the store holds none
    or a file not shaped as ``stored_arrays`` writes it (then they are computed again)."""
    arrays = store.get(sha256)
    if arrays is None:
        return None
    points, descriptors, size = (arrays.get(n) for n in ("points", "descriptors", "size"))
    if (
        points is None
        or descriptors is None
        or size is None
        or points.dtype != np.float32
        or descriptors.dtype != np.uint8
        or size.dtype != np.int64
        or points.shape != (len(descriptors), 2)
        or descriptors.shape != (len(points), 32)
        or size.shape != (2,)
    ):
        return None
    return FilmFeatures(points, descriptors, (int(size[0]), int(size[1])))


@dataclass(frozen=True)
class FeatureMatch:
    """How film B's content sits in film A's frame, as far as local features tell."""

    matches: int  # matches that passed the ratio test
    inliers: int  # of those, explained by the fitted transform
    transform: np.ndarray | None  # 2 x 3 affine map from B's pixels to A's, None if no fit
    points_a: np.ndarray  # (inliers, 2) inlier points in A, for drawing
    points_b: np.ndarray  # (inliers, 2) the same in B

    @property
    def inlier_share(self) -> float:
        return self.inliers / self.matches if self.matches else 0.0


def working_grey(data: bytes) -> tuple[np.ndarray, tuple[int, int]]:
    """The JPEG ``data`` decoded straight to grey at the largest JPEG reduction (1/2, 1/4,
    1/8) that keeps its longest side at least ``WORKING_SIDE`` (libjpeg-turbo's scaled
    decode, a fraction of a full decode's cost), and the film's full width and height."""
    if problem := check_decodable(data):
        raise ValueError(problem)  # never hand libjpeg a process the header check refuses
    height, width = simplejpeg.decode_jpeg_header(data)[:2]
    factor = next(f for f in (8, 4, 2, 1) if max(width, height) // f >= WORKING_SIDE or f == 1)
    smallest = {"min_width": -(-width // factor), "min_height": -(-height // factor)}
    grey = simplejpeg.decode_jpeg(data, colorspace="GRAY", min_factor=factor, **smallest)
    return np.ascontiguousarray(grey[..., 0]), (width, height)


def decoded_grey(data: bytes) -> tuple[np.ndarray, tuple[int, int]]:
    """Any image's bytes as the feature checks read them, and its full (width, height): a
    JPEG the header check clears at a reduced scale (``working_grey``), anything else (or a
    JPEG libjpeg refuses) through Pillow at full size."""
    if data.startswith(b"\xff\xd8") and check_decodable(data) is None:
        try:
            return working_grey(data)
        except ValueError:
            pass  # libjpeg refused the data: Pillow decodes what it can, or says why not
    with Image.open(io.BytesIO(data)) as image:
        grey = np.asarray(image.convert("L"))
    return grey, (grey.shape[1], grey.shape[0])


def film_features(grey: np.ndarray, size: tuple[int, int] | None = None) -> FilmFeatures:
    """Detect ORB features on a grey film (uint8, height x width), decoded at full size or,
    when ``size`` (the full width and height) is given, at a reduced scale of it: the
    points are in full-size pixels either way."""
    height, width = grey.shape
    full = size or (width, height)
    scale = min(1.0, WORKING_SIDE / max(height, width))
    small = grey
    if scale < 1.0:
        size = (max(1, round(width * scale)), max(1, round(height * scale)))
        small = cv2.resize(grey, size, interpolation=cv2.INTER_AREA)
    toned = cv2.createCLAHE(clipLimit=2.0, tileGridSize=(8, 8)).apply(small)
    keypoints, descriptors = cv2.ORB.create(
        nfeatures=MAX_FEATURES, nlevels=PYRAMID_LEVELS
    ).detectAndCompute(toned, None)
    if descriptors is None:
        return FilmFeatures(np.zeros((0, 2), np.float32), np.zeros((0, 32), np.uint8), full)
    to_full = np.array([full[0] / small.shape[1], full[1] / small.shape[0]], np.float32)
    points = cv2.KeyPoint.convert(keypoints) * to_full
    return FilmFeatures(points, descriptors, full)


def nearest_two(query: np.ndarray, train: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The Hamming distances to each ``query`` descriptor's two nearest ``train`` descriptors,
    and the index of the nearest: faiss's exact binary search, the distances OpenCV's
    brute-force matcher gives, in a fifth of its time on real films (2,000 descriptors a
    film; ``python -m bench.same_picture.feature_cost matching``). One OpenMP thread for the
    search: the executor's worker processes fill the cores, and two workers each spinning two
    OpenMP threads made the search 4x slower here. The process's setting is put back."""
    index = faiss.IndexBinaryFlat(train.shape[1] * 8)
    index.add(np.ascontiguousarray(train))
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        distances, nearest = index.search(np.ascontiguousarray(query), 2)
    finally:
        faiss.omp_set_num_threads(threads)
    return distances, nearest[:, 0]


def match_features(a: FilmFeatures, b: FilmFeatures) -> FeatureMatch:
    """Match B's features to A's and fit one affine transform B -> A robustly."""
    empty = np.zeros((0, 2), np.float32)
    if len(a.descriptors) < 2 or len(b.descriptors) < 2:
        return FeatureMatch(0, 0, None, empty, empty)
    distances, nearest = nearest_two(b.descriptors, a.descriptors)
    # Lowe's ratio test; a tie for the nearest never passes, so which of the tied the search
    # names does not matter.
    passed = distances[:, 0] < RATIO * distances[:, 1]
    matches = int(passed.sum())
    if matches < 3:
        return FeatureMatch(matches, 0, None, empty, empty)
    from_b = np.ascontiguousarray(b.points[passed], np.float32)
    to_a = np.ascontiguousarray(a.points[nearest[passed]], np.float32)
    # The error threshold is in film pixels: scale the working-size threshold back up.
    threshold = REPROJECTION_ERROR * max(a.size) / min(WORKING_SIDE, max(a.size))
    transform, mask = cv2.estimateAffine2D(
        from_b, to_a, method=cv2.USAC_MAGSAC, ransacReprojThreshold=threshold
    )
    if transform is None or mask is None:
        return FeatureMatch(matches, 0, None, empty, empty)
    keep = mask.ravel().astype(bool)
    return FeatureMatch(matches, int(keep.sum()), transform, to_a[keep], from_b[keep])


def features_of(path: str) -> FilmFeatures:
    """Worker side: the local features of the film at ``path``."""
    return film_features(*decoded_grey(Path(path).read_bytes()))


def stored_features(store: ArrayStore, sha256: str, path: str) -> FilmFeatures:
    """The features of the content ``sha256`` from ``store``; when absent or unreadable,
    computed from the film at ``path`` (whose bytes they are) and stored."""
    found = read_features(store, sha256)
    if found is None:
        found = features_of(path)
        store.put(sha256, stored_arrays(found))
    return found
