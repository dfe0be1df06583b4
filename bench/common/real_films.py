"""What the bench parts that measure on real radiographs share: where the films are (read in
place, never copied into the repository), the archive's film sizes they are upscaled to, and
the repositioning warp a simulated visit of one patient is made with."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np

REAL_FILMS = Path(__file__).resolve().parents[3] / "shared" / "realfilms-dev" / "films"
UPSCALED_WIDTHS = (2440, 2950)
UPSCALED_HEIGHTS = (1270, 1435)


def absent(part: str) -> dict | None:
    """A bench part's record when the real films are absent (said on the terminal too), or
    None when they are here."""
    if REAL_FILMS.is_dir():
        return None
    skipped = f"{part} skipped: {REAL_FILMS} is absent (the real films are not shipped)."
    print(skipped)
    return {"measured": False, "skipped": skipped}


def upscaled(grey: np.ndarray, seed: int) -> np.ndarray:
    """The film at a real archive size (bicubic), drawn per film from the archive's range."""
    rng = np.random.default_rng(seed)
    size = (int(rng.integers(*UPSCALED_WIDTHS)), int(rng.integers(*UPSCALED_HEIGHTS)))
    return cv2.resize(grey, size, interpolation=cv2.INTER_CUBIC)


def repositioned(
    grey: np.ndarray,
    scale: float,
    turn: float,
    shift: np.ndarray,
    bend: float,
    border: int = cv2.BORDER_CONSTANT,
) -> np.ndarray:
    """The patient stood otherwise: scaled and turned (degrees) about the centre, shifted by
    ``shift`` (pixels, x and y), and the arch's curve bent by ``bend`` pixels at mid-width
    (a smooth non-rigid warp)."""
    height, width = grey.shape
    moved = cv2.getRotationMatrix2D((width / 2, height / 2), turn, scale)
    moved[:, 2] += shift
    ys, xs = np.mgrid[0:height, 0:width].astype(np.float32)
    bent = ys + bend * np.sin(np.pi * xs / width)
    inverse = cv2.invertAffineTransform(moved)
    map_x = inverse[0, 0] * xs + inverse[0, 1] * bent + inverse[0, 2]
    map_y = inverse[1, 0] * xs + inverse[1, 1] * bent + inverse[1, 2]
    return cv2.remap(
        grey, map_x.astype(np.float32), map_y.astype(np.float32), cv2.INTER_LINEAR,
        borderMode=border,
    )  # fmt: skip
