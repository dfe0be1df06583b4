"""The distractor films the recall benches plant the real films among: a patient and one shot
of the sample's generator (``curation.drawing.anatomy``), exposed at its low resolution, which
is about the size the build decodes a film at, with the render's grain, as a JPEG: a film the
pipeline could be handed, without the cost of the full-size render."""

from __future__ import annotations

import io
from collections.abc import Iterator

import numpy as np
from PIL import Image

from curation.drawing.anatomy import draw_looks, draw_patient, expose, single_shot
from curation.drawing.render import GRAIN_SIGMA

LOW_GRAIN = GRAIN_SIGMA / 4  # a film shrunk 4x averages 16 grains: a quarter of one's deviation
QUALITY = 90


def distractor_jpegs(rng: np.random.Generator, count: int) -> Iterator[bytes]:
    """``count`` distractor films drawn from ``rng``, as JPEG bytes (Pillow, ``QUALITY``)."""
    looks = draw_looks(rng)
    for _ in range(count):
        patient, shot = draw_patient(rng, looks), single_shot(rng)
        low = expose(patient, shot).astype(np.float32)
        grainy = np.clip(low + LOW_GRAIN * rng.standard_normal(low.shape) + 0.5, 0, 255)
        out = io.BytesIO()
        Image.fromarray(grainy.astype(np.uint8)).save(out, "JPEG", quality=QUALITY)
        yield out.getvalue()
