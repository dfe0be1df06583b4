"""Whether a film shows anything: a blank, near-black or uniform image is no radiograph, and
its lesion boxes would mark nothing. Such a film is rejected in the hash step with its
reason, as cleanvision flags dark and blank images.

The check reads the grey picture the hash step has just decoded, so no film is decoded for
it alone, and an augmented copy the originals step drops by its name is never decoded
(docs/scale.md, "The content check on the hash's decode"). It reads the film at one eighth
(a mean per 8 x 8 block, cheap, and the sensor noise a blank film still carries is averaged
away): the draft decode itself where the draft is an eighth (every film of 2,048 x 1,024 or
more), else that decode's blocks averaged down to an eighth. Two figures decide:

- brightness, the 99th percentile of the grey levels: a radiograph's teeth and bone are its
  brightest part, so a film whose brightest one percent stays dark shows nothing;
- spread, the 99th minus the 1st percentile: a uniform film (white, grey, black) has none.

The thresholds are measured on real films against blank, near-black and uniform ones
(docs/design.md, "Films with no content"; ``python -m bench.margins.content``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image

DARK_BRIGHTNESS = 100.0  # brightest 1% darker than this: near-black (docs/design.md)
BLANK_SPREAD = 85.0  # grey levels spanning fewer than this: uniform (docs/design.md)
PERCENTILES = (1.0, 99.0)
EIGHTH = 8  # the scale the figures are read at: one grey level a JPEG block
CONTENT_CHECK_VERSION = (
    f"content-v2/eighth/p{PERCENTILES[0]:g}-p{PERCENTILES[1]:g}"
    f"/dark{DARK_BRIGHTNESS:g}-uniform{BLANK_SPREAD:g}"
)


@dataclass(frozen=True)
class ContentFigures:
    """What the content check reads of a film: its 99th percentile and its 1st-99th spread."""

    brightness: float
    spread: float


def eighth(grey: Image.Image, film_width: int) -> Image.Image:
    """A grey decode of a film ``film_width`` pixels wide brought to one eighth of the film:
    as it is when it is an eighth already, else each block of it averaged (Pillow's
    ``reduce``)."""
    decoded_scale = max(1, round(film_width / max(grey.width, 1)))
    factor = max(1, EIGHTH // decoded_scale)
    return grey if factor == 1 else grey.reduce(factor)


def content_figures(grey: Image.Image, film_width: int) -> ContentFigures:
    """The figures of a film from its grey decode at any scale (``eighth``)."""
    low, high = np.percentile(np.asarray(eighth(grey, film_width)), PERCENTILES)
    return ContentFigures(float(high), float(high - low))


def content_problem(grey: Image.Image, film_width: int) -> str:
    """Why the film shows no radiographic content (its reason in the manifest), or ""."""
    figures = content_figures(grey, film_width)
    if figures.brightness < DARK_BRIGHTNESS:
        return (
            f"no radiographic content: near-black (its brightest 1% is grey level "
            f"{figures.brightness:.0f}, under {DARK_BRIGHTNESS:.0f})"
        )
    if figures.spread < BLANK_SPREAD:
        return (
            f"no radiographic content: uniform (its grey levels span {figures.spread:.0f}, "
            f"under {BLANK_SPREAD:.0f})"
        )
    return ""
