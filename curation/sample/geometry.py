"""Where a lesion box goes when its film is mirrored, turned, scaled or re-read by a person."""

from __future__ import annotations

import numpy as np

from curation.drawing.sizes import Box


def mirror_box(box: Box, width: int) -> Box:
    """The box after a left-right mirror of a film ``width`` pixels wide."""
    x1, y1, x2, y2, pai = box
    return (width - 1 - x2, y1, width - 1 - x1, y2, pai)


def rotate_box(box: Box, width: int, height: int, angle: int) -> Box:
    """The box after turning a ``width`` x ``height`` film by ``angle`` degrees.

    Angles follow the usual image convention: positive turns counter-clockwise (``np.rot90``
    with ``k = angle // 90``), so -90 is a clockwise quarter turn and 180 a half turn.
    """
    x1, y1, x2, y2, pai = box
    if angle == -90:
        return (height - 1 - y2, x1, height - 1 - y1, x2, pai)
    if angle == 90:
        return (y1, width - 1 - x2, y2, width - 1 - x1, pai)
    if angle == 180:
        return (width - 1 - x2, height - 1 - y2, width - 1 - x1, height - 1 - y1, pai)
    raise ValueError(f"angle must be -90, 90 or 180, got {angle}")


def scale_box(box: Box, factor: float) -> Box:
    """The box after resizing its film by ``factor``."""
    x1, y1, x2, y2, pai = box
    return (round(x1 * factor), round(y1 * factor), round(x2 * factor), round(y2 * factor), pai)


def jitter(
    rng: np.random.Generator, boxes: tuple[Box, ...], width: int, height: int
) -> tuple[Box, ...]:
    """An independent annotator's boxes: every corner moved by up to 8 px."""
    moved = []
    for x1, y1, x2, y2, pai in boxes:
        dx1, dy1, dx2, dy2 = (int(d) for d in rng.integers(-8, 9, size=4))
        moved.append(
            (
                max(x1 + dx1, 0),
                max(y1 + dy1, 0),
                min(x2 + dx2, width - 1),
                min(y2 + dy2, height - 1),
                pai,
            )
        )
    return tuple(moved)


def disagree(rng: np.random.Generator, boxes: tuple[Box, ...]) -> tuple[Box, ...]:
    """A second reader who grades one lesion a step differently and, of several, misses one,
    so the agreement figure of the sample is not trivially perfect."""
    if not boxes:
        return boxes
    regraded = list(boxes)
    x1, y1, x2, y2, pai = regraded[0]
    regraded[0] = (x1, y1, x2, y2, 4 if pai != 4 else int(rng.choice([3, 5])))
    if len(regraded) > 1:
        regraded.pop(int(rng.integers(1, len(regraded))))
    return tuple(regraded)
