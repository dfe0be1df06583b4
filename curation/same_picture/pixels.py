"""Pixel-level confirmation that two films are the same picture.

A small hash distance only nominates a pair; two distinct films are never dropped on the
hash alone. The check is built so that it holds at real film sizes and exposures:

- **No sub-pixel misalignment.** Each film is reduced to the comparison grid over exactly its
  own picture area, *then* the small grid of film A is turned into B's orientation. Two films
  of one size in one orientation are decoded at reduced scale (JPEG draft: their 8 x 8 block
  grids coincide, and Pillow's draft box covers a partial last block exactly); a turned or
  rescaled pair is decoded at full size, since its block grids do not coincide when a side
  is not a multiple of 8 (on test films a half turn differs by ~0.14 decoded at full size,
  by ~1.9 decoded at reduced scale).
- **One resampling for a rescaled pair.** Films of two sizes are first brought to the smaller
  one's pixel size (area resampling, as a script downscales), then both to the grid: boxed
  straight from sizes whose ratio to the grid is not whole, a downscale near the grid's size
  differs from its original by up to 2.3 grey levels, by 0.36 at most once resampled alike
  (docs/design.md, "Same picture under another frame").
- **Exposure removed.** Before the difference is measured, A's grey levels are mapped onto
  B's by the best offset, gain and gamma (``b ~ offset + gain * 255 * (a / 255) ** gamma``,
  least squares over a gamma grid), so a re-export at another exposure is the same picture,
  while two different films stay far apart (no tone curve makes one anatomy into another).

The difference is the mean absolute grey-level difference after that correction, at
``COMPARE_SIZE``. ``SAME_PICTURE_LIMIT`` comes from measured distributions and keeps a
quarter of margin from both sides (``tests/same_picture/test_same_picture.py`` on real-size test
films, ``tests/same_picture/test_margins.py`` and ``python -m bench.margins.same_picture`` on the
sample; the figures are in docs/margins.md, "Same picture").
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
import simplejpeg
from PIL import Image, ImageChops, ImageFilter

from curation.hashes.hashing import TRANSPOSES, View

# Mean absolute grey-level difference after exposure correction; margins in docs/margins.md,
# "Same picture". It decides from the cached differences, so the cache's version omits it.
SAME_PICTURE_LIMIT = 0.65
COMPARE_SIZE = (256, 128)  # the comparison grid (width, height)
MAX_ASPECT_CHANGE = 0.05  # films whose aspects differ more are not one picture at two sizes
GRAIN_BANDS = 8
GAMMAS = tuple(float(g) for g in np.geomspace(0.7, 1 / 0.7, 25))  # the exposure fit's grid
FIT_STRIDE = 4  # the exposure is fitted on every fourth cell
CLIPPED = 8  # grey levels from black or white
MIN_INFORMATIVE = 0.1  # share of unclipped cells below which the clipped ones count too
PIXEL_CHECK_VERSION = (
    f"pixels-v7/{COMPARE_SIZE[0]}x{COMPARE_SIZE[1]}-box-turn-after-full-unless-aligned-"
    f"exact-sums-rescaled-to-smaller-aspect{MAX_ASPECT_CHANGE}/offset-gain-gamma"
    f"{GAMMAS[0]:.4f}-{GAMMAS[-1]:.4f}x{len(GAMMAS)}-stride{FIT_STRIDE}-float32-unclipped"
    f"{CLIPPED}-informative{MIN_INFORMATIVE}/box3-mad"
)
GRAIN_VERSION = f"grain-v2/luma-full-scale/{GRAIN_BANDS}bands-box3"

_QUARTER_TURNS = (View.rot90, View.rot270)


@dataclass(frozen=True)
class Exposure:
    """The tone mapping that best turns film A's grey levels into film B's."""

    offset: float
    gain: float
    gamma: float


@dataclass(frozen=True)
class Comparison:
    """How film A (turned by the view) compares with film B."""

    difference: float  # mean |B - exposure(A)| at COMPARE_SIZE over 3 x 3 cells, grey levels
    exposure: Exposure | None  # None when the shapes cannot match
    same_size: bool  # both films have one pixel size in the compared orientation

    @property
    def same_picture(self) -> bool:
        """The pixels agree within ``SAME_PICTURE_LIMIT``."""
        return self.difference <= SAME_PICTURE_LIMIT


def _grid_size(width: int, height: int) -> tuple[int, int]:
    """The comparison grid for a film of this shape: landscape 256 x 128, portrait 128 x 256."""
    return COMPARE_SIZE if width >= height else COMPARE_SIZE[::-1]


def reduced(
    path: Path,
    size: tuple[int, int],
    draft: bool,
    full_scale: int = 1,
    resampled_to: tuple[int, int] | None = None,
) -> np.ndarray:
    """Film at ``path`` as float grey levels on a ``size`` grid, over exactly its picture area;
    decoded at reduced scale (JPEG draft) when ``draft``, else at 1/``full_scale`` (1, full
    size: the only scale with margin on real-size films, ``bench.margins.check_scale``), first
    resampled to ``resampled_to`` (width, height) pixels when given. A process
    remembers its last few films (a film with several copies is compared several times in a
    row), keyed by the file's size and modification time too, so a rewritten file is read
    again. Read-only."""
    facts = path.stat()
    return _reduced(path, facts.st_size, facts.st_mtime_ns, size, draft, full_scale, resampled_to)


@functools.lru_cache(maxsize=64)
def _reduced(
    path: Path,
    _bytes: int,
    _mtime_ns: int,
    size: tuple[int, int],
    draft: bool,
    full_scale: int,
    resampled_to: tuple[int, int] | None,
) -> np.ndarray:
    data = path.read_bytes()
    if draft:
        height, width = simplejpeg.decode_jpeg_header(data)[:2]
        cells = scaled_cells(data, size, draft_scale((width, height), (size[0] * 2, size[1] * 2)))
    elif resampled_to is not None:
        grey = simplejpeg.decode_jpeg(data, colorspace="GRAY")[..., 0]
        if grey.shape[::-1] != resampled_to:
            grey = cv2.resize(grey, resampled_to, interpolation=cv2.INTER_AREA)
        cells = box_cells(grey, size)
    else:
        cells = unaligned_cells(data, size, full_scale)
    cells.flags.writeable = False
    return cells


def unaligned_cells(data: bytes, size: tuple[int, int], scale: int = 1) -> np.ndarray:
    """The cells of the JPEG ``data`` as the check takes them for a pair whose block grids do
    not coincide: decoded at full size, straight to grey (luma) with simplejpeg (which the
    hash step's strict decode has already read every film with: the same pixels as Pillow's
    grey decode, sooner), and summed exactly (``box_cells``); at 1/``scale`` when measuring
    what a cheaper decode would do (``bench.margins.check_scale``)."""
    if scale != 1:
        return scaled_cells(data, size, scale)
    return box_cells(simplejpeg.decode_jpeg(data, colorspace="GRAY")[..., 0], size)


def scaled_cells(data: bytes, size: tuple[int, int], scale: int) -> np.ndarray:
    """The mean grey level of each cell of a ``size`` grid over exactly the picture of the
    JPEG ``data``, decoded straight to grey at 1/``scale`` by simplejpeg (libjpeg-turbo's
    scaled pixels, as Pillow's draft decodes them): Pillow's BOX filter with the decoded area
    as its box covers a partial last block exactly."""
    height, width = simplejpeg.decode_jpeg_header(data)[:2]
    smallest = {"min_width": -(-width // scale), "min_height": -(-height // scale)}
    grey = simplejpeg.decode_jpeg(data, colorspace="GRAY", min_factor=scale, **smallest)
    image = Image.fromarray(grey[..., 0]).convert("F")
    box = (0, 0, width / scale, height / scale)
    return np.asarray(image.resize(size, Image.Resampling.BOX, box=box), np.float64)


def draft_scale(size: tuple[int, int], request: tuple[int, int]) -> int:
    """The reduction (1, 2, 4 or 8) that Pillow's ``Image.draft(mode, request)`` decodes a JPEG
    of ``size`` at: the largest that keeps both sides at least the request. The check decodes
    at that scale with simplejpeg (the same libjpeg-turbo scaled pixels, ``tests`` compare
    them) in about three quarters of the time Pillow's file reading and decoding take."""
    fits = min(size[0] // request[0], size[1] // request[1])
    return next(scale for scale in (8, 4, 2, 1) if fits >= scale or scale == 1)


@functools.lru_cache(maxsize=4096)
def _box_edges(pixels: int, cells: int) -> np.ndarray | None:
    """Where each cell of Pillow's BOX resize starts (and the last one ends) along one side:
    the pixels whose weight Pillow's own arithmetic makes 1 (``precompute_coeffs`` with the
    box filter, redone in the same double-precision steps). None when those pixels do not
    tile the side (an enlarged side), so that the caller lets Pillow resize."""
    scale = pixels / cells
    if scale < 1.0:
        return None
    centre = (np.arange(cells) + 0.5) * scale
    low = np.maximum((centre - scale * 0.5 + 0.5).astype(np.int64), 0)
    high = np.minimum((centre + scale * 0.5 + 0.5).astype(np.int64), pixels)
    span = int(np.ceil(scale)) + 2
    offsets = low[:, None] + np.arange(span)[None, :]
    weights = ((offsets - centre[:, None]) + 0.5) * (1.0 / scale)
    inside = (weights > -0.5) & (weights <= 0.5) & (offsets < high[:, None])
    starts = low + np.argmax(inside, axis=1)
    ends = low + span - np.argmax(inside[:, ::-1], axis=1)
    runs = inside.any(axis=1) & (ends - starts == inside.sum(axis=1))
    tiled = starts[0] == 0 and ends[-1] == pixels and np.array_equal(starts[1:], ends[:-1])
    return np.append(starts, ends[-1]) if runs.all() and tiled else None


def box_cells(grey: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """The mean grey level of each cell of a ``size`` (width, height) grid over a whole
    decoded film: Pillow's BOX resize, as exact integer sums (rows of a band, then the
    band's columns). Hand-written because Pillow resizes only a float image exactly, and
    converting to one and resizing it costs more than the rest of a turned pair's comparison;
    the sums are cheaper and differ from Pillow's float32 cells by its rounding only (~1e-5)."""
    width, height = size
    columns, rows = _box_edges(grey.shape[1], width), _box_edges(grey.shape[0], height)
    if columns is None or rows is None:
        resized = Image.fromarray(grey).convert("F").resize(size, Image.Resampling.BOX)
        return np.asarray(resized, np.float64)
    band_rows = np.diff(rows)
    band_type = np.uint16 if int(band_rows.max()) * 255 <= np.iinfo(np.uint16).max else np.uint32
    bands = np.empty((height, grey.shape[1]), band_type)
    for band in range(height):
        np.add.reduce(grey[rows[band] : rows[band + 1]], axis=0, dtype=band_type, out=bands[band])
    sums = np.add.reduceat(bands, columns[:-1], axis=1, dtype=np.int64)
    means: np.ndarray = sums / np.outer(band_rows, np.diff(columns))
    return means


def fit_exposure(a: np.ndarray, b: np.ndarray) -> tuple[Exposure, float]:
    """The offset, gain and gamma mapping ``a`` onto ``b`` best, and the difference left
    after it. Least squares in closed form for every gamma of a fixed grid at once, on every
    fourth cell (the fit needs no more; deterministic), then the residual on all cells.

    Cells clipped to black or white in either film (``CLIPPED``) say nothing about the
    picture: a darker re-export clips the dark corners, so they are left out of the fit and
    of the difference (unless nearly all cells are clipped)."""
    informative = (a > CLIPPED) & (a < 255 - CLIPPED) & (b > CLIPPED) & (b < 255 - CLIPPED)
    if informative.mean() < MIN_INFORMATIVE:
        informative = np.ones_like(informative)
    base = np.clip(a, 0, 255) / 255.0
    target = b[informative][::FIT_STRIDE]
    # The 25 tone curves as exp(gamma * log a), in single precision: the costliest line of
    # the check, 3x faster so, and off by ~1e-5 grey levels, which moves no fit.
    logs = np.log(np.maximum(base[informative][::FIT_STRIDE], 1e-6)).astype(np.float32)
    curves = 255.0 * np.exp(np.asarray(GAMMAS, np.float32)[:, None] * logs[None, :]).astype(float)
    curve_mean = curves.mean(axis=1)
    centred = curves - curve_mean[:, None]
    target_centred = target - target.mean()
    variance = np.maximum((centred**2).mean(axis=1), 1e-12)
    covariance = centred @ target_centred / target.size
    left = target_centred.var() - covariance**2 / variance  # mean squared residual
    best = int(np.argmin(left))
    gain = float(covariance[best] / variance[best])
    offset = float(target.mean() - gain * curve_mean[best])
    exposure = Exposure(offset, gain, GAMMAS[best])
    mapped = exposure.offset + exposure.gain * 255.0 * base**exposure.gamma
    return exposure, smoothed_difference(np.where(informative, b - mapped, 0.0), informative)


def smoothed_difference(residual: np.ndarray, informative: np.ndarray) -> float:
    """Mean absolute value, over the informative cells, of the residual averaged over 3 x 3
    cells. Grain and added noise are independent from cell to cell and average out; a moved
    or different picture does not (on the sample this doubled the gap between noised copies
    and the closest visits)."""
    padded = np.pad(residual, 1, mode="edge")
    height, width = residual.shape
    shifted = (padded[dy : dy + height, dx : dx + width] for dy in range(3) for dx in range(3))
    total = sum(shifted, start=np.zeros_like(residual))
    return float(np.mean(np.abs(total[informative] / 9.0)))


def grain(image: Image.Image) -> float:
    """Mean absolute difference from a 3 x 3 box blur over ``GRAIN_BANDS`` full-width bands,
    each 1/32 of the height, spread evenly down the film: a quarter of its pixels, which
    estimates the whole film's figure to about 0.01 grey levels at a seventh of the cost.
    Added noise raises it, re-encoding barely moves it."""
    half = max(image.height // (8 * GRAIN_BANDS), 1)
    values = []
    for k in range(GRAIN_BANDS):
        centre = (2 * k + 1) * image.height // (2 * GRAIN_BANDS)
        band = image.crop((0, max(centre - half, 0), image.width, centre + half))
        blurred = band.filter(ImageFilter.BoxBlur(1))
        histogram = ImageChops.difference(band, blurred).histogram()
        values.append(
            sum(level * count for level, count in enumerate(histogram)) / (band.width * band.height)
        )
    return sum(values) / len(values)


def film_grain(path: Path | str) -> float:
    """``grain`` of the film at ``path``, decoded at full scale straight to grey (luma)."""
    with Image.open(path) as image:
        image.draft("L", image.size)
        return grain(image.convert("L"))


def compare(
    path_a: Path,
    path_b: Path,
    view: View = View.identity,
    sizes: tuple[tuple[int, int], tuple[int, int]] | None = None,
    full_scale: int = 1,
) -> Comparison:
    """Compare film A turned by ``view`` with film B; ``sizes``: their width and height when
    known (the index read them), else read from the files; ``full_scale``: see ``reduced``."""
    if sizes is None:
        with Image.open(path_a) as ia, Image.open(path_b) as ib:
            sizes = (ia.size, ib.size)
    size_a, size_b = sizes
    turned_a = size_a[::-1] if view in _QUARTER_TURNS else size_a
    aspect_a, aspect_b = turned_a[0] / turned_a[1], size_b[0] / size_b[1]
    if abs(aspect_a - aspect_b) / aspect_b > MAX_ASPECT_CHANGE:
        return Comparison(float("inf"), None, same_size=False)
    grid_b = _grid_size(*size_b)
    grid_a = grid_b[::-1] if view in _QUARTER_TURNS else grid_b
    # Reduced-scale decoding averages whole 8 x 8 blocks; only two films of one size in one
    # orientation share their block grid, so every other pair is decoded at full size.
    same_size = turned_a == size_b
    draft = same_size and view is View.identity
    smaller = (min(turned_a[0], size_b[0]), min(turned_a[1], size_b[1]))
    common_b = None if same_size or full_scale != 1 else smaller
    common_a = (common_b[1], common_b[0]) if common_b and view in _QUARTER_TURNS else common_b
    cells_a = reduced(path_a, grid_a, draft, full_scale, common_a)
    if view in TRANSPOSES:
        cells_a = np.asarray(
            Image.fromarray(cells_a.astype(np.float32)).transpose(TRANSPOSES[view])
        )
    cells_b = reduced(path_b, grid_b, draft, full_scale, common_b)
    exposure, difference = fit_exposure(cells_a, cells_b)
    return Comparison(difference, exposure, same_size)
