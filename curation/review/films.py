"""The review page's enlarged views: each film it shows at full size, as the build publishes
films (``curation.core.jpeg_publish``: the source's image segments copied, nothing that
travels beside the picture), and the geometry of a view, worked out here so the page draws it
with SVG alone: the films side by side at one height, each lesion box from the annotations
(corners as fractions of the film) and, for a framed copy or a visit, the matched features.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from curation.core.jpeg_check import check_decodable
from curation.core.jpeg_publish import UnpublishableJpeg, publishable_jpeg
from curation.core.records import Lesion
from curation.features.features import (
    FilmFeatures,
    decoded_grey,
    film_features,
    match_features,
)
from curation.same_picture.frame_limits import FEATURES, FRAMING
from curation.visits.descriptors import visit_features_of
from curation.visits.verification import verify

VIEW_HEIGHT = 1000  # SVG units: every film of a view is drawn this tall
GAP = 30  # SVG units between two films of a view
DRAWN_LINES = 60  # matched features drawn per pair (evenly chosen), so the lines stay legible


@dataclass(frozen=True)
class FullFilm:
    """A film as the page opens it at full size: its published JPEG and size."""

    jpeg: bytes  # the published bytes
    size: tuple[int, int]  # width, height in pixels


def full_film(source: Path) -> FullFilm | str:
    """The film at ``source`` as the build would publish it, or why there is none."""
    try:
        data = source.read_bytes()
    except FileNotFoundError:
        return f"{source.name} does not exist."
    except OSError:
        return f"{source.name} cannot be read."
    return published_film(data, source.name)


def published_film(data: bytes, name: str) -> FullFilm | str:
    """The JPEG ``data`` (of the film called ``name``) as the build publishes films, or why
    it cannot be shown."""
    try:
        published = publishable_jpeg(data)
    except UnpublishableJpeg as error:
        return f"{name} is not a publishable JPEG ({error})."
    if problem := check_decodable(published):
        return f"{name} is not a readable image ({problem})."
    try:
        with Image.open(io.BytesIO(published)) as image:
            size = image.size
    except (OSError, ValueError, Image.DecompressionBombError):
        return f"{name} is not a readable image."
    return FullFilm(published, size)


MatchedPoints = tuple[np.ndarray, np.ndarray]  # (n, 2) pixel points in film A and in film B


def matched_points(
    source_a: Path,
    source_b: Path,
    known: tuple[FilmFeatures | None, FilmFeatures | None] = (None, None),
) -> MatchedPoints | None:
    """The matched features of film B on film A, in pixels: the frame check's (one transform,
    as a copy under another frame has) when they are a copy's evidence, else the visit check's
    (``curation.visits``: fitted per strip of the arch); None when either film cannot be read
    or neither check finds its evidence. ``known``: either film's local features when the
    same-picture step has them (the same as computed from the file), so they are not
    computed again."""
    try:
        found = [
            features or _features(source)
            for features, source in zip(known, (source_a, source_b), strict=True)
        ]
    except (OSError, ValueError, Image.DecompressionBombError):
        return None
    match = match_features(*found)
    # The fewest inliers a copy may have: a crop to half of each side (its overlap's share).
    fewest = FEATURES.required_inliers(0.0, FRAMING.min_overlap)
    if match.inliers >= fewest and match.inlier_share >= FEATURES.min_inlier_share:
        return (match.points_a, match.points_b)
    try:
        described = [visit_features_of(p.read_bytes()) for p in (source_a, source_b)]
    except (OSError, ValueError, Image.DecompressionBombError):
        return None
    evidence = verify(*described)
    if not evidence.verified:
        return None
    size_a, size_b = (np.asarray(f.size, np.float32) for f in described)
    return (evidence.points_a * size_a, evidence.points_b * size_b)


def _features(source: Path) -> FilmFeatures:
    """The local features of the film at ``source``, as the same-picture step computes them."""
    return film_features(*decoded_grey(source.read_bytes()))


def _number(value: float) -> str:
    return f"{value:.1f}"


def view_geometry(
    films: Sequence[tuple[str, tuple[int, int], Sequence[Lesion]]],
    matched: MatchedPoints | None = None,
) -> dict[str, Any]:
    """The SVG of ``films`` (image path, pixel size, lesions) side by side at ``VIEW_HEIGHT``;
    ``matched`` joins points of the first film to the second's."""
    placed = []
    lefts = []
    left = 0.0
    for src, (width, height), lesions in films:
        drawn = VIEW_HEIGHT * width / height
        boxes = [
            {
                "x": _number(left + x0 * drawn),
                "y": _number(y0 * VIEW_HEIGHT),
                "width": _number((x1 - x0) * drawn),
                "height": _number((y1 - y0) * VIEW_HEIGHT),
                "label": f"PAI {lesion.pai}",
            }
            for lesion in lesions
            for x0, y0, x1, y1 in [lesion.box]
        ]
        placed.append({"src": src, "x": _number(left), "width": _number(drawn), "boxes": boxes})
        lefts.append(left)
        left += drawn + GAP
    lines = []
    if matched is not None and len(films) == 2:
        (size_a, size_b) = (films[0][1], films[1][1])
        scale_a, scale_b = VIEW_HEIGHT / size_a[1], VIEW_HEIGHT / size_b[1]
        offset_b = lefts[1]
        count = len(matched[0])
        rows = np.unique(np.linspace(0, count - 1, min(DRAWN_LINES, count)).round().astype(int))
        for row in rows.tolist():
            (xa, ya), (xb, yb) = matched[0][row], matched[1][row]
            lines.append(
                {
                    "x1": _number(xa * scale_a),
                    "y1": _number(ya * scale_a),
                    "x2": _number(offset_b + xb * scale_b),
                    "y2": _number(yb * scale_b),
                }
            )
    return {
        "width": _number(left - GAP),
        "height": str(VIEW_HEIGHT),
        "ratio": (left - GAP) / VIEW_HEIGHT,
        "films": placed,
        "lines": lines,
    }
