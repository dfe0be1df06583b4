"""Copies under another frame, as a script makes them: cropped, padded with black, turned by
a few degrees (black corners), or re-toned locally (CLAHE). The pixels (``reframed``, run
where the films are rendered) and where a lesion box goes (``reframed_box``)."""

from __future__ import annotations

import cv2
import numpy as np

from curation.drawing.sizes import Box

# transform -> its parameter: a share of each side, degrees, or CLAHE's clip limit
REFRAMINGS = {"crop": 0.03, "pad": 0.05, "tilt": 2.0, "clahe": 2.0}


def _margins(width: int, height: int, share: float) -> tuple[int, int]:
    return round(width * share), round(height * share)


def reframed_size(transform: str, param: float, width: int, height: int) -> tuple[int, int]:
    """The copy's width and height."""
    dx, dy = _margins(width, height, param)
    if transform == "crop":
        return width - 2 * dx, height - 2 * dy
    if transform == "pad":
        return width + 2 * dx, height + 2 * dy
    return width, height


def _turn(width: int, height: int, degrees: float) -> np.ndarray:
    return cv2.getRotationMatrix2D((width / 2, height / 2), degrees, 1.0)


def reframed(film: np.ndarray, transform: str, param: float) -> np.ndarray:
    """The grey film (uint8) cropped, padded, tilted or re-toned."""
    height, width = film.shape
    dx, dy = _margins(width, height, param)
    if transform == "crop":
        return np.ascontiguousarray(film[dy : height - dy, dx : width - dx])
    if transform == "pad":
        return np.pad(film, ((dy, dy), (dx, dx)))
    if transform == "tilt":
        return cv2.warpAffine(film, _turn(width, height, param), (width, height))
    if transform == "clahe":
        return cv2.createCLAHE(clipLimit=param, tileGridSize=(8, 8)).apply(film)
    raise ValueError(f"unknown reframing {transform!r}")


def reframed_box(box: Box, transform: str, param: float, width: int, height: int) -> Box:
    """Where ``box`` of a ``width`` x ``height`` film lies on the copy (clipped to it)."""
    x1, y1, x2, y2, pai = box
    dx, dy = _margins(width, height, param)
    out_w, out_h = reframed_size(transform, param, width, height)
    if transform == "crop":
        x1, y1, x2, y2 = x1 - dx, y1 - dy, x2 - dx, y2 - dy
    elif transform == "pad":
        x1, y1, x2, y2 = x1 + dx, y1 + dy, x2 + dx, y2 + dy
    elif transform == "tilt":
        corners = np.array([[x1, y1, 1], [x2, y1, 1], [x1, y2, 1], [x2, y2, 1]], float)
        moved = corners @ _turn(width, height, param).T
        x1, y1 = (round(v) for v in moved.min(axis=0))
        x2, y2 = (round(v) for v in moved.max(axis=0))
    x1, y1 = min(max(x1, 0), out_w - 1), min(max(y1, 0), out_h - 1)
    x2, y2 = min(max(x2, 0), out_w - 1), min(max(y2, 0), out_h - 1)
    return (x1, y1, x2, y2, pai)


# A lesion a second reader drew on the film before filing it again (dark, as a periapical
# lesion is): large enough that the whole-frame check no longer joins the two filings.
DRAWN_LESION = (0.6, 0.62, 0.035, 0.07)  # centre x, y and half-axes, as shares of the sides
DRAWN_PAI = 3


def drawn_lesion_box(width: int, height: int) -> Box:
    """The box the second reader annotated around the lesion drawn on the film."""
    cx, cy, ax, ay = DRAWN_LESION
    x, y, dx, dy = round(cx * width), round(cy * height), round(ax * width), round(ay * height)
    return (x - dx, y - dy, x + dx, y + dy, DRAWN_PAI)


def with_drawn_lesion(film: np.ndarray) -> np.ndarray:
    """The grey film (uint8) with the lesion of ``drawn_lesion_box`` drawn on it."""
    height, width = film.shape
    x1, y1, x2, y2, _ = drawn_lesion_box(width, height)
    drawn = film.copy()
    centre, axes = ((x1 + x2) // 2, (y1 + y2) // 2), ((x2 - x1) // 2, (y2 - y1) // 2)
    cv2.ellipse(drawn, centre, axes, 0, 0, 360, 20, -1)
    return drawn


OWN_BORDER_LEVEL = 3  # grey level of a film's own constant dark border


def with_own_border(film: np.ndarray, share: float) -> np.ndarray:
    """The grey film (uint8) with a constant dark border of its own, ``share`` of each side
    wide, painted over its edge (as an imaging system exports some films)."""
    height, width = film.shape
    dx, dy = max(1, round(width * share)), max(1, round(height * share))
    bordered = film.copy()
    bordered[:dy], bordered[-dy:] = OWN_BORDER_LEVEL, OWN_BORDER_LEVEL
    bordered[:, :dx], bordered[:, -dx:] = OWN_BORDER_LEVEL, OWN_BORDER_LEVEL
    return bordered
