"""Which film of a same-picture group was re-toned: two tone statistics of each film, read
as a departure from the archive's typical film (``curation.keeper.rules``'s ``local
contrast``
and ``tone curve`` rules).

A re-toned copy written at the original's own JPEG quality and encoder leaves nothing in the
file's header; what it changes is the picture's tone, and an archive's films share one
imaging system's tone. So each statistic is compared with its distribution over a
reference sample of the archive's films (``REFERENCE_FILMS`` of them, the first by sha256:
spread over the archive, the same on every run), as a departure in units of that sample's
spread (median absolute deviation); the copy is the film that departs more, by a margin.

- local contrast: the mean absolute difference between the film and its blur (Gaussian,
  ``CONTRAST_SIGMA`` px) at a fixed width of ``CONTRAST_WIDTH`` px, so that films of every
  size compare. CLAHE and histogram equalisation raise it far above an exported film's, so
  only a film above typical is named (a brightened copy of a dull original lies nearer
  typical than the original, and is no sign that the original was re-toned);
- histogram roughness: the share of the grey histogram that departs from its own 5-level
  moving average. A tone curve applied to 8-bit levels stretches some levels apart (empty
  levels between) and piles others together (spikes): gamma, brightness/contrast and
  global equalisation comb the histogram; an exported film's is smooth. It needs the full
  decode (a reduced-scale decode averages the comb away).

The margins (``CONTRAST_MARGIN``, ``ROUGHNESS_MARGIN``) and the measurements behind them
are in ``curation.keeper.rules``'s docstring and docs/margins.md, "Keeper".

Cost: one full-size decode per file content of each same-picture group the files' own facts
leave tied between films of more than one content, and of each reference film (at most
``REFERENCE_FILMS``), only when the archive has such a group
(``curation.keeper.evidence.keeper_facts``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
from PIL import Image

CONTRAST_WIDTH = 256  # px: the width local contrast is measured at
CONTRAST_SIGMA = 4.0  # px at that width
ROUGH_WINDOW = 5  # grey levels of the moving average a histogram is compared with
CONTRAST_MARGIN = 0.93  # spreads: midway between 0.784 and 1.066 (curation.keeper.rules)
ROUGHNESS_MARGIN = 1.0  # spreads: midway between 0.671 and 1.320 (curation.keeper.rules)
REFERENCE_FILMS = 100  # films of the archive its typical tone is measured on
_SPREAD_FLOOR = 1e-6  # a reference sample of identical films still divides


@dataclass(frozen=True)
class Tone:
    """A film's two tone statistics (see the module docstring); both 0 when unread."""

    local_contrast: float = 0.0
    roughness: float = 0.0


def local_contrast(grey: np.ndarray) -> float:
    """Mean absolute difference from the film's blur, at ``CONTRAST_WIDTH`` px wide."""
    height, width = grey.shape
    size = (CONTRAST_WIDTH, max(1, round(height * CONTRAST_WIDTH / width)))
    small = cv2.resize(grey.astype(np.float32), size, interpolation=cv2.INTER_AREA)
    return float(np.abs(small - cv2.GaussianBlur(small, (0, 0), CONTRAST_SIGMA)).mean())


def roughness(grey: np.ndarray) -> float:
    """The share of the grey histogram off its own moving average (levels 3-252)."""
    histogram = cv2.calcHist([grey], [0], None, [256], [0, 256]).ravel().astype(np.float64)
    smooth = np.convolve(histogram, np.ones(ROUGH_WINDOW) / ROUGH_WINDOW, mode="same")
    edge = ROUGH_WINDOW // 2 + 1  # the average is cut short at the ends
    return float(np.abs(histogram - smooth)[edge:-edge].sum() / histogram.sum())


def tone_of(path: Path) -> Tone:
    """A film's tone statistics from one full-size grey decode; zeros for a film that no
    longer reads (it decoded in step 4), which then departs from nothing."""
    try:
        with Image.open(path) as image:
            grey = np.asarray(image.convert("L"))
    except (OSError, ValueError, Image.DecompressionBombError):
        return Tone()
    return Tone(round(local_contrast(grey), 4), round(roughness(grey), 5))


@dataclass(frozen=True)
class TypicalTone:
    """Median and spread (median absolute deviation) of each statistic over the archive."""

    contrast_median: float
    contrast_spread: float
    roughness_median: float
    roughness_spread: float

    @classmethod
    def of(cls, tones: list[Tone]) -> TypicalTone:
        """The typical tone of ``tones``, leaving out films that were not read."""
        read = [t for t in tones if t != Tone()] or [Tone()]
        contrast = np.array([t.local_contrast for t in read])
        rough = np.array([t.roughness for t in read])
        return cls(*_median_spread(contrast), *_median_spread(rough))

    def departures(self, tone: Tone) -> tuple[float, float]:
        """How far the film's local contrast (signed: above the typical film is positive)
        and roughness lie from the archive's typical film, in spreads; (0, 0) for a film
        that was not read."""
        if tone == Tone():
            return 0.0, 0.0
        contrast = (tone.local_contrast - self.contrast_median) / self.contrast_spread
        rough = abs(tone.roughness - self.roughness_median) / self.roughness_spread
        return round(contrast, 3), round(rough, 3)


def _median_spread(values: np.ndarray) -> tuple[float, float]:
    median = float(np.median(values))
    return median, max(float(np.median(np.abs(values - median))), _SPREAD_FLOOR)
