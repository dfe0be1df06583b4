"""The same-picture cases at real film sizes: the copies a script or a re-export would make of
a film (with the view under which each is the same picture) and the distinct films that must
stay apart. ``tests/same_picture/test_same_picture.py`` checks the pixel check on them;
``bench.margins.same_picture`` and ``bench.margins.check_scale`` measure its margins on them.
"""

from __future__ import annotations

import numpy as np

from curation.hashes.hashing import View
from support import film_kit as kit

COPIES = {
    "half turn": ("rot180", View.rot180),
    "quarter turn": ("rot90", View.rot90),
    "three-quarter turn": ("rot270", View.rot270),
    "mirror": ("mirror", View.mirror),
    "scaled down": ("scale:0.83", View.identity),
    "scaled up": ("scale:1.18", View.identity),
    "3 grey levels darker": ("exposure:-3:1:1", View.identity),
    "8 grey levels brighter": ("exposure:8:1:1", View.identity),
    "8 grey levels darker": ("exposure:-8:1:1", View.identity),
    "gain 0.9": ("exposure:0:0.9:1", View.identity),
    "gamma 0.85": ("exposure:0:1:0.85", View.identity),
    "gamma 1.15": ("exposure:0:1:1.15", View.identity),
    "quality 60": ("quality:60", View.identity),
    "noise sigma 4": ("noise:4", View.identity),
    "noise sigma 7": ("noise:7", View.identity),
}
DISTINCT = {
    "another film": "other",
    "another shot, moved 2 px": "shift:2:1",
    "another shot, moved 6 px": "shift:6:2",
}
SEEDS = (3, 11)


def make_case(picture: np.ndarray, how: str, seed: int) -> tuple[np.ndarray, int]:
    """The picture a case's ``how`` (``name:arg:...``) makes of ``picture``, with the JPEG
    quality to save it at."""
    name, *args = how.split(":")
    values = [float(a) for a in args]
    if name in ("rot90", "rot180", "rot270", "mirror"):
        return kit.turned(picture, name), 85
    if name == "scale":
        return kit.scaled(picture, values[0]), 85
    if name == "exposure":
        return kit.exposed(picture, *values), 85
    if name == "quality":
        return picture, int(values[0])
    if name == "noise":
        return kit.noised(picture, values[0], seed), 85
    if name == "shift":
        moved = kit.shifted(picture, int(values[0]), int(values[1]))
        return kit.noised(kit.exposed(moved, 4, 0.97), 1.5, seed + 1), 85
    return kit.film(seed + 1000, picture.shape[::-1]), 85
