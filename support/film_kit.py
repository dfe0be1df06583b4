"""Film-sized test pictures and their copies, drawn without the code under test.

Sizes come from the real archive's range (about 2,300-2,640 x 1,252-1,292, mostly not
multiples of 8); the picture is multi-scale texture with hard edges, so sub-pixel shifts and
tone changes show up as they do on radiographs. Copies are made as an augmentation script or
a re-export would make them; nothing here imports the project's hash or pixel check.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

REAL_WIDTHS = (2301, 2399, 2455, 2517, 2583, 2639)
REAL_HEIGHTS = (1253, 1262, 1271, 1279, 1289)


def film(seed: int, size: tuple[int, int] | None = None) -> np.ndarray:
    """A grey film: smooth anatomy at several scales, bright blocks (teeth), dark corners."""
    rng = np.random.default_rng(seed)
    width, height = size or (int(rng.choice(REAL_WIDTHS)), int(rng.choice(REAL_HEIGHTS)))
    picture = np.zeros((height, width))
    for cells, weight in ((4, 60), (12, 35), (40, 30), (160, 30), (480, 25)):
        coarse = Image.fromarray(rng.random((cells, cells * 2)).astype(np.float32))
        picture += weight * np.asarray(coarse.resize((width, height), Image.Resampling.BICUBIC))
    for _ in range(60):
        x, y = int(rng.integers(0, width - 90)), int(rng.integers(height // 4, 3 * height // 4))
        picture[y : y + int(rng.integers(120, 300)), x : x + int(rng.integers(40, 90))] += 45
    yy, xx = np.mgrid[0:height, 0:width]
    vignette = ((xx / width - 0.5) ** 2 + (yy / height - 0.5) ** 2) * 160
    picture = picture - vignette + rng.normal(0, 1.5, picture.shape)
    return np.clip(picture - picture.min() + 10, 0, 255)


def exposed(picture: np.ndarray, offset: float = 0, gain: float = 1, gamma: float = 1):
    """The picture re-exported at another exposure."""
    return np.clip(offset + gain * 255 * (np.clip(picture, 0, 255) / 255) ** gamma, 0, 255)


def noised(picture: np.ndarray, sigma: float, seed: int) -> np.ndarray:
    return np.clip(picture + np.random.default_rng(seed).normal(0, sigma, picture.shape), 0, 255)


def turned(picture: np.ndarray, how: str) -> np.ndarray:
    """mirror, rot90 (counter-clockwise), rot180 or rot270."""
    return {
        "mirror": lambda p: p[:, ::-1],
        "rot90": lambda p: np.rot90(p, 1),
        "rot180": lambda p: np.rot90(p, 2),
        "rot270": lambda p: np.rot90(p, 3),
    }[how](picture)


def scaled(picture: np.ndarray, factor: float) -> np.ndarray:
    height, width = picture.shape
    image = Image.fromarray(picture.astype(np.float32))
    size = (round(width * factor), round(height * factor))
    return np.asarray(image.resize(size, Image.Resampling.BICUBIC))


def shifted(picture: np.ndarray, dx: int, dy: int) -> np.ndarray:
    """Another shot of the same patient: the frame moved by ``dx, dy`` pixels."""
    return np.roll(picture, (dy, dx), axis=(0, 1))


def cropped(picture: np.ndarray, share: float) -> np.ndarray:
    """``picture`` with ``share`` of each side cut away, top and bottom, left and right."""
    height, width = picture.shape[:2]
    dy, dx = round(height * share), round(width * share)
    return picture[dy : height - dy, dx : width - dx]


def padded(picture: np.ndarray, share: float) -> np.ndarray:
    """A grey ``picture`` with a black border ``share`` of each side wide added around it."""
    height, width = picture.shape
    dy, dx = round(height * share), round(width * share)
    return np.pad(picture, ((dy, dy), (dx, dx)))


def save(picture: np.ndarray, path: Path, quality: int = 90, **options) -> Path:
    Image.fromarray(np.clip(picture, 0, 255).round().astype(np.uint8)).save(
        path, "JPEG", quality=quality, **options
    )
    return path
