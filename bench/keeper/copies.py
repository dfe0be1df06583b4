"""The copies ``bench.keeper.altered`` makes of a real film: every alteration of issue 22's table
(``ALTERATIONS``, each with the JPEG quality it forces, if any), the turns among them
(``TURNED``), and copies beyond the table that change detail rather than tone (``BEYOND``)."""

from __future__ import annotations

import io
from collections.abc import Callable

import cv2
import numpy as np
from PIL import Image

Alter = Callable[[np.ndarray], tuple[np.ndarray, int | None]]  # picture -> (copy, quality)


def _crop(p: np.ndarray, share: float) -> np.ndarray:
    h, w = p.shape[:2]
    dy, dx = round(h * share), round(w * share)
    return p[dy : h - dy, dx : w - dx]


def _pad(p: np.ndarray, share: float, level: int = 0) -> np.ndarray:
    h, w = p.shape[:2]
    dy, dx = round(h * share), round(w * share)
    return cv2.copyMakeBorder(p, dy, dy, dx, dx, cv2.BORDER_CONSTANT, value=(level,) * 3)


def _rotate(p: np.ndarray, degrees: float) -> np.ndarray:
    h, w = p.shape[:2]
    matrix = cv2.getRotationMatrix2D((w / 2, h / 2), degrees, 1.0)
    return cv2.warpAffine(p, matrix, (w, h), flags=cv2.INTER_LINEAR)


def _tone(p: np.ndarray, gamma: float = 1.0, gain: float = 1.0, offset: float = 0.0):
    return np.clip(offset + gain * 255 * (p / 255.0) ** gamma, 0, 255).astype(np.uint8)


def _clahe(p: np.ndarray, clip: float | None) -> np.ndarray:
    grey = cv2.cvtColor(p, cv2.COLOR_RGB2GRAY)
    if clip is None:
        out = cv2.equalizeHist(grey)
    else:
        out = cv2.createCLAHE(clipLimit=clip, tileGridSize=(8, 8)).apply(grey)
    return cv2.cvtColor(out, cv2.COLOR_GRAY2RGB)


def _grey(p: np.ndarray) -> np.ndarray:
    return cv2.cvtColor(p, cv2.COLOR_RGB2GRAY)


def _width(p: np.ndarray, factor: float) -> np.ndarray:
    h, w = p.shape[:2]
    return cv2.resize(p, (round(w * factor), h), interpolation=cv2.INTER_AREA)


ALTERATIONS: dict[str, Alter] = {
    "re-encode q90": lambda p: (p, 90),
    "re-encode q70": lambda p: (p, 70),
    "re-encode q50": lambda p: (p, 50),
    "gamma 0.8": lambda p: (_tone(p, gamma=0.8), None),
    "gamma 1.25": lambda p: (_tone(p, gamma=1.25), None),
    "brightness/contrast": lambda p: (_tone(p, gain=1.15, offset=-12), None),
    "grey": lambda p: (_grey(p), None),
    "mirror": lambda p: (np.ascontiguousarray(p[:, ::-1]), None),
    "quarter turn +90": lambda p: (np.ascontiguousarray(np.rot90(p, 1)), None),
    "quarter turn -90": lambda p: (np.ascontiguousarray(np.rot90(p, 3)), None),
    "half turn": lambda p: (np.ascontiguousarray(np.rot90(p, 2)), None),
    "crop 1%": lambda p: (_crop(p, 0.01), None),
    "crop 3%": lambda p: (_crop(p, 0.03), None),
    "crop 6%": lambda p: (_crop(p, 0.06), None),
    "pad 2%": lambda p: (_pad(p, 0.02), None),
    "pad 5%": lambda p: (_pad(p, 0.05), None),
    "pad 10%": lambda p: (_pad(p, 0.10), None),
    "pad 5% white": lambda p: (_pad(p, 0.05, 255), None),
    "rotation 1 deg": lambda p: (_rotate(p, 1), None),
    "rotation 2 deg": lambda p: (_rotate(p, 2), None),
    "rotation 3 deg": lambda p: (_rotate(p, 3), None),
    "CLAHE clip 2": lambda p: (_clahe(p, 2.0), None),
    "CLAHE clip 4": lambda p: (_clahe(p, 4.0), None),
    "global equalisation": lambda p: (_clahe(p, None), None),
    "crop 1% + q70": lambda p: (_crop(p, 0.01), 70),
    "crop 3% + q70": lambda p: (_crop(p, 0.03), 70),
    "crop 6% + q50": lambda p: (_crop(p, 0.06), 50),
    "width x0.93": lambda p: (_width(p, 0.93), None),
    "width x0.90": lambda p: (_width(p, 0.90), None),
}
TURNED = {"quarter turn +90", "quarter turn -90", "half turn"}
# Beyond issue 22's table: same-quality copies that change detail, not tone. The tone rules
# must not name their originals; how often they do is measured, not a goal.
BEYOND: dict[str, Callable[[np.ndarray, int], np.ndarray]] = {
    "blur sigma 1": lambda p, n: cv2.GaussianBlur(p, (0, 0), 1.0),
    "noise sigma 4": lambda p, n: _tone(p + np.random.default_rng(n).normal(0, 4, p.shape)),
    "unsharp mask 0.6": lambda p, n: _tone(1.6 * p - 0.6 * cv2.GaussianBlur(p, (0, 0), 2.0)),
}


def jpeg(picture: np.ndarray, quality: int) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(picture).save(buffer, "JPEG", quality=quality)
    return buffer.getvalue()


def grey_jpeg(grey: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(grey).save(buffer, "JPEG", quality=95)
    return buffer.getvalue()
