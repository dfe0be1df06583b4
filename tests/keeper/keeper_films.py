"""Films the keeper's tests draw (``support/film_kit.py``): with a border of their own, cropped,
of faint grain, rescaled or squeezed, written as a JPEG and decoded back to grey levels."""

from __future__ import annotations

import io

import cv2
import numpy as np
from PIL import Image

import support.film_kit as kit


def _jpeg(picture: np.ndarray, quality: int = 90) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(np.clip(picture, 0, 255).astype(np.uint8), "L").save(
        buffer, "JPEG", quality=quality
    )
    return buffer.getvalue()


BORDER = 0.013  # of each side: a border of the film's own, as held-out archives' films have


def _bordered(picture: np.ndarray, share: float = BORDER, level: int = 3) -> np.ndarray:
    height, width = picture.shape
    dy, dx = round(height * share), round(width * share)
    out = picture.copy()
    out[:dy], out[-dy:], out[:, :dx], out[:, -dx:] = level, level, level, level
    return out


def _decoded(data: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(data)) as image:
        return np.asarray(image.convert("L"), dtype=np.float64)


def _crop(picture: np.ndarray, share: float) -> np.ndarray:
    height, width = picture.shape
    dy, dx = round(height * share), round(width * share)
    return picture[dy : height - dy, dx : width - dx]


def _smooth(seed: int, blur: float, noise: float) -> np.ndarray:
    """A kit film whose finest texture is faint grain, as archive-size films' is (their
    detail near the pixel scale is mostly their own JPEG noise): blurred, then grained."""
    picture = cv2.GaussianBlur(kit.film(seed, (768, 384)), (0, 0), blur)
    grained = picture + np.random.default_rng(seed).normal(0, noise, picture.shape)
    return np.clip(grained, 0, 255).round()


def _rescaled(data: bytes, factor: float, quality: int) -> bytes:
    """The film resized by ``factor`` (bicubic up, area down) and written at ``quality``."""
    picture = _decoded(data)
    height, width = picture.shape
    size = (round(width * factor), round(height * factor))
    resized = cv2.resize(
        picture, size, interpolation=cv2.INTER_CUBIC if factor > 1 else cv2.INTER_AREA
    )
    return _jpeg(resized.round(), quality)


def _squeezed(data: bytes) -> bytes:
    """The film resized in width only (to 93 %), written at quality 90."""
    grey = _decoded(data)
    height, width = grey.shape
    squeezed = cv2.resize(grey, (round(width * 0.93), height), interpolation=cv2.INTER_AREA)
    return _jpeg(squeezed.round(), 90)
