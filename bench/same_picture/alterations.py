"""The alterations a reviewer tries on real films, and a simulated visit, made from a real film
(grey uint8): what ``bench.same_picture.frames`` measures the same-picture checks on.
Nothing here is the project's detection code."""

from __future__ import annotations

import io
from collections.abc import Callable

import cv2
import numpy as np
from PIL import Image, ImageDraw

from bench.common.real_films import repositioned
from support.film_kit import cropped, padded

QUALITY = 90  # a copy is written at this JPEG quality unless its alteration says otherwise


def jpeg(picture: np.ndarray, quality: int = QUALITY, mode: str = "L") -> bytes:
    image = Image.fromarray(np.clip(picture, 0, 255).round().astype(np.uint8))
    out = io.BytesIO()
    image.convert(mode).save(out, "JPEG", quality=quality)
    return out.getvalue()


def _rotate(grey: np.ndarray, degrees: float) -> np.ndarray:
    height, width = grey.shape
    turn = cv2.getRotationMatrix2D((width / 2, height / 2), degrees, 1.0)
    return cv2.warpAffine(grey, turn, (width, height), flags=cv2.INTER_LINEAR)


def _clahe(grey: np.ndarray, clip: float) -> np.ndarray:
    return cv2.createCLAHE(clipLimit=clip, tileGridSize=(8, 8)).apply(grey)


def _tone(grey: np.ndarray, offset: float, gain: float, gamma: float) -> np.ndarray:
    return offset + gain * 255.0 * (grey / 255.0) ** gamma


def _label(grey: np.ndarray) -> np.ndarray:
    """A large burned-in label: a white box with black text over a fifth of the width."""
    height, width = grey.shape
    image = Image.fromarray(grey)
    draw = ImageDraw.Draw(image)
    box = (width // 20, height // 20, width // 20 + width // 5, height // 20 + height // 10)
    draw.rectangle(box, fill=255)
    draw.text((box[0] + 4, box[1] + 4), "R  PATIENT 0000 2019", fill=0)
    return np.asarray(image)


def _keep_centre(grey: np.ndarray, share: float) -> np.ndarray:
    """The centre ``share`` of each side (a crop to 60 % keeps 36 % of the area)."""
    return cropped(grey, (1 - share) / 2)


def _longest_side(grey: np.ndarray, side: int) -> np.ndarray:
    height, width = grey.shape
    factor = side / max(height, width)
    size = (round(width * factor), round(height * factor))
    return cv2.resize(grey, size, interpolation=cv2.INTER_AREA)


def _resize(grey: np.ndarray, factor: float) -> np.ndarray:
    height, width = grey.shape
    size = (round(width * factor), round(height * factor))
    return cv2.resize(grey, size, interpolation=cv2.INTER_CUBIC)


def _resize_width(grey: np.ndarray, factor: float) -> np.ndarray:
    height, width = grey.shape
    return cv2.resize(grey, (round(width * factor), height), interpolation=cv2.INTER_AREA)


Alteration = Callable[[np.ndarray], tuple[np.ndarray, int, str]]


def _plain(change: Callable[[np.ndarray], np.ndarray], quality: int = QUALITY) -> Alteration:
    return lambda grey: (change(grey), quality, "L")


# The alterations' table, each at strengths 1 / 2 / 3 (the ones without a strength once).
ALTERATIONS: dict[tuple[str, int], Alteration] = {
    ("JPEG re-encode", 1): _plain(lambda g: g, 80),
    ("JPEG re-encode", 2): _plain(lambda g: g, 60),
    ("JPEG re-encode", 3): _plain(lambda g: g, 40),
    ("gamma", 1): _plain(lambda g: _tone(g, 0, 1, 0.9)),
    ("gamma", 2): _plain(lambda g: _tone(g, 0, 1, 0.8)),
    ("gamma", 3): _plain(lambda g: _tone(g, 0, 1, 1.3)),
    ("brightness/contrast", 1): _plain(lambda g: _tone(g, 10, 1.05, 1)),
    ("brightness/contrast", 2): _plain(lambda g: _tone(g, -15, 1.15, 1)),
    ("brightness/contrast", 3): _plain(lambda g: _tone(g, 25, 0.8, 1)),
    ("grey<->RGB", 1): lambda g: (g, QUALITY, "RGB"),
    ("mirror", 1): _plain(lambda g: g[:, ::-1]),
    ("quarter turn", 1): _plain(lambda g: np.rot90(g, 1)),
    ("half turn", 1): _plain(lambda g: np.rot90(g, 2)),
    ("crop", 1): _plain(lambda g: cropped(g, 0.01)),
    ("crop", 2): _plain(lambda g: cropped(g, 0.03)),
    ("crop", 3): _plain(lambda g: cropped(g, 0.06)),
    ("black pad", 1): _plain(lambda g: padded(g, 0.02)),
    ("black pad", 2): _plain(lambda g: padded(g, 0.05)),
    ("black pad", 3): _plain(lambda g: padded(g, 0.10)),
    ("rotation", 1): _plain(lambda g: _rotate(g, 1.0)),
    ("rotation", 2): _plain(lambda g: _rotate(g, -2.0)),
    ("rotation", 3): _plain(lambda g: _rotate(g, 3.0)),
    ("CLAHE / equalisation", 1): _plain(lambda g: _clahe(g, 2.0)),
    ("CLAHE / equalisation", 2): _plain(lambda g: _clahe(g, 4.0)),
    ("CLAHE / equalisation", 3): _plain(cv2.equalizeHist),
    ("crop + re-encode", 1): _plain(lambda g: cropped(g, 0.01), 70),
    ("crop + re-encode", 2): _plain(lambda g: cropped(g, 0.03), 70),
    ("crop + re-encode", 3): _plain(lambda g: cropped(g, 0.06), 50),
    ("width-only resize", 1): _plain(lambda g: _resize_width(g, 0.93)),
    ("width-only resize", 2): _plain(lambda g: _resize_width(g, 0.90)),
    ("burned-in label", 1): _plain(_label),
    # What reviewers tried on held-out films beyond that table.
    ("crop to 60% of each side", 1): _plain(lambda g: _keep_centre(g, 0.6)),
    ("downscale to 256 px", 1): _plain(lambda g: _longest_side(g, 256)),
    ("negative", 1): _plain(lambda g: 255 - g),
    ("grey re-saved as RGB q95", 1): lambda g: (g, 95, "RGB"),
    ("upscale 1.15", 1): _plain(lambda g: _resize(g, 1.15)),
}


def simulated_visit(grey: np.ndarray, seed: int) -> np.ndarray:
    """Another visit of the same patient at typical strength: repositioned (scale 2-4%,
    shift 1-2%, turn 1-2 degrees), the arch's curve changed (a smooth vertical bend of
    0.5-1% of the height), another exposure (gamma 0.85-1.15), and a new restoration."""
    rng = np.random.default_rng(seed)
    height, width = grey.shape
    scale = 1 + rng.choice([-1, 1]) * rng.uniform(0.02, 0.04)
    turn = rng.choice([-1, 1]) * rng.uniform(1.0, 2.0)
    shift = rng.uniform(0.01, 0.02, 2) * (width, height) * rng.choice([-1, 1], 2)
    visit = repositioned(grey, scale, turn, shift, rng.uniform(0.005, 0.01) * height)
    visit = _tone(visit.astype(np.float64), 0, 1, float(rng.uniform(0.85, 1.15)))
    x, y = (
        int(rng.integers(width // 4, 3 * width // 4)),
        int(rng.integers(height // 3, height // 2)),
    )
    cv2.ellipse(visit, (x, y), (width // 60, height // 25), 0, 0, 360, 250, -1)
    return visit
