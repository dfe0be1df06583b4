"""The films ``bench.keeper.bordered`` decides on: each real film as an original, plain and
with a dark border of its own, and its copies (every alteration of
``bench.same_picture.alterations`` and a few more at real sizes), written to a folder."""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np
from PIL import Image

from bench.common.real_films import REAL_FILMS
from bench.same_picture.alterations import ALTERATIONS, QUALITY, Alteration
from curation.core.atomic import write_bytes
from curation.keeper.evidence import jpeg_quality

NATIVE_FILMS = REAL_FILMS.parent / "films-native"
BORDER_SHARES = (0.009, 0.013)  # of each side: the held-out films' own borders
BORDER_LEVELS = (0, 6)  # grey levels of that border


def _crop_to(grey: np.ndarray, keep: float) -> np.ndarray:
    height, width = grey.shape
    dy, dx = round(height * (1 - keep) / 2), round(width * (1 - keep) / 2)
    return grey[dy : height - dy, dx : width - dx]


def _resized(grey: np.ndarray, width: int, height: int) -> np.ndarray:
    area = width < grey.shape[1]
    return cv2.resize(
        grey, (width, height), interpolation=cv2.INTER_AREA if area else cv2.INTER_CUBIC
    )


def _to_256(grey: np.ndarray) -> np.ndarray:
    return _resized(grey, 256, max(1, round(grey.shape[0] * 256 / grey.shape[1])))


def _upscale(grey: np.ndarray) -> np.ndarray:
    return _resized(grey, round(grey.shape[1] * 1.15), round(grey.shape[0] * 1.15))


def _upscale_lanczos(grey: np.ndarray) -> np.ndarray:
    """Upscaled by another tool's kernel than the rule's own (bicubic)."""
    size = (round(grey.shape[1] * 1.15), round(grey.shape[0] * 1.15))
    return np.asarray(Image.fromarray(grey).resize(size, Image.Resampling.LANCZOS))


def _downscale(grey: np.ndarray) -> np.ndarray:
    return _resized(grey, round(grey.shape[1] / 1.15), round(grey.shape[0] / 1.15))


EXTRA: dict[tuple[str, int], Alteration] = {
    ("crop to 60%", 1): lambda g: (_crop_to(g, 0.6), QUALITY, "L"),
    ("downscale to 256 px", 1): lambda g: (_to_256(g), QUALITY, "L"),
    ("RGB 4:4:4 q95", 1): lambda g: (g, 95, "RGB"),
    ("upscale 1.15", 1): lambda g: (_upscale(g), QUALITY, "L"),
    ("upscale 1.15 Lanczos q90", 1): lambda g: (_upscale_lanczos(g), 90, "L"),
    ("downscale x0.87 q75", 1): lambda g: (_downscale(g), 75, "L"),  # must not read as upscale
    ("downscale x0.87 q95", 1): lambda g: (_downscale(g), 95, "L"),  # nor above its original's
}
CASES = {**ALTERATIONS, **EXTRA}
FULL_CHROMA = "RGB 4:4:4 q95"  # the case written without chroma subsampling


def _write(picture: np.ndarray, quality: int, mode: str, subsampling: int = -1) -> bytes:
    image = Image.fromarray(np.clip(picture, 0, 255).round().astype(np.uint8)).convert(mode)
    out = io.BytesIO()
    image.save(out, "JPEG", quality=quality, subsampling=subsampling)
    return out.getvalue()


def bordered(grey: np.ndarray, seed: int) -> np.ndarray:
    """The film with a constant dark border of its own painted over its edge."""
    rng = np.random.default_rng(seed)
    share, level = rng.uniform(*BORDER_SHARES), int(rng.integers(*BORDER_LEVELS))
    height, width = grey.shape
    dy, dx = max(1, round(height * share)), max(1, round(width * share))
    out = grey.copy()
    out[:dy], out[-dy:], out[:, :dx], out[:, -dx:] = level, level, level, level
    return out


@dataclass
class Film:
    """One original (plain or bordered) and its copies, written in a folder."""

    half: str
    archive: str  # "512 px" or "native"
    bordered: bool
    original: Path
    copies: dict[str, Path] = field(default_factory=dict)


Source = tuple[int, Path, str]  # the film's place in its folder, its file, its half


def make_films(sources: list[Source], folder: Path, one_case_each: bool = False) -> list[Film]:
    """Each source as an original, plain and bordered, and its copies (every case, or one
    per film, cycling through the cases, for the archive's statistics)."""
    films = []
    cases = list(CASES.items())
    for n, source, half in sources:
        with Image.open(source) as image:
            mode, quality = image.mode, jpeg_quality(image)
            grey = np.asarray(image.convert("L"))
        for with_border in (False, True):
            original = folder / f"{n}-{int(with_border)}-original.jpg"
            if with_border:
                write_bytes(original, _write(bordered(grey, n), quality, mode))
            else:
                write_bytes(original, source.read_bytes())
            archive = "native" if source.parent == NATIVE_FILMS else "512 px"
            film = Film(half, archive, with_border, original)
            decoded = np.asarray(Image.open(original).convert("L"))
            chosen = [cases[(2 * n + with_border) % len(cases)]] if one_case_each else cases
            for c, ((name, strength), alter) in enumerate(chosen):
                copy, copy_quality, copy_mode = alter(decoded)
                if (name, strength) in ALTERATIONS:  # never above the original's own
                    copy_quality = min(copy_quality, quality)
                if name == "grey<->RGB":
                    copy_mode = "L" if mode == "RGB" else "RGB"
                elif copy_mode == "L":
                    copy_mode = mode
                path = folder / f"{n}-{int(with_border)}-{c}.jpg"
                full_chroma = 0 if name == FULL_CHROMA else -1
                write_bytes(path, _write(copy, copy_quality, copy_mode, full_chroma))
                film.copies[f"{name} {strength}"] = path
            films.append(film)
    return films
