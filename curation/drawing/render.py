"""Rendering at full size (runs in worker processes): upscale, grain, transform, encode."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from PIL import Image

import curation.drawing.encoders as encoders
from curation.drawing.reframe import (
    REFRAMINGS,
    reframed,
    with_drawn_lesion,
    with_own_border,
)
from curation.drawing.revisits import SHARED_LABEL_WIDTH, burned_in, same_frame_revisit

GRAIN_SIGMA = 1.5
_TILE_SHAPE = (1500, 2900)


@dataclass(frozen=True)
class Exposure:
    """A re-filing's other exposure of the same radiograph: ``255 * ((v * gain + offset) /
    255) ** gamma`` per grey value ``v``, clipped to 0-255."""

    offset: float = 0.0
    gain: float = 1.0
    gamma: float = 1.0


@dataclass(frozen=True)
class Output:
    """One file to render from a family's shot: where it goes and how it is made.

    ``encoding`` is ``system`` or ``script`` (the two signatures) or a planted bad encoding
    (``plain``, ``png16``, ``truncated``); ``transform`` is ``none``, ``noise``, ``scaling``,
    ``mirror`` or ``rotation`` with its ``param`` (sigma, factor or angle in degrees), a
    reframing (``curation.drawing.reframe``), ``negative``, ``drawn lesion``, ``own border``
    (its width as ``param``), ``revisit`` or ``burned-in label`` (their seed as ``param``).
    """

    arcname: str
    shot: int
    mode: str = "L"
    quality: int = 90
    transform: str = "none"
    param: float = 0.0
    noise_offset: tuple[int, int] = (0, 0)
    encoding: str = encoders.SYSTEM
    exposure: Exposure = Exposure()
    copy_of: str = ""


@dataclass(frozen=True)
class RenderJob:
    """Everything a worker needs to render one family's files."""

    lows: tuple[np.ndarray, ...]
    grain_offsets: tuple[tuple[int, int], ...]
    size: tuple[int, int]
    outputs: tuple[Output, ...]
    seed: int


@lru_cache(maxsize=2)
def _noise_tile(seed: int) -> np.ndarray:
    """One Gaussian field per seed; films take crops of it, which is cheaper than fresh draws."""
    return np.random.default_rng([seed, 7]).standard_normal(_TILE_SHAPE, dtype=np.float32)


def _with_noise(film: np.ndarray, seed: int, offset: tuple[int, int], sigma: float) -> np.ndarray:
    tile = _noise_tile(seed)
    oy, ox = offset
    noise = tile[oy : oy + film.shape[0], ox : ox + film.shape[1]]
    return np.clip(film + sigma * noise + 0.5, 0, 255).astype(np.uint8)


def _exposed(film: np.ndarray, exposure: Exposure) -> np.ndarray:
    if exposure == Exposure():
        return film
    values = np.arange(256, dtype=np.float64)
    scaled = np.clip((values * exposure.gain + exposure.offset) / 255.0, 0.0, 1.0)
    lookup = np.clip(255.0 * scaled**exposure.gamma + 0.5, 0, 255).astype(np.uint8)
    exposed: np.ndarray = lookup[film]
    return exposed


def _transformed(film: np.ndarray, output: Output, seed: int) -> np.ndarray:
    if output.transform == "mirror":
        return np.ascontiguousarray(film[:, ::-1])
    if output.transform == "rotation":
        return np.ascontiguousarray(np.rot90(film, k=round(output.param) // 90))
    if output.transform == "noise":
        return _with_noise(film, seed, output.noise_offset, output.param)
    if output.transform == "negative":
        return np.ascontiguousarray(255 - film)
    if output.transform == "drawn lesion":
        return with_drawn_lesion(film)
    if output.transform == "own border":
        return with_own_border(film, output.param)
    if output.transform == "revisit":
        return same_frame_revisit(film, round(output.param))
    if output.transform == "burned-in label":
        return burned_in(film, "label", SHARED_LABEL_WIDTH, round(output.param))
    if output.transform in REFRAMINGS:  # cropped, padded, tilted, re-toned (CLAHE)
        return reframed(film, output.transform, output.param)
    if output.transform == "scaling":
        height, width = film.shape
        size = (round(width * output.param), round(height * output.param))
        return np.asarray(Image.fromarray(film).resize(size, Image.Resampling.BILINEAR))
    return film


def _encode(film: np.ndarray, output: Output) -> bytes:
    if output.encoding == encoders.SYSTEM:
        return encoders.system_jpeg(film, output.mode, output.quality)
    if output.encoding == encoders.SCRIPT:
        return encoders.script_jpeg(film)
    if output.encoding == "png16":
        return encoders.png16(film)
    data = encoders.plain_jpeg(film, output.mode, output.quality)
    return encoders.truncated(data) if output.encoding == "truncated" else data


def render(job: RenderJob) -> dict[str, bytes]:
    """All files of one family, keyed by archive name."""
    films = [
        _with_noise(
            np.asarray(Image.fromarray(low).resize(job.size, Image.Resampling.BICUBIC)),
            job.seed,
            offset,
            GRAIN_SIGMA,
        )
        for low, offset in zip(job.lows, job.grain_offsets, strict=True)
    ]
    files: dict[str, bytes] = {}
    for output in job.outputs:
        if output.copy_of:
            files[output.arcname] = files[output.copy_of]
            continue
        film = _exposed(films[output.shot], output.exposure)
        files[output.arcname] = _encode(_transformed(film, output, job.seed), output)
    return files
