"""Whether a film shows anything: a blank, near-black or uniform image is no radiograph, and
its lesion boxes would mark nothing. Such a film is rejected in the index step with its
reason, as cleanvision flags dark and blank images.

The film is decoded once, grey, at libjpeg's smallest scale (one eighth: a mean per 8 x 8
block, cheap, and the sensor noise a blank film still carries is averaged away), only after
the header check (``curation.core.jpeg_check``) has cleared it. Two figures decide:

- brightness, the 99th percentile of the grey levels: a radiograph's teeth and bone are its
  brightest part, so a film whose brightest one percent stays dark shows nothing;
- spread, the 99th minus the 1st percentile: a uniform film (white, grey, black) has none.

The thresholds are measured on real films against blank, near-black and uniform ones
(docs/design.md, "Films with no content"; ``python -m bench.margins.content``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import simplejpeg

DARK_BRIGHTNESS = 100.0  # brightest 1% darker than this: near-black (docs/design.md)
BLANK_SPREAD = 85.0  # grey levels spanning fewer than this: uniform (docs/design.md)
PERCENTILES = (1.0, 99.0)


@dataclass(frozen=True)
class ContentFigures:
    """What the content check reads of a film: its 99th percentile and its 1st-99th spread."""

    brightness: float
    spread: float


def content_figures(data: bytes) -> ContentFigures | None:
    """The figures of a JPEG the header check cleared, or None when libjpeg cannot decode it
    (the hash step's strict decode then rejects it with libjpeg's reason)."""
    try:
        grey = simplejpeg.decode_jpeg(data, colorspace="GRAY", min_width=1, min_height=1)
    except ValueError:
        return None
    low, high = np.percentile(grey, PERCENTILES)
    return ContentFigures(float(high), float(high - low))


def content_problem(data: bytes) -> str:
    """Why the film shows no radiographic content (its reason in the manifest), or ""."""
    figures = content_figures(data)
    if figures is None:
        return ""
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
