"""Realistic revisits of one patient, drawn from a grey film: what really changes between two
visits, applied to a film's content without keeping its pixels.

- the projection bends (``bent``): head tilt raises one side of the arch, a turn widens one
  side while the other narrows, forward/back position widens or narrows the front teeth; a
  smooth displacement across the arch, with a small global scale, turn and shift;
- the mouth changed (``treated``): fillings added, an existing bright restoration removed,
  braces put on (brackets along both rows of teeth and their wire), a tooth extracted;
- another machine (``re_exposed``): the source is blurred and resampled (its own noise and
  texture go), then given another sharpness, contrast and gamma and NEW noise, and written at
  another JPEG quality.

Burned-in labels, rulers and markers (``burned_in``) are planted on distinct films, which
must never be linked by them.
"""

from __future__ import annotations

import cv2
import numpy as np

LABEL_KINDS = ("label", "ruler", "marker")
SHARED_LABEL_WIDTH = 0.3  # of the width: the sample's shared label, a large one


def bent(grey: np.ndarray, rng: np.random.Generator, strength: float = 1.0) -> np.ndarray:
    """The film as projected with the head otherwise: a smooth non-rigid displacement across
    the arch (up to a few percent of the frame at ``strength`` 1) and a small similarity."""
    height, width = grey.shape
    ys, xs = np.mgrid[0:height, 0:width].astype(np.float32)
    u = xs / width - 0.5  # -0.5 .. 0.5 across the arch
    v = ys / height - 0.5
    tilt = rng.uniform(-0.02, 0.02) * strength * height  # one side rises
    curve = rng.uniform(-0.02, 0.02) * strength * height  # the arch's smile deepens
    turn = rng.uniform(-0.03, 0.03) * strength * width  # one side widens, the other narrows
    front = rng.uniform(-0.02, 0.02) * strength * width  # front teeth widen or narrow
    dy = tilt * 2 * u + curve * (1 - 4 * u * u) * (0.5 + v)
    dx = turn * (4 * u * u - 1 / 3) + front * np.sin(2 * np.pi * u) / (2 * np.pi) * 4
    scale = 1 + rng.uniform(-0.04, 0.04) * strength
    angle = rng.uniform(-2.5, 2.5) * strength
    shift = rng.uniform(-0.03, 0.03, 2) * strength * np.array([width, height])
    similar = cv2.getRotationMatrix2D((width / 2, height / 2), angle, scale)
    inverse = cv2.invertAffineTransform(similar)
    at_x, at_y = xs - shift[0] - dx, ys - shift[1] - dy
    map_x = inverse[0, 0] * at_x + inverse[0, 1] * at_y + inverse[0, 2]
    map_y = inverse[1, 0] * at_x + inverse[1, 1] * at_y + inverse[1, 2]
    return cv2.remap(
        grey, map_x.astype(np.float32), map_y.astype(np.float32), cv2.INTER_LINEAR,
        borderMode=cv2.BORDER_REFLECT,
    )  # fmt: skip


def _teeth_row(
    rng: np.random.Generator, shape: tuple[int, ...], upper: bool
) -> list[tuple[int, int]]:
    """Points along the upper or lower row of teeth of a panoramic film (its middle band)."""
    height, width = shape[:2]
    row = 0.44 if upper else 0.58
    xs = np.linspace(0.28, 0.72, 12) * width
    ys = (row + 0.04 * (2 * (xs / width) - 1) ** 2 * (-1 if upper else 1)) * height
    ys += rng.normal(0, 0.005 * height, len(xs))
    return [(int(x), int(y)) for x, y in zip(xs, ys, strict=True)]


def treated(grey: np.ndarray, rng: np.random.Generator, changes: int = 2) -> np.ndarray:
    """``changes`` changes of the mouth, drawn from: a filling added, the brightest
    restoration removed, braces on, an extraction."""
    out = grey.copy()
    height, width = grey.shape
    for change in rng.choice(["filling", "removed", "braces", "extraction"], changes, False):
        if change == "filling":
            for _ in range(int(rng.integers(1, 4))):
                x, y = _teeth_row(rng, grey.shape, bool(rng.random() < 0.5))[rng.integers(12)]
                axes = (max(2, width // 70), max(2, height // 40))
                cv2.ellipse(out, (x, y), axes, float(rng.uniform(0, 180)), 0, 360, 250, -1)
        elif change == "removed":
            bright = (out >= np.percentile(out, 99.5)).astype(np.uint8)
            out = cv2.inpaint(
                out, cv2.dilate(bright, np.ones((5, 5), np.uint8)), 5, cv2.INPAINT_TELEA
            )
        elif change == "braces":
            side = max(2, width // 110)
            for upper in (True, False):
                row = _teeth_row(rng, grey.shape, upper)
                cv2.polylines(out, [np.array(row, np.int32)], False, 235, max(1, side // 3))
                for x, y in row:
                    cv2.rectangle(out, (x - side, y - side), (x + side, y + side), 245, -1)
        else:
            x, y = _teeth_row(rng, grey.shape, bool(rng.random() < 0.5))[rng.integers(12)]
            mask = np.zeros_like(out)
            cv2.ellipse(mask, (x, y), (width // 45, height // 12), 0, 0, 360, 255, -1)
            out = cv2.inpaint(out, mask, 7, cv2.INPAINT_TELEA)
    return out


def re_exposed(grey: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Another machine's film of the content: the source's own grain smoothed away and the
    frame resampled, then another sharpness, gamma and contrast, and new noise."""
    height, width = grey.shape
    smooth = cv2.GaussianBlur(grey, (0, 0), 0.9 * max(1.0, max(height, width) / 1024))
    factor = rng.uniform(0.8, 1.2)
    size = (max(8, round(width * factor)), max(8, round(height * factor)))
    out: np.ndarray = cv2.resize(smooth, size, interpolation=cv2.INTER_CUBIC).astype(np.float32)
    sharpen = rng.uniform(-0.4, 0.8)  # below zero: a softer machine
    blurred = cv2.GaussianBlur(out, (0, 0), 1.5)
    out = out + sharpen * (out - blurred)
    out = 255 * (np.clip(out, 0, 255) / 255) ** rng.uniform(0.75, 1.3)
    out = (out - 128) * rng.uniform(0.8, 1.2) + 128 + rng.uniform(-15, 15)
    grain = rng.normal(0, rng.uniform(2.0, 6.0), out.shape).astype(np.float32)
    out = out + cv2.GaussianBlur(grain, (0, 0), 0.7) * 1.6
    written: np.ndarray = np.clip(out, 0, 255).astype(np.uint8)
    return written


def jpeg(grey: np.ndarray, quality: int) -> np.ndarray:
    """``grey`` written as JPEG at ``quality`` and read back."""
    _, data = cv2.imencode(".jpg", grey, [cv2.IMWRITE_JPEG_QUALITY, quality])
    return np.asarray(cv2.imdecode(data, cv2.IMREAD_GRAYSCALE))


def revisit(grey: np.ndarray, seed: int) -> np.ndarray:
    """A realistic later visit of the patient of ``grey``: bent (at 0.6-1.6 of ``bent``'s
    typical strength), treated, re-exposed by
    another machine with new noise, another crop, JPEG 70-95."""
    rng = np.random.default_rng(seed)
    out = treated(bent(grey, rng, rng.uniform(0.6, 1.6)), rng, int(rng.integers(1, 3)))
    out = re_exposed(out, rng)
    height, width = out.shape
    top, bottom = (rng.uniform(0.0, 0.04, 2) * height).astype(int)
    left, right = (rng.uniform(0.0, 0.04, 2) * width).astype(int)
    return jpeg(out[top : height - bottom, left : width - right], int(rng.integers(70, 96)))


def same_frame_revisit(grey: np.ndarray, seed: int) -> np.ndarray:
    """``revisit`` of ``grey`` exported at ``grey``'s own size (the archive's films share one
    export size), so that the sample's annotation of the visit keeps the frame."""
    height, width = grey.shape
    return cv2.resize(revisit(grey, seed), (width, height), interpolation=cv2.INTER_AREA)


def burned_in(grey: np.ndarray, kind: str, size: float, seed: int) -> np.ndarray:
    """``grey`` with a burned-in ``kind`` (label, ruler or marker) ``size`` of the width wide,
    the same drawing for the same ``kind``, ``size`` and ``seed`` on any film; placed in a
    corner band, where such marks are burned in."""
    height, width = grey.shape
    rng = np.random.default_rng(seed)
    box_w = max(24, int(size * width))
    if kind == "label":
        box_h = max(14, box_w // 4)
        mark = np.full((box_h, box_w), 255 if rng.random() < 0.5 else 0, np.uint8)
        ink = 0 if mark[0, 0] else 255
        text = "".join(rng.choice(list("ABCDEFGHJKLMNPRSTUVWXYZ0123456789"), 10))
        scale = box_h / 40
        cv2.putText(
            mark,
            text[:5],
            (2, box_h // 2 - 1),
            cv2.FONT_HERSHEY_SIMPLEX,
            scale,
            ink,
            max(1, box_h // 20),
        )
        cv2.putText(
            mark,
            text[5:],
            (2, box_h - 3),
            cv2.FONT_HERSHEY_SIMPLEX,
            scale,
            ink,
            max(1, box_h // 20),
        )
    elif kind == "ruler":
        box_h = max(8, box_w // 10)
        mark = np.full((box_h, box_w), 240, np.uint8)
        for n, x in enumerate(range(0, box_w, max(3, box_w // 40))):
            mark[: box_h * (2 if n % 5 == 0 else 1) // 3, x] = 20
    else:
        box_h = box_w
        mark = np.zeros((box_h, box_w), np.uint8)
        cv2.circle(mark, (box_w // 2, box_h // 2), box_w // 2 - 1, 255, max(1, box_w // 12))
        cv2.putText(
            mark,
            "R",
            (box_w // 4, 3 * box_h // 4),
            cv2.FONT_HERSHEY_SIMPLEX,
            box_w / 40,
            255,
            max(1, box_w // 12),
        )
    out = grey.copy()
    box_h, box_w = min(box_h, height - 2), min(box_w, width - 2)
    y = (
        int(rng.uniform(0.02, 0.1) * height)
        if rng.random() < 0.5
        else height - box_h - int(0.05 * height)
    )
    x = int(rng.uniform(0.02, 0.98) * (width - box_w))
    out[y : y + box_h, x : x + box_w] = mark[:box_h, :box_w]
    return out
